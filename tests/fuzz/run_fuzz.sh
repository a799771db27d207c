#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time over a scratch copy of its seed
# corpus (the checked-in corpus is never modified).
#   run_fuzz.sh BINARY CORPUS_DIR|"" SECONDS
# Exit 77 (ctest: skipped) when the fuzz build is absent.
set -uo pipefail
bin=$1 corpus=$2 secs=$3
if [ ! -x "$bin" ]; then
  echo "SKIPPED: $bin not built; run scripts/build-fuzz.sh (needs clang) first"
  exit 77
fi
work=$(mktemp -d /tmp/vigil-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
if [ -n "$corpus" ] && [ -d "$corpus" ]; then
  cp -r "$corpus"/. "$work/corpus/" 2>/dev/null || true
fi
"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" 2>&1 | tail -n 25
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "FUZZ FAILURE ($rc); crashing inputs:"
  for f in "$work"/artifacts/*; do
    [ -f "$f" ] && { echo "== $f"; base64 -w0 "$f" | head -c 4096; echo; }
  done
fi
exit "$rc"
