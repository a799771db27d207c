# Rule compilation: load_rules_text over one rule whose condition grows (and
# chains, or chains, != chains), to show how compile time scales with it.
add_executable(compile_bench ${CMAKE_CURRENT_SOURCE_DIR}/compile_bench.cpp)
target_link_libraries(compile_bench PRIVATE vigil::rules benchmark::benchmark vigil::headers)
set_target_properties(compile_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
