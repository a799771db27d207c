// The cost per call of the CUDA probes, side by side in one run: N calls of
// cuLaunchKernel (counted in the kernel) and of cuMemAlloc_v2 (one ring-buffer
// record each, drained by a consumer thread as vigil's source thread would) into
// the stand-in libcuda, without the plugin, then with it attached by
// multi-uprobe links, by one link per entry point, and by multi-uprobe links
// with a reader wakeup for every record (flush_interval "0ms"). mmap_exec_munmap
// and getppid price the mmap watch (a syscalls:sys_exit_mmap program).
//
//   sudo build/bench/cuda_probe_bench [--benchmark_repetitions=5 ...]
//
// The counters say how many events the consumer took and how many records
// the plugin reported lost (cuda.drops.calls).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>

#include "tests/plugins/cuda/abi_client.h"

namespace {

using vigil::cuda::test::AbiClient;
using vigil::cuda::test::Extracted;

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);
using AllocFn = int (*)(unsigned long long*, std::size_t);

LaunchFn g_launch = nullptr;
AllocFn g_alloc = nullptr;

enum class Phase { kDetached, kMulti, kSingle, kWakeEach };

// The plugin, attached to the stand-in for one phase, with a consumer thread.
struct Attached {
  std::unique_ptr<AbiClient> plugin;
  std::thread consumer;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::uint64_t> drops{0};

  bool start(Phase p, std::string& err) {
    plugin = std::make_unique<AbiClient>(VIGIL_CUDA_PLUGIN);
    std::string cfg = std::string(R"({"library_paths": [")") + VIGIL_FAKE_CUDA +
                      R"("], "scan_interval": "10m", "interval": "1s", "ringbuf_bytes": 4194304, "multi_uprobe": )" +
                      (p == Phase::kSingle ? "false" : "true") +
                      (p == Phase::kWakeEach ? R"(, "flush_interval": "0ms")" : "") + "}";
    if (!plugin->init(cfg)) {
      err = plugin->error();
      return false;
    }
    consumer = std::thread([this] {
      while (!stop.load()) {
        std::vector<Extracted> got;
        plugin->next(50, got);
        events += got.size();
        for (const Extracted& e : got)
          if (e.name == "cuda_launches") drops = std::max<std::uint64_t>(drops, e.u64("cuda.drops.calls"));
      }
    });
    return true;
  }
  ~Attached() {
    stop = true;
    if (consumer.joinable()) consumer.join();
  }
};

Phase g_phase = Phase::kDetached;
std::unique_ptr<Attached> g_attached;

void enter(Phase p, benchmark::State& state) {
  if (p == g_phase) return;
  g_attached.reset();
  g_phase = Phase::kDetached;
  if (p == Phase::kDetached) return;
  auto a = std::make_unique<Attached>();
  std::string err;
  if (!a->start(p, err)) {
    state.SkipWithError(("plugin: " + err).c_str());
    return;
  }
  g_attached = std::move(a);
  g_phase = p;
}

void counters(benchmark::State& state) {
  if (g_attached) {
    state.counters["events"] = static_cast<double>(g_attached->events.load());
    state.counters["drops"] = static_cast<double>(g_attached->drops.load());
  }
}

void BM_cuLaunchKernel(benchmark::State& state, Phase p) {
  enter(p, state);
  for (auto _ : state) benchmark::DoNotOptimize(g_launch(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  counters(state);
}

void BM_cuMemAlloc_v2(benchmark::State& state, Phase p) {
  enter(p, state);
  unsigned long long ptr = 0;
  for (auto _ : state) benchmark::DoNotOptimize(g_alloc(&ptr, 4096));
  counters(state);
}

// The mmap watch (syscalls:sys_exit_mmap) runs on every mmap; and a syscall
// tracepoint puts every syscall of every task on the kernel's slow path.
void BM_mmap_exec(benchmark::State& state, Phase p) {
  enter(p, state);
  int fd = open(VIGIL_FAKE_CUDA, O_RDONLY | O_CLOEXEC);
  for (auto _ : state) {
    void* m = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    benchmark::DoNotOptimize(m);
    munmap(m, 4096);
  }
  close(fd);
  counters(state);
}

void BM_getppid(benchmark::State& state, Phase p) {
  enter(p, state);
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getppid));
  counters(state);
}

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "cuda_probe_bench: needs root (uprobes)\n");
    return 1;
  }
  void* h = dlopen(VIGIL_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  g_launch = reinterpret_cast<LaunchFn>(dlsym(h, "cuLaunchKernel"));
  g_alloc = reinterpret_cast<AllocFn>(dlsym(h, "cuMemAlloc_v2"));
  if (!g_launch || !g_alloc) return 1;
  for (auto [name, phase] :
       {std::pair{"no_probe", Phase::kDetached}, std::pair{"multi_uprobe", Phase::kMulti},
        std::pair{"uprobe_per_entry", Phase::kSingle}, std::pair{"multi_uprobe_wake_each_record", Phase::kWakeEach}}) {
    benchmark::RegisterBenchmark((std::string("cuLaunchKernel/") + name).c_str(), BM_cuLaunchKernel, phase);
    benchmark::RegisterBenchmark((std::string("cuMemAlloc_v2/") + name).c_str(), BM_cuMemAlloc_v2, phase);
    if (phase == Phase::kDetached || phase == Phase::kMulti) {
      benchmark::RegisterBenchmark((std::string("mmap_exec_munmap/") + name).c_str(), BM_mmap_exec, phase);
      benchmark::RegisterBenchmark((std::string("getppid/") + name).c_str(), BM_getppid, phase);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  g_attached.reset();
  benchmark::Shutdown();
  return 0;
}
