#!/usr/bin/env bash
# What each of vigil's BPF programs costs per run while one syscall_mix phase
# runs: the kernel's run-time statistics (run_time_ns / run_cnt of every
# program vigil loaded), the steadiest view of a program change on a VM whose
# speed drifts. The figures include the statistics' own cost (two clock reads
# per run), the same for every build.
#
#   sudo tests/bench/prog_ns.sh [PHASE] [ITERATIONS]
#   sudo VIGIL=path/to/other/vigil tests/bench/prog_ns.sh ioctl
#   sudo RULES="-r rules/ -o sensor.ioctl_cache=false" tests/bench/prog_ns.sh ioctl
#   sudo OPEN_PATH=/usr/lib/os-release tests/bench/prog_ns.sh openclose
#   sudo MIX_ARGS="--udp-dest 198.18.0.1" tests/bench/prog_ns.sh udpsend
#
# Needs root, bpftool and a built tree (scripts/build.sh). The statistics are
# turned on with BPF_ENABLE_STATS for the run only (held by a file
# descriptor: a kernel.bpf_stats_enabled someone else set is left as it was).
# Prints one line per program that ran: its name, ns per run, runs; then the
# phase's line from syscall_mix.
set -euo pipefail
PHASE=${1:-ioctl}
ITER=${2:-1000000}
BENCH=prog_ns
command -v bpftool >/dev/null || { echo "$BENCH: needs bpftool" >&2; exit 1; }
source "$(dirname "$0")/bench_lib.sh"   # VIGIL=path/to/vigil: another build

# vigil's programs are the ones loaded after this id.
max_id() { bpftool prog show --json | python3 -c 'import json,sys; print(max([p["id"] for p in json.load(sys.stdin)] + [0]))'; }
snapshot() {
  bpftool prog show --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p["id"] > int(sys.argv[1]):
        print(p["id"], p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$1"
}

before=$(max_id)
start_vigil
# BPF_ENABLE_STATS (bpf(2) command 32, type BPF_STATS_RUN_TIME): on while the
# descriptor is open, i.e. while this helper waits on its stdin.
coproc STATS {
  python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint8 * 128)()
if libc.syscall(321, 32, ctypes.byref(attr), 128) < 0:
    sys.exit("prog_ns: BPF_ENABLE_STATS: " + os.strerror(ctypes.get_errno()))
print("on", flush=True)
sys.stdin.read()'
}
read -r _ <&"${STATS[0]}" || { echo "$BENCH: cannot turn the statistics on" >&2; exit 1; }
snapshot "$before" >"$work/a"
# shellcheck disable=SC2086
"$MIX" --iterations "$ITER" --nvidia-node "$work/nvidia0" --open-path "${OPEN_PATH:-/etc/hostname}" \
  ${MIX_ARGS:-} --phase "$PHASE" >"$work/mix.txt"
snapshot "$before" >"$work/b"
exec {STATS[1]}>&-
stop_vigil

python3 - "$work/a" "$work/b" <<'PY'
import sys
def load(p):
    return {f[0]: (f[1], int(f[2]), int(f[3])) for f in (l.split() for l in open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
for pid, (name, t, n) in sorted(b.items(), key=lambda kv: kv[1][0]):
    dt, dn = t - a.get(pid, (name, 0, 0))[1], n - a.get(pid, (name, 0, 0))[2]
    if dn > 0:
        print(f"{name} {dt / dn:.1f} ns/run over {dn} runs")
PY
cat "$work/mix.txt"
