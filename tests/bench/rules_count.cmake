# Rule engine, instructions per event: the rules_bench mix under callgrind
# (rules_count.sh), one dump per rule set and event type.
add_executable(rules_count ${CMAKE_CURRENT_SOURCE_DIR}/rules_count.cpp)
target_link_libraries(rules_count PRIVATE vigil::rules vigil::headers)
set_target_properties(rules_count PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
