#!/usr/bin/env bash
# What the agent uses, for the DaemonSet's resource requests and limits: runs
# `vigil run` with the bundled rules (or $RULES) and reports its CPU (cores,
# from utime+stime) and memory (VmRSS, and the peak VmHWM) on a quiet host,
# then while the host runs an exec and open storm (syscall_mix's forkexec,
# openclose and connect phases, back to back) for SECONDS.
#
#   sudo tests/bench/agent_resources.sh [SECONDS]
#   sudo RULES="-r rules/ -r ../shared/falco-rules/falco_rules.yaml" tests/bench/agent_resources.sh
#
# Needs root and a built tree (scripts/build.sh). Prints one line per phase.
set -euo pipefail
SECONDS_LOAD=${1:-60}
BENCH=agent_resources
source "$(dirname "$0")/bench_lib.sh"   # VIGIL=path/to/vigil: another build
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
events() { grep -o 'stopped: [0-9]* events' "$work/vigil.err" | grep -o '[0-9]*' || echo 0; }

report() { # phase seconds ticks0 ticks1 ops
  awk -v p="$1" -v s="$2" -v t="$(($4 - $3))" -v hz="$hz" -v rss="$(kib "$vpid" VmRSS)" \
      -v hwm="$(kib "$vpid" VmHWM)" -v ops="$5" 'BEGIN {
    printf "%s: %d s, vigil CPU %.3f cores (%.2f s), RSS %.1f MiB, peak RSS %.1f MiB%s\n",
      p, s, t / hz / s, t / hz, rss / 1024, hwm / 1024, ops }'
}

start_vigil
sleep 2
t0=$(cpu_ticks "$vpid"); s0=$SECONDS
sleep 30
report "quiet host" $((SECONDS - s0)) "$t0" "$(cpu_ticks "$vpid")" ""

t0=$(cpu_ticks "$vpid"); s0=$SECONDS
: > "$work/mix.txt"
while [ $((SECONDS - s0)) -lt "$SECONDS_LOAD" ]; do
  "$MIX" --iterations 400000 --nvidia-node "$work/nvidia0" \
    --phase forkexec --phase openclose --phase connect >> "$work/mix.txt" 2>/dev/null
done
t1=$(cpu_ticks "$vpid"); s1=$((SECONDS - s0))
ops=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^ops=/) {split($i, a, "="); n[$1] += a[2]}}
  END {for (p in n) printf " %s %d/s", substr(p, 7), n[p] / '"$s1"'}' "$work/mix.txt")
report "exec+open storm" "$s1" "$t0" "$t1" ",$ops"
stop_vigil
drops=$(grep -o 'drops=[0-9]*' "$work/vigil.err" | tail -1 | grep -o '[0-9]*' || echo 0)
echo "vigil: $(events) events, $drops drops, rules: ${RULES:--r rules/}"
