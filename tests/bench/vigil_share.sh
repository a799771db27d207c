#!/usr/bin/env bash
# What share of one syscall_mix phase's CPU time is vigil's, from a profile:
# runs `vigil run -r rules/`, records the phase with `perf record`, and sums
# the samples in symbols that only run because vigil is attached — its BPF
# programs and the helpers they call (maps, ring buffer, socket storage,
# memory reads), the syscall tracepoint dispatch (perf_syscall_*,
# trace_call_bpf, the perf buffer and recursion guard), the syscall slow path
# (syscall_trace_enter, syscall_exit_work) and the cgroup hooks' dispatch. Cache effects on the workload's own code are not counted, so this is
# a lower bound of the cost; unlike the with/without ratio of
# live_overhead.sh it does not depend on the VM's speed drifting between two
# runs, which makes it the measure to compare two builds with.
#
#   sudo tests/bench/vigil_share.sh [PHASE] [ITERATIONS]
#   sudo VIGIL=path/to/other/vigil tests/bench/vigil_share.sh openclose
#
# Needs root, perf (Debian: linux-perf) and a built tree (scripts/build.sh).
# Prints one line: the share, the programs' and user reads' part of it, the
# ratio it implies (1 / (1 - share)), the same by call chain (what runs under
# a BPF program or the tracepoint dispatch counts too, e.g. memcmp in a hash
# lookup, which the symbol list cannot name) and the phase's CPU ns per
# operation.
set -euo pipefail
PHASE=${1:-openclose}
ITER=${2:-4000000}
BENCH=vigil_share
command -v perf >/dev/null || { echo "$BENCH: needs perf (apt-get install linux-perf)" >&2; exit 1; }
source "$(dirname "$0")/bench_lib.sh"   # VIGIL=path/to/vigil: another build

start_vigil
perf record -q -o "$work/perf.data" -F 20000 -g -- \
  "$MIX" --iterations "$ITER" --nvidia-node "$work/nvidia0" --phase "$PHASE" >"$work/mix.txt" 2>/dev/null
stop_vigil

perf report -i "$work/perf.data" --no-children --sort sym --stdio -g none -n 2>/dev/null |
  awk '!/^#/ && /%/ {print $2, $NF}' >"$work/symbols.txt"
perf script -i "$work/perf.data" -F ip,sym 2>/dev/null >"$work/stacks.txt"
python3 - "$work/symbols.txt" "$(cat "$work/mix.txt")" "$work/stacks.txt" <<'PY'
import sys
vigil_only = ("bpf_prog_", "perf_syscall_", "trace_call_bpf", "perf_trace_buf_alloc",
              "perf_swevent_get_recursion_context", "perf_swevent_put_recursion_context",
              "syscall_trace_enter", "syscall_exit_work", "__cgroup_bpf_run_filter",
              "bpf_task_pt_regs", "bpf_get_current_", "bpf_map_", "htab_", "bpf_ringbuf_",
              "bpf_local_storage", "bpf_sk_storage", "bpf_probe_read_", "copy_from_user_nofault",
              "copy_from_kernel_nofault", "nmi_uaccess_okay")
user_reads = ("copy_from_user_nofault", "bpf_probe_read_user", "nmi_uaccess_okay", "read_user_")
samples = {}
for line in open(sys.argv[1]):
    n, sym = line.split()
    samples[sym] = samples.get(sym, 0) + int(n)
total = sum(samples.values())
if not total:
    sys.exit("vigil_share: no samples")
def share(names, pred=lambda s: True):
    return 100.0 * sum(v for s, v in samples.items() if any(x in s for x in names) and pred(s)) / total
all_ = share(vigil_only)
progs = share(("bpf_prog_",), lambda s: "read_user_" not in s)
reads = share(user_reads)
# By call chain: a sample is vigil's when its own symbol is one of the above
# or it runs under a BPF program or the syscall tracepoint dispatch. This also
# counts what those call that the list cannot name without catching the
# workload's own calls (memcmp in a hash lookup, the hardened-usercopy check
# of a user read, a kernel's own callee of a helper).
roots = ("bpf_prog_", "perf_syscall_", "trace_call_bpf", "__cgroup_bpf_run_filter")
chain_all = chain_vigil = 0
def flush(frames):
    global chain_all, chain_vigil
    if not frames:
        return
    chain_all += 1
    if any(x in frames[0] for x in vigil_only) or any(r in f for f in frames for r in roots):
        chain_vigil += 1
frames = []
for line in open(sys.argv[3]):
    line = line.strip()
    if not line:
        flush(frames)
        frames = []
    else:
        frames.append(line.split()[-1])
flush(frames)
chain = 100.0 * chain_vigil / chain_all if chain_all else 0.0
print(f"vigil-only symbols {all_:.1f}% (BPF programs {progs:.1f}%, user reads {reads:.1f}%) "
      f"-> x{100.0 / (100.0 - all_):.3f}; by call chain {chain:.1f}% -> x{100.0 / (100.0 - chain):.3f}; "
      f"{sys.argv[2]}")
PY
