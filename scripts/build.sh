#!/usr/bin/env bash
# Configures and builds vigil into ./build (Release with debug info), or into
# the directory named by VIGIL_BUILD_DIR. Uses ccache when it is installed, so
# rebuilds in a second checkout (a git worktree) reuse the first one's objects.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
dir=${VIGIL_BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null; then
  cc="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
  launcher=("-DCMAKE_C_COMPILER_LAUNCHER=$cc" "-DCMAKE_CXX_COMPILER_LAUNCHER=$cc")
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@"
cmake --build "$dir" -j "$jobs"
