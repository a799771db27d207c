# The exec program's build-id read (exec_buildid_bench.cpp): vg_sched_exec's
# run time with no exec rule, a SHA-256 rule and a build-id rule in a pod.
# Its stand-in pod cgroup comes from the test support library.
if(VIGIL_BUILD_TESTS)
  add_executable(exec_buildid_bench ${CMAKE_CURRENT_SOURCE_DIR}/exec_buildid_bench.cpp)
  target_link_libraries(exec_buildid_bench PRIVATE vigil::sensor vigil::bpf_shared vigil::test_support PkgConfig::LIBBPF)
  set_target_properties(exec_buildid_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
endif()
