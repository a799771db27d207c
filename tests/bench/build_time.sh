#!/usr/bin/env bash
# The Quickstart's build (scripts/build.sh --agent: vigil, its BPF objects and
# the shipped plugins), timed cold in each build mode, side by side on the same
# machine: no compiler cache, a new build directory per run. Prints wall and
# CPU seconds per mode and the ratios to the first mode.
#
#   tests/bench/build_time.sh [MODE...]
#     per-file     one object per .cpp (the default build)
#     unity        VIGIL_UNITY_BUILD=ON, CMake's batches of 8 files (what --agent uses)
#     unity-N      VIGIL_UNITY_BUILD=ON with batches of N files (0: a whole library)
set -euo pipefail
cd "$(dirname "$0")/../.."
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(per-file unity)
work=$(mktemp -d /tmp/build_time.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build_time: $(nproc) cores, $(git rev-parse --short HEAD), $(date -u +%F)"
first_wall=""
for mode in "${modes[@]}"; do
  args=(-DVIGIL_UNITY_BUILD=OFF)
  case "$mode" in
    per-file) ;;
    unity) args=(-DVIGIL_UNITY_BUILD=ON) ;;
    unity-[0-9]*) args=(-DVIGIL_UNITY_BUILD=ON "-DCMAKE_UNITY_BUILD_BATCH_SIZE=${mode#unity-}") ;;
    *) echo "build_time: unknown mode '$mode'" >&2; exit 2 ;;
  esac
  dir="$work/$mode"
  # build.sh --agent configures and builds; CCACHE_DISABLE keeps it cold.
  /usr/bin/time -f "%e %U %S" -o "$work/time" env CCACHE_DISABLE=1 VIGIL_BUILD_DIR="$dir" \
    scripts/build.sh --agent "${args[@]}" > "$work/$mode.log" 2>&1 || {
    echo "build_time: $mode failed, see the log:" >&2; tail -20 "$work/$mode.log" >&2; exit 1; }
  read -r wall user sys < "$work/time"
  cpu=$(echo "$user + $sys" | bc)
  [ -n "$first_wall" ] || { first_wall=$wall; first_cpu=$cpu; }
  printf '%-10s wall %6.1f s  cpu %7.1f s  wall ratio %.2f  cpu ratio %.2f\n' "$mode" "$wall" "$cpu" \
    "$(echo "$wall / $first_wall" | bc -l)" "$(echo "$cpu / $first_cpu" | bc -l)"
done
