# Third-party dependencies, all from Debian 12 packages (see scripts/install-deps.sh).
# Each is exposed as an imported target so components link by name.

pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf>=1.0)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LIBCURL REQUIRED IMPORTED_TARGET libcurl)
# libcpp-httplib-dev: the webserver of /metrics, /healthz and /readyz (a
# maintained HTTP/1.1 server, so vigil parses no HTTP of its own).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(CLI11 CONFIG REQUIRED)  # libcli11-dev: the command line of every subcommand

if(VIGIL_WITH_KAFKA)
  pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
endif()

if(VIGIL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(VIGIL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# yaml-cpp's exported target name changed between releases.
if(TARGET yaml-cpp::yaml-cpp)
  set(VIGIL_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(VIGIL_YAML_TARGET yaml-cpp)
endif()
