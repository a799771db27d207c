# Rule engine: the evaluator alone over a synthetic event mix, with the bundled
# rules, bundled + falco_rules.yaml, and bundled + all three Falco stock files.
add_executable(rules_bench ${CMAKE_CURRENT_SOURCE_DIR}/rules_bench.cpp)
target_link_libraries(rules_bench PRIVATE vigil::rules benchmark::benchmark vigil::headers)
set_target_properties(rules_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
# The benchmark replaces the global operator new (malloc) and delete (free)
# to count allocations; GCC 12 takes the pair for a mismatch inside the
# library code it inlines them into.
target_compile_options(rules_bench PRIVATE -Wno-mismatched-new-delete)
