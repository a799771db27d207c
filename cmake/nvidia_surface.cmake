# Turns engine/event/nvidia_surface.tsv into the C++ table nvidia.cpp includes
# (one std::array per kind). Run by the build (engine/event/CMakeLists.txt):
#   cmake -DIN=<tsv> -DOUT=<inc> -P cmake/nvidia_surface.cmake
# A malformed row stops the build with its file and line. Sorting and
# uniqueness are checked by nvidia.cpp's static_asserts.
cmake_minimum_required(VERSION 3.20)

set(kinds escape uvm class control)
set(surfaces workload graphics video rdma fabric profiler debugger mig management internal other)

file(READ "${IN}" text)
# A ';' (in a source note) would split a CMake list: no column but the last
# may hold one, and that one is not emitted.
string(REPLACE ";" "," text "${text}")
string(REPLACE "\n" ";" lines "${text}")

foreach(kind IN LISTS kinds)
  set(rows_${kind} "")
endforeach()

set(lineno 0)
foreach(line IN LISTS lines)
  math(EXPR lineno "${lineno} + 1")
  if(line STREQUAL "" OR line MATCHES "^#")
    continue()
  endif()
  string(REPLACE "\t" ";" cols "${line}")
  list(LENGTH cols n)
  if(NOT n EQUAL 6)
    message(FATAL_ERROR "${IN}:${lineno}: 6 tab-separated columns expected, found ${n}")
  endif()
  list(GET cols 0 kind)
  list(GET cols 1 number)
  list(GET cols 2 name)
  list(GET cols 3 branches)
  list(GET cols 4 surface)
  list(GET cols 5 source)
  if(NOT kind IN_LIST kinds)
    message(FATAL_ERROR "${IN}:${lineno}: kind '${kind}' is not one of: ${kinds}")
  endif()
  if(NOT number MATCHES "^(0x[0-9A-Fa-f]+|[0-9]+)$")
    message(FATAL_ERROR "${IN}:${lineno}: number '${number}' is not hex (0x..) or decimal")
  endif()
  if(NOT name MATCHES "^[A-Za-z][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${IN}:${lineno}: name '${name}' is not an identifier")
  endif()
  if(NOT branches MATCHES "^[0-9]+([-,][0-9]+)*$")
    message(FATAL_ERROR "${IN}:${lineno}: branches '${branches}' is not a range (535-595) or a list (535,550)")
  endif()
  if(NOT surface IN_LIST surfaces)
    message(FATAL_ERROR "${IN}:${lineno}: surface '${surface}' is not one of: ${surfaces}")
  endif()
  if(source STREQUAL "")
    message(FATAL_ERROR "${IN}:${lineno}: the row names no source")
  endif()
  string(APPEND rows_${kind} "    {${number}u, \"${name}\", \"${branches}\", \"${surface}\"},\n")
endforeach()

set(out "// Generated from engine/event/nvidia_surface.tsv by cmake/nvidia_surface.cmake.\n// Edit the .tsv, not this file.\n")
foreach(kind IN LISTS kinds)
  if(rows_${kind} STREQUAL "")
    message(FATAL_ERROR "${IN}: no ${kind} rows")
  endif()
  string(APPEND out "constexpr auto kSurface_${kind} = std::to_array<SurfaceRow>({\n${rows_${kind}}});\n")
endforeach()

# Rewritten only when it changes, so an edit of a comment rebuilds nothing.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL out)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${out}")
