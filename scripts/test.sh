#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, then runs unit tests,
# integration tests (real BPF programs; need root, skipped with a message
# otherwise), the bundled rule tests and the time-boxed fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
  scripts/install-deps.sh
fi
# Unity batches for the libraries, as the Quickstart builds them, so CI
# compiles exactly what a new user's first build compiles.
scripts/build.sh -DVIGIL_BUILD_TESTS=ON -DVIGIL_BUILD_BENCH=ON -DVIGIL_UNITY_BUILD=ON
if [ -x scripts/build-fuzz.sh ]; then
  scripts/build-fuzz.sh
fi
cd build
ctest --output-on-failure --timeout 900 -j 2 -LE 'integration|fuzz'
ctest --output-on-failure --timeout 900 -L integration
ctest --output-on-failure --timeout 900 -j 2 -L fuzz
