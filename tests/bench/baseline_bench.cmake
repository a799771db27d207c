# Baselines: Pipeline::process over a container event mix with the bundled and
# baseline rules, baselines off (the default), on and learning, on and locked.
add_executable(baseline_bench ${CMAKE_CURRENT_SOURCE_DIR}/baseline_bench.cpp)
target_link_libraries(baseline_bench PRIVATE vigil::pipeline vigil::rules vigil::state vigil::baseline
                      benchmark::benchmark vigil::headers)
set_target_properties(baseline_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
