#!/usr/bin/env bash
# What prevention costs (docs/prevention.md, docs/performance.md): the same
# syscall-mix phases under `vigil run` with the bundled rules in
# prevention.mode off and in enforce (their deny rules then put the
# cgroup/dev program and the connect/sendmsg programs' judgement to work),
# alternating, and the ratio of the workload's CPU time (enforce / off).
#
#   sudo tests/bench/prevention_bench.sh [ROUNDS] [ITERATIONS]
#
# Phases: devopen (open and close of a character device: the cgroup/dev
# program runs for each), connect, socketclose (sock_create). The mix runs on
# the host, so the programs judge a cgroup without an entry (the case of
# every process outside a container, and the cost every call pays); a
# container's own refusals are in the prevention scenario test. Needs root
# and a built tree (scripts/build.sh). Prints a Markdown table.
set -euo pipefail
ROUNDS=${1:-5}
ITER=${2:-400000}
BENCH=prevention_bench
source "$(dirname "$0")/bench_lib.sh"   # VIGIL=path/to/vigil: another build
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run_mix() { # round mode phase [open path]
  "$MIX" --iterations "$ITER" --nvidia-node "$work/nvidia0" --open-path "$4" --phase "$3" |
    sed "s/^/round=$1 mode=$2 /" >> "$work/results.txt"
}
one() { # round mode phase name open_path
  RULES="-r rules/ -o prevention.mode=$2" start_vigil
  run_mix "$1" "$2" "$3" "$5"
  stop_vigil
  sed -i "\$s/phase=$3/phase=$4/" "$work/results.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  for mode in off enforce; do
    one "$r" "$mode" openclose devopen /dev/zero
    one "$r" "$mode" connect connect /etc/hostname
    one "$r" "$mode" socketclose socketclose /etc/hostname
  done
done

python3 - "$work" <<'PY'
import collections, statistics, sys
work = sys.argv[1]
vals = collections.defaultdict(dict)
for line in open(f"{work}/results.txt"):
    kv = dict(p.split("=", 1) for p in line.split())
    vals[(kv["phase"], kv["mode"])][int(kv["round"])] = float(kv["cpu_ns_per_op"])
print("| phase | prevention off (CPU ns/op) | enforce (CPU ns/op) | ratio (median of rounds) | rounds (min–max) |")
print("|---|---|---|---|---|")
for phase in ["devopen", "connect", "socketclose"]:
    off, on = vals.get((phase, "off")), vals.get((phase, "enforce"))
    if not off or not on:
        continue
    ratios = [on[r] / off[r] for r in sorted(on) if r in off]
    print(f"| {phase} | {statistics.median(off.values()):.0f} | {statistics.median(on.values()):.0f} | "
          f"×{statistics.median(ratios):.3f} | ×{min(ratios):.3f}–×{max(ratios):.3f} |")
PY
