#!/usr/bin/env bash
# Instructions per evaluated event for each row of rules_count (see
# rules_count.cpp), under callgrind. Run from the repository root:
#   tests/bench/rules_count.sh [build/bench/rules_count] [out-dir] [set...]
# Prints "row instructions/event"; the callgrind dumps stay in out-dir
# (callgrind_annotate <dump> shows where a row's instructions go).
set -euo pipefail
bin=${1:-build/bench/rules_count}
out=${2:-$(mktemp -d)}
shift 2 2>/dev/null || shift $#
mkdir -p "$out"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.out" \
  "$bin" "$@" >"$out/rows.txt" 2>"$out/valgrind.log"
# Dumps are numbered in row order (cg.out.1, cg.out.2, ...); each holds the
# row's name ("desc: Trigger: Client Request: <row>") and its totals.
n=0
while read -r row events _; do
  n=$((n + 1))
  events=${events#events=}
  dump="$out/cg.out.$n"
  grep -q "Client Request: $row\$" "$dump" || { echo "dump $dump is not row $row" >&2; exit 1; }
  ir=$(awk '/^totals:/ {print $2}' "$dump")
  awk -v r="$row" -v ir="$ir" -v n="$events" 'BEGIN { printf "%-28s %8.0f\n", r, ir / n }'
done <"$out/rows.txt"
echo "dumps: $out" >&2
