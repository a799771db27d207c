// Throughput of the state on the event path: apply + enrich + after for a
// mix of events of known processes, and the fork/exec/exit cycle of
// short-lived processes, with a 10k-process table.
#include <benchmark/benchmark.h>

#include "engine/state/state.h"
#include "tests/engine/state/test_util.h"

namespace {

using namespace vigil;
using state::testing::replay_config;

void seed(state::State& s) {
  state::Container ct;
  ct.id = std::string(64, 'a');
  ct.pod_uid = "5d0c2a9e-1f3b-4c6d-8e7f-9a0b1c2d3e4f";
  ct.cgroup_id = 77;
  s.upsert_container(ct);
  for (std::uint32_t pid = 100; pid < 10100; ++pid) {
    state::Process p;
    p.pid = pid;
    p.ppid = pid - 1;
    p.comm = "python3";
    p.exe = "python3";
    p.args = {"-m", "vllm.entrypoints.openai.api_server", "--model", "/models/llama"};
    p.cgroup_id = pid % 2 ? 77 : 0;
    p.container_id = pid % 2 ? ct.id : "";
    s.upsert_process(p);
  }
}

void BM_ConnectOfKnownProcess(benchmark::State& st) {
  state::State s(replay_config());
  seed(s);
  event::Event ev;
  ev.hdr.type = event::Type::kConnect;
  ev.data = event::ConnectData{};
  std::uint32_t i = 0;
  for (auto _ : st) {
    ev.hdr.pid = 100 + (i++ % 10000);
    ev.hdr.cgroup_id = ev.hdr.pid % 2 ? 77 : 0;
    s.apply(ev);
    auto ctx = s.enrich(ev);
    benchmark::DoNotOptimize(ctx);
    s.after(ev);
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_ConnectOfKnownProcess);

void BM_ForkExecExitCycle(benchmark::State& st) {
  state::State s(replay_config());
  seed(s);
  event::Event fork, exec, exit;
  fork.hdr.type = event::Type::kFork;
  fork.hdr.pid = 101;
  fork.hdr.cgroup_id = 77;
  exec.hdr.type = event::Type::kExec;
  exec.hdr.cgroup_id = 77;
  exec.hdr.comm = "sh";
  event::ExecData ed;
  ed.filename = "/bin/sh";
  ed.exe = "/bin/sh";
  ed.args = {"sh", "-c", "nvidia-smi -q"};
  exec.data = ed;
  exit.hdr.type = event::Type::kExit;
  exit.hdr.cgroup_id = 77;
  exit.data = event::ExitData{};
  std::uint32_t child = 20000;
  for (auto _ : st) {
    fork.data = event::ForkData{child, child, false};
    exec.hdr.pid = exit.hdr.pid = child;
    for (auto* e : {&fork, &exec, &exit}) {
      s.apply(*e);
      auto ctx = s.enrich(*e);
      benchmark::DoNotOptimize(ctx);
      s.after(*e);
    }
    if (++child > 4000000) child = 20000;
  }
  st.SetItemsProcessed(st.iterations() * 3);
}
BENCHMARK(BM_ForkExecExitCycle);

}  // namespace

BENCHMARK_MAIN();
