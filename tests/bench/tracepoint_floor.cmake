# The floor under vigil's syscall probes (tracepoint_floor.sh): empty BPF
# programs attached where vigil attaches its own.
vigil_bpf_skeleton(NAME tp_floor SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/tp_floor.bpf.c)
add_executable(tracepoint_floor ${CMAKE_CURRENT_SOURCE_DIR}/tracepoint_floor.cpp)
target_link_libraries(tracepoint_floor PRIVATE vigil::tp_floor_skel PkgConfig::LIBBPF)
set_target_properties(tracepoint_floor PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
