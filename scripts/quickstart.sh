#!/usr/bin/env bash
# Installs what the agent needs, builds only what it runs (vigil, its BPF
# objects, the shipped plugins), and starts live monitoring with the bundled
# rules. Alerts are printed on stdout as JSON lines; stop with Ctrl-C.
# scripts/test.sh installs and builds the rest (tests, benchmarks, fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh agent
scripts/build.sh --agent
exec ./build/vigil run -r rules/ "$@"
