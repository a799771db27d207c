#!/usr/bin/env bash
# The floor under vigil's syscall probes: what a workload pays for the kernel
# hooks alone, with programs that do nothing attached to the same syscall
# tracepoints vigil attaches, next to what it pays with vigil. Any sensor
# built on syscall tracepoints pays the floor (the syscall slow path and the
# tracepoint's dispatch); the difference between the two columns is vigil's
# programs' own work.
#
#   sudo tests/bench/tracepoint_floor.sh [ROUNDS] [ITERATIONS]
#   sudo RULES="-r rules/ -r ../shared/falco-rules/falco_rules.yaml" tests/bench/tracepoint_floor.sh 7
#   sudo RAW=1 tests/bench/tracepoint_floor.sh      # also the raw sys_exit design
#   sudo READ=1 PHASES=ioctl tests/bench/tracepoint_floor.sh   # and the RM control read
#
# READ=1 adds the floor plus the user reads vigil cannot skip with these
# rules: an RM control's command, as vigil reads it on every NVIDIA ioctl (the
# saved registers, one 4-byte user read), and, where a rule compares an
# open's path as given (`vigil rules validate` names "prefixes of the path as
# given"), the first 8 bytes of that path on each open. RAW=1 adds
# the other design: one BTF tracepoint program on every syscall exit that
# tail-calls an empty program for the same syscalls, and the same on both
# halves of every syscall (sys_enter too: the dispatch of Falco's modern eBPF
# probe, before any of its work). Needs root, bpftool and a
# built tree (scripts/build.sh). Each round runs a phase without anything
# attached, with the floor, (with the raw floor,) with vigil; one more run
# without closes the last round; a round's ratios are over the mean of the
# runs without just before and after it, and the table gives their medians.
set -euo pipefail
ROUNDS=${1:-5}
ITER=${2:-1000000}
BENCH=tracepoint_floor
FLOOR=./build/bench/tracepoint_floor
fpid=""
bench_cleanup_extra() { [ -n "$fpid" ] && kill -INT "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null || true; }
source "$(dirname "$0")/bench_lib.sh"   # VIGIL=path/to/vigil: another build
command -v bpftool >/dev/null || { echo "$BENCH: needs bpftool" >&2; exit 1; }
[ -x "$FLOOR" ] || { echo "$BENCH: build first (scripts/build.sh)" >&2; exit 1; }

# The syscall tracepoints vigil attaches with these rules, with their numbers.
start_vigil
tps=$(bpftool perf list --json | python3 -c '
import json, re, sys
pid = int(sys.argv[1])
nrs = {}
for path in ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"):
    try:
        for line in open(path):
            m = re.match(r"#define __NR_(\w+)\s+(\d+)", line)
            if m:
                nrs[m.group(1)] = m.group(2)
        break
    except OSError:
        pass
out = set()
for e in json.load(sys.stdin):
    tp = e.get("tracepoint", "")
    if e.get("pid") != pid or not re.match(r"sys_(enter|exit)_", tp):
        continue
    name = re.sub(r"^sys_(enter|exit)_", "", tp)
    if name in nrs:
        out.add(f"{tp}:{nrs[name]}")
    else:
        print(f"no syscall number for {tp}", file=sys.stderr)
print(" ".join(sorted(out)))
' "$vpid")
stop_vigil
[ -n "$tps" ] || { echo "$BENCH: vigil attached no syscall tracepoint" >&2; exit 1; }
echo "floor: $(echo "$tps" | wc -w) syscall tracepoints: $tps" >&2
# Does a rule compare the path as given? Then each open costs vigil a read of
# it, and READ=1's programs make that read too.
read_args="--read"
rule_files=$(set -- ${RULES:--r rules/}; while [ $# -gt 1 ]; do [ "$1" = -r ] && { echo "$2"; shift; }; shift; done)
# shellcheck disable=SC2086
filter=$("$VIGIL" rules validate $rule_files 2>&1 || true)
if grep -q "prefixes of the path as given" <<<"$filter"; then
  read_args="--read --read-path"
fi
exits=$(for t in $tps; do case $t in sys_exit_*) echo "$t";; esac; done | tr '\n' ' ')

start_floor() { # args for tracepoint_floor
  "$FLOOR" "$@" >"$work/floor.out" 2>&1 &
  fpid=$!
  for _ in $(seq 1 100); do
    grep -q '^ready' "$work/floor.out" && return 0
    kill -0 "$fpid" 2>/dev/null || { cat "$work/floor.out" >&2; exit 1; }
    sleep 0.1
  done
  echo "$BENCH: the floor programs did not attach" >&2; exit 1
}
stop_floor() { kill -INT "$fpid"; wait "$fpid" || true; fpid=""; }
run_mix() { # round mode phase
  "$MIX" --iterations "$ITER" --nvidia-node "$work/nvidia0" --phase "$3" | sed "s/^/round=$1 mode=$2 /" >> "$work/results.txt"
}

PHASES=${PHASES:-"getppid read openclose connect ioctl"}
for p in $PHASES; do
  for r in $(seq 1 "$ROUNDS"); do
    run_mix "$r" off "$p"
    # shellcheck disable=SC2086
    start_floor $tps; run_mix "$r" floor "$p"; stop_floor
    if [ -n "${READ:-}" ]; then
      # shellcheck disable=SC2086
      start_floor $read_args $tps; run_mix "$r" read "$p"; stop_floor
    fi
    if [ -n "${RAW:-}" ]; then
      # shellcheck disable=SC2086
      start_floor --raw $exits; run_mix "$r" raw "$p"; stop_floor
      # shellcheck disable=SC2086
      start_floor --raw-both $exits; run_mix "$r" rawboth "$p"; stop_floor
    fi
    start_vigil; run_mix "$r" vigil "$p"; stop_vigil
  done
  run_mix "$((ROUNDS + 1))" off "$p"
done

python3 - "$work/results.txt" "${RAW:-}" "${READ:-}" <<'PY'
import collections, statistics, sys
vals = collections.defaultdict(dict)  # (phase, mode) -> {round: ns/op}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split())
    vals[(kv["phase"], kv["mode"])][int(kv["round"])] = float(kv["cpu_ns_per_op"])
modes = ["floor"] + (["read"] if sys.argv[3] else []) + (["raw", "rawboth"] if sys.argv[2] else []) + ["vigil"]
names = {"floor": "empty programs on vigil's tracepoints", "raw": "raw sys_exit + tail call",
         "rawboth": "raw sys_enter and sys_exit + tail call",
         "read": "the same + the user reads the rules need",
         "vigil": "vigil"}
print("| phase | without (ns/op) | " + " | ".join(names[m] for m in modes) + " | vigil − floor (ns/op) |")
print("|---" * (len(modes) + 3) + "|")
for phase in ["getppid", "read", "openclose", "connect", "ioctl", "forkexec"]:
    off = vals.get((phase, "off"))
    if not off:
        continue
    cells, ns = [], {}
    for m in modes:
        on = vals.get((phase, m), {})
        rs = [on[r] / ((off[r] + off[r + 1]) / 2) for r in sorted(on) if r in off and r + 1 in off]
        if not rs:
            cells.append("")
            continue
        ns[m] = statistics.median(on.values())
        cells.append(f"×{statistics.median(rs):.2f} (×{min(rs):.2f}–×{max(rs):.2f})")
    base = statistics.median(off.values())
    diff = ns.get("vigil", 0) - ns.get("floor", 0)
    print(f"| {phase} | {base:.0f} | " + " | ".join(cells) + f" | {diff:+.0f} |")
PY
