# Outputs: formatter and sink throughput, publish-to-delivery latency.
add_executable(outputs_bench ${CMAKE_CURRENT_SOURCE_DIR}/outputs_bench.cpp)
target_link_libraries(outputs_bench PRIVATE vigil::outputs benchmark::benchmark vigil::headers
                      OpenSSL::SSL OpenSSL::Crypto)
set_target_properties(outputs_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
