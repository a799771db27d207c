#!/usr/bin/env bash
# What egress byte accounting costs (docs/performance.md, "Egress byte
# accounting"): the egress program's run time per packet and the workload's
# CPU per operation, with the bundled rules (the egress budget rule loaded:
# every TCP and UDP packet is counted) and with that one rule disabled (the
# program still runs for the DNS and first-bytes rules, without counting),
# alternating. Phases: udpsend (64-byte datagrams to 198.18.0.1, an address
# of the benchmarking range, RFC 2544, put on lo for the run: not 127/8, so
# every packet is counted) and connect (127.0.0.1: each packet parsed, then
# left out).
#
#   sudo tests/bench/egress_bench.sh [ROUNDS] [ITERATIONS]
#
# Adds 198.18.0.1/32 to lo for the run and removes it after. Needs root,
# bpftool, iproute2 and a built tree (scripts/build.sh). Prints one line per
# round, mode and phase.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
ITER=${2:-400000}
command -v ip >/dev/null || { echo "egress_bench: needs iproute2" >&2; exit 1; }
off=$(mktemp --suffix=.yaml)
cleanup() { ip addr del 198.18.0.1/32 dev lo 2>/dev/null || true; rm -f "$off"; }
trap cleanup EXIT
ip addr add 198.18.0.1/32 dev lo
cat >"$off" <<'YAML'
- rule: Inference pod sent data beyond its egress budget
  enabled: false
YAML
for r in $(seq 1 "$ROUNDS"); do
  for mode in on off; do
    rules="-r rules/"
    [ "$mode" = off ] && rules="-r rules/ -r $off"
    for phase in udpsend connect; do
      out=$(RULES="$rules" MIX_ARGS="--udp-dest 198.18.0.1" tests/bench/prog_ns.sh "$phase" "$ITER")
      prog=$(echo "$out" | awk '$1 == "vg_skb_egress" {print $2}')
      cpu=$(echo "$out" | sed -n 's/.*cpu_ns_per_op=\([0-9.]*\).*/\1/p')
      echo "round=$r egress=$mode phase=$phase vg_skb_egress_ns=${prog:-none} cpu_ns_per_op=$cpu"
    done
  done
done
