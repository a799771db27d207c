#!/usr/bin/env bash
# Configures and builds vigil into ./build (Release with debug info), or into
# the directory named by VIGIL_BUILD_DIR. Uses ccache when it is installed, so
# rebuilds in a second checkout (a git worktree) reuse the first one's objects.
# Warnings are errors: this is the supported toolchain (Debian 12's gcc), and
# CI builds through this script.
#
#   scripts/build.sh [CMAKE_ARGS...]          everything: agent, plugins, tests, benchmarks
#   scripts/build.sh --agent [CMAKE_ARGS...]  only what `vigil run` runs: the agent, its BPF
#                                             objects and the shipped plugins, -O2 as the
#                                             default build but without debug information
#                                             (a third less compile time) and as unity
#                                             batches (VIGIL_UNITY_BUILD; the Quickstart)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
dir=${VIGIL_BUILD_DIR:-build}
targets=()
build_type=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--agent" ]; then
  shift
  targets=(--target vigil vigil_nvml vigil_cuda vigil_example)
  # -O2 like RelWithDebInfo, the build every benchmark measures (CMake's
  # Release is -O3, where GCC 12 reports false -Wrestrict errors in libstdc++).
  build_type=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
    -DVIGIL_UNITY_BUILD=ON)
fi
launcher=()
if command -v ccache >/dev/null; then
  cc="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
  launcher=("-DCMAKE_C_COMPILER_LAUNCHER=$cc" "-DCMAKE_CXX_COMPILER_LAUNCHER=$cc")
fi
# Tests and benchmarks are configured only where their libraries are
# installed (scripts/install-deps.sh all), so the agent builds without them.
have_gtest=OFF
have_bench=OFF
[ -f /usr/include/gtest/gtest.h ] && have_gtest=ON
[ -f /usr/include/benchmark/benchmark.h ] && have_bench=ON
cmake -S . -B "$dir" -G Ninja "${build_type[@]}" -DVIGIL_WARNINGS_AS_ERRORS=ON \
  -DVIGIL_BUILD_TESTS="$have_gtest" -DVIGIL_BUILD_BENCH="$have_bench" "${launcher[@]}" "$@"
cmake --build "$dir" -j "$jobs" "${targets[@]}"
