#!/usr/bin/env bash
# Installs what is missing, builds, and starts live monitoring with the bundled
# rules. Alerts are printed on stdout as JSON lines; stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec ./build/vigil run -r rules/ "$@"
