#!/bin/bash
# The CUDA probes against a real NVIDIA driver, in one short run.
#
# Here (build machine): gather what the run needs into one folder:
#   tests/plugins/cuda/device_check.sh --bundle build-cuda
#     -> build-cuda/cuda-device-bundle (the plugin, cuda_probe_check, the
#        workloads, and the libbpf/libelf they link; glibc >= 2.34 on the target)
# There (root, GPU machine, from the repository root):
#   OUT=/some/dir tests/plugins/cuda/device_check.sh --run build-cuda/cuda-device-bundle
#
# The run starts cuda_probe_check for 30 s with no library_paths (so libcuda.so.1
# must be found through the workloads' maps: scan or mmap watch), then runs
#   1. cuda_driver_workload: a real context, 8 allocations, a PTX module and
#      1000 launches of an empty kernel (after a 1.5 s pause);
#   2. cuda_caller on the real libcuda without cuInit: every call returns an
#      error, but each entry point is entered a known number of times;
#   3. a PyTorch matmul loop, when python3 can import torch (the CUDA runtime
#      path: libcudart reaches the driver through cuGetProcAddress).
# and writes events.jsonl, plugin.log, the workloads' output and summary.txt
# (per process: calls by name, launches summed) under $OUT.
set -u
mode=${1:-}
dir=${2:-}
case "$mode" in
--bundle)
  [ -n "$dir" ] || { echo "usage: $0 --bundle <build dir>" >&2; exit 2; }
  b="$dir/cuda-device-bundle"
  rm -rf "$b" && mkdir -p "$b/lib" || exit 1
  cp "$dir/plugins/libvigil_cuda.so" "$b/" || exit 1
  for t in cuda_probe_check cuda_caller cuda_driver_workload; do cp "$dir/tests/plugins/cuda/$t" "$b/" || exit 1; done
  for l in libbpf.so.1 libelf.so.1; do
    p=$(ldd "$b/libvigil_cuda.so" | awk -v l="$l" '$1 == l {print $3}')
    [ -n "$p" ] && cp -L "$p" "$b/lib/"
  done
  du -sh "$b"
  exit 0
  ;;
--run) ;;
*) echo "usage: $0 --bundle <build dir> | --run <bundle dir>" >&2; exit 2 ;;
esac

b=$(cd "$dir" && pwd) || exit 1
out=${OUT:-/tmp/vigil-cuda-check}
mkdir -p "$out"
export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "kernel: $(uname -r)"
  nvidia-smi -L 2>&1 | head -8
  nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1
  libcuda=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
  echo "libcuda.so.1: $libcuda -> $(readlink -f "$libcuda")"
  ldd "$b/cuda_probe_check" "$b/libvigil_cuda.so" | grep -i 'not found'
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
} > "$out/env.txt" 2>&1
libcuda=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')

"$b/cuda_probe_check" --plugin "$b/libvigil_cuda.so" --seconds 30 \
  --config '{"interval": "1s", "scan_interval": "500ms"}' > "$out/events.jsonl" 2> "$out/plugin.log" &
check=$!
sleep 2
"$b/cuda_driver_workload" 1000 --sleep-ms 1500 > "$out/workload_driver.txt" 2>&1
echo "exit $?" >> "$out/workload_driver.txt"
[ -n "$libcuda" ] && { echo go | "$b/cuda_caller" "$libcuda" 50 > "$out/workload_caller.txt" 2>&1; echo "exit $?" >> "$out/workload_caller.txt"; }
timeout 20 python3 -c '
import os, torch
print("pid", os.getpid())
x = torch.randn(2048, 2048, device="cuda")
for _ in range(200): y = x @ x
torch.cuda.synchronize()
print("ok")' > "$out/workload_torch.txt" 2>&1
echo "exit $?" >> "$out/workload_torch.txt"
wait "$check"
echo "cuda_probe_check exit $?" >> "$out/plugin.log"

python3 - "$out/events.jsonl" > "$out/summary.txt" 2>&1 <<'PY'
import collections, json, sys
calls = collections.defaultdict(collections.Counter)
launches = collections.Counter()
libs = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    pid = e.get("proc.pid")
    if e["evt.name"] == "cuda_call":
        calls[pid][e.get("cuda.call")] += 1
    elif e["evt.name"] == "cuda_launches":
        launches[pid] += e.get("cuda.launches", 0)
    elif e["evt.name"] == "cuda_library":
        libs.append(e)
for l in libs:
    print("library", l.get("cuda.library"), "pid", l.get("proc.pid"), "probes", l.get("cuda.probes"),
          "missing:", l.get("cuda.missing"))
for pid in sorted(set(calls) | set(launches)):
    print("pid", pid, "launches", launches[pid], dict(calls[pid]))
PY
cat "$out/env.txt" "$out/summary.txt" "$out"/workload_*.txt
tail -5 "$out/plugin.log"
