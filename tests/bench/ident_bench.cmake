# Executable identity (engine/ident): the per-exec cost of the check, warm
# (the inode known) and cold (a file hashed), and the start-up search.
add_executable(ident_bench ${CMAKE_CURRENT_SOURCE_DIR}/ident_bench.cpp)
target_link_libraries(ident_bench PRIVATE vigil::ident benchmark::benchmark vigil::headers)
set_target_properties(ident_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
