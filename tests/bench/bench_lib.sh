# Shared by the live benchmarks (sourced, not run): the checks before a run,
# a work directory with a stand-in NVIDIA node, and starting and stopping
# `vigil run -r rules/` (or $RULES). The caller sets BENCH (its name, for messages) and
# may set VIGIL (another build) and bench_cleanup_extra (a function run at exit).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VIGIL=${VIGIL:-./build/vigil}
MIX=./build/bench/syscall_mix
[ "$(id -u)" -eq 0 ] || { echo "$BENCH: needs root" >&2; exit 1; }
[ -x "$VIGIL" ] && [ -x "$MIX" ] || { echo "$BENCH: build first (scripts/build.sh)" >&2; exit 1; }
# Another vigil (a leftover from an earlier run) keeps its probes attached in
# the "without" runs too and makes every figure meaningless.
if others=$(pgrep -x vigil); then
  echo "$BENCH: another vigil is running (pid $(echo $others | tr '\n' ' ')): stop it first" >&2
  exit 1
fi

work=$(mktemp -d "/tmp/$BENCH.XXXXXX")
vpid=""
bench_cleanup() {
  if declare -F bench_cleanup_extra >/dev/null; then bench_cleanup_extra; fi
  [ -n "$vpid" ] && kill -TERM "$vpid" 2>/dev/null && wait "$vpid" 2>/dev/null || true
  rm -rf "$work"
}
trap bench_cleanup EXIT
# A stand-in NVIDIA node: named like one, with /dev/null's device numbers.
mknod "$work/nvidia0" c 1 3

start_vigil() {
  : > "$work/vigil.err"
  # RULES: other rule files as vigil -r arguments, e.g.
  # RULES="-r rules/ -r ../shared/falco-rules/falco_rules.yaml"
  # shellcheck disable=SC2086
  "$VIGIL" run ${RULES:--r rules/} >"$work/alerts.json" 2>"$work/vigil.err" &
  vpid=$!
  for _ in $(seq 1 300); do
    grep -q "ready" "$work/vigil.err" && return 0
    kill -0 "$vpid" 2>/dev/null || { cat "$work/vigil.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "$BENCH: vigil did not become ready" >&2; cat "$work/vigil.err" >&2; exit 1
}
stop_vigil() {
  kill -TERM "$vpid"; wait "$vpid" || true; vpid=""
}
