#!/usr/bin/env bash
# Builds the libFuzzer targets (clang + AddressSanitizer, coverage on the
# libraries too) into ./build-fuzz/fuzz/. The main build's ctest runs them
# (label `fuzz`, 60 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "build-fuzz: clang++ not found (scripts/install-deps.sh)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVIGIL_BUILD_FUZZ=ON -DVIGIL_BUILD_TESTS=ON -DVIGIL_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address"
cmake --build build-fuzz -j "$(nproc)" --target fuzz_all
