#!/usr/bin/env bash
# Two builds of vigil side by side on the held-out engine benchmarks: the rule
# engine alone (rules_bench: bundled, + falco_rules.yaml, + all three stock
# files) and replay end to end (vigil replay of a synthetic capture with the
# bundled rules). The builds alternate round by round, so a noisy minute hits
# both; each figure is the median over rounds and the ratio is B / A.
#
#   tests/bench/compare_builds.sh BUILD_A BUILD_B [ROUNDS] [CAPTURE]
#
# BUILD_* are build directories holding vigil and bench/rules_bench (e.g. one
# made from an older commit in a git worktree). CAPTURE defaults to a 2 M-event
# capture made with BUILD_B's capture_gen on first use.
set -euo pipefail
cd "$(dirname "$0")/../.."
a=${1:?build A}; b=${2:?build B}; rounds=${3:-5}
cap=${4:-/tmp/compare_builds.vcap}
for d in "$a" "$b"; do
  [ -x "$d/vigil" ] && [ -x "$d/bench/rules_bench" ] || { echo "compare_builds: $d lacks vigil or bench/rules_bench" >&2; exit 1; }
done
if [ ! -s "$cap" ]; then
  "$b/tests/engine/capture/capture_gen" "$cap" 2000000 > /dev/null
fi
out=$(mktemp -d /tmp/compare_builds.XXXXXX)
trap 'rm -rf "$out"' EXIT
filter='BM_Bundled_Mix$|BM_BundledFalco_Mix$|BM_BundledAllStock_Mix$'
cpu=1
for ((r = 1; r <= rounds; r++)); do
  for side in A B; do
    d=$a; [ "$side" = B ] && d=$b
    taskset -c $cpu "$d/bench/rules_bench" --benchmark_filter="$filter" --benchmark_min_time=0.5 \
      --benchmark_format=csv 2>/dev/null | awk -F, -v s=$side '/^"BM_/ {gsub(/"/, "", $1); print s, $1, $4}' >> "$out/rules"
    /usr/bin/time -f "%U %e" -o "$out/t" taskset -c $cpu "$d/vigil" replay "$cap" -r rules/vigil_rules.yaml > /dev/null 2>&1
    read -r user wall < "$out/t"
    echo "$side replay $wall" >> "$out/rules"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
printf '%-24s %14s %14s %8s\n' benchmark "A" "B" "B/A"
for name in BM_Bundled_Mix BM_BundledFalco_Mix BM_BundledAllStock_Mix replay; do
  ma=$(awk -v n=$name '$1=="A" && $2==n {print $3}' "$out/rules" | median)
  mb=$(awk -v n=$name '$1=="B" && $2==n {print $3}' "$out/rules" | median)
  unit="ns/event"; [ $name = replay ] && unit="s wall"
  printf '%-24s %10.2f %-3s %10.2f %-3s %8.3f   (%s, median of %d rounds)\n' "$name" "$ma" "" "$mb" "" \
    "$(echo "$mb / $ma" | bc -l)" "$unit" "$rounds"
done
