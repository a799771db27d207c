#!/usr/bin/env bash
# Times the Quickstart's first command as a new user meets it: a fresh Debian 12
# root (mmdebstrap --variant=minbase, nothing of the build tools installed),
# `git clone` of this checkout's HEAD, then `scripts/quickstart.sh` (installs,
# builds, starts `vigil run`) until vigil's ready line. No compiler cache.
# Needs root, network access to a Debian mirror, and mmdebstrap.
#
#   sudo tests/bench/quickstart_time.sh [WORKDIR]     (default: a new /tmp dir)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
[ "$(id -u)" -eq 0 ] || { echo "quickstart_time: needs root (chroot, mounts)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "quickstart_time: needs mmdebstrap" >&2; exit 1; }
work=${1:-$(mktemp -d /tmp/quickstart_time.XXXXXX)}
root=$work/root
mounts=(proc sys dev sys/fs/bpf sys/kernel/tracing sys/kernel/debug sys/fs/cgroup)
qpid=""
cleanup() {
  [ -n "$qpid" ] && { kill -INT -- -"$qpid" 2>/dev/null; sleep 2; kill -KILL -- -"$qpid" 2>/dev/null; } || true
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "$root/${mounts[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
if [ ! -x "$root/bin/bash" ]; then
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$root" >/dev/null
fi
for m in "${mounts[@]}"; do
  mkdir -p "$root/$m"
  mountpoint -q "$root/$m" || mount --bind "/$m" "$root/$m"
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
rm -rf "$root/root/vigil"
start=$(date +%s.%N)
git clone -q "$repo" "$root/root/vigil"
setsid chroot "$root" /bin/bash -c 'cd /root/vigil && scripts/quickstart.sh' >"$work/out" 2>"$work/err" &
qpid=$!
until grep -q " ready: " "$work/err"; do
  kill -0 "$qpid" 2>/dev/null || { echo "quickstart_time: the Quickstart ended before ready:" >&2; tail -20 "$work/err" >&2; exit 1; }
  sleep 0.5
done
end=$(date +%s.%N)
build=$(awk 'NR > 1 && $2 > m {m = $2} END {print m / 1000}' "$root/root/vigil/build/.ninja_log")
echo "quickstart_time: $(nproc) cores, $(git rev-parse --short HEAD), $(date -u +%F)"
printf 'clone to ready: %.1f s (of which the build, ninja alone: %.1f s)\n' "$(echo "$end - $start" | bc)" "$build"
