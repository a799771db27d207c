// What per-workload baselines cost on the event path: Pipeline::process over
// a synthetic mix of exec, connect, open-for-write and GPU-alloc events from
// 500 processes in 50 containers (50 images), with rules/vigil_rules.yaml and
// rules/baseline/inference_baseline.yaml loaded, and
//   Off       no store (the default: baselines disabled),
//   Learning  a store whose profiles learn every event,
//   Locked    a store whose profiles learnt the mix and are locked (each event
//             is judged; none deviates).
// All three run in one process over the same events.
//
//   taskset -c 1 build/bench/baseline_bench   (run from the repository root)
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/baseline/store.h"
#include "engine/event/nvidia.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/state/state.h"

namespace {

using namespace vigil;

constexpr int kContainers = 50;
constexpr int kProcs = 500;
constexpr std::size_t kEvents = 4096;
// The RM class of the mix's allocations: a channel (AMPERE_CHANNEL_GPFIFO_A)
// by default; VIGIL_BENCH_COMPUTE=1 makes it a compute class, which starts
// the compute-then-egress sequence's partial match at every allocation.
const std::uint32_t kAllocClass = std::getenv("VIGIL_BENCH_COMPUTE") ? 0xc6c0 : 0xc56f;

std::string hex64(int n) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016x", n + 1);
  return std::string(buf) + std::string(48, 'a');
}

struct World {
  std::unique_ptr<state::State> st;
  std::vector<event::Event> events;
};

// The containers, their pods and processes, and the event mix.
World make_world() {
  World w;
  state::Config cfg;
  cfg.live = false;
  w.st = std::make_unique<state::State>(cfg);
  for (int c = 0; c < kContainers; ++c) {
    state::Pod pod;
    pod.uid = "pod-" + std::to_string(c);
    pod.name = "server-" + std::to_string(c);
    pod.ns = "serving";
    pod.labels["app.kubernetes.io/component"] = "inference";
    state::PodContainer pc;
    pc.id = hex64(c);
    pc.name = "server";
    pc.image = "registry.example/model-" + std::to_string(c) + ":1";
    pod.containers.push_back(pc);
    state::Container ct;
    ct.id = pc.id;
    ct.runtime = state::ContainerRuntime::kContainerd;
    ct.pod_uid = pod.uid;
    ct.name = pc.name;
    ct.image = pc.image;
    w.st->upsert_pod(pod);
    w.st->upsert_container(ct);
  }
  for (int p = 0; p < kProcs; ++p) {
    state::Process pr;
    pr.pid = 1000 + p;
    pr.ppid = 1;
    pr.comm = "python3";
    pr.exepath = "/usr/bin/python3." + std::to_string(p % 4);
    pr.container_id = hex64(p % kContainers);
    w.st->upsert_process(pr);
  }
  std::uint64_t ts = 1700000000000000000ull;
  for (std::size_t i = 0; i < kEvents; ++i) {
    event::Event e;
    const int p = static_cast<int>(i * 7 % kProcs);
    e.hdr.pid = e.hdr.tid = 1000 + p;
    e.hdr.ppid = 1;
    e.hdr.comm = "python3";
    e.hdr.ts_ns = ts += 1000;
    switch (i % 4) {
      case 0: {
        e.hdr.type = event::Type::kConnect;
        event::ConnectData d;
        d.family = AF_INET;
        d.proto = event::L4::kTcp;
        d.daddr.family = AF_INET;
        const std::string ip = "10.100." + std::to_string(i % 8) + ".7";
        inet_pton(AF_INET, ip.c_str(), d.daddr.bytes.data());
        d.dport = 6379;
        e.data = d;
        break;
      }
      case 1: {
        e.hdr.type = event::Type::kOpen;
        event::OpenData d;
        d.path = "/etc/cron.d/state-" + std::to_string(i % 4);
        d.flags = 01;
        d.result = 5;
        e.data = d;
        break;
      }
      case 2: {
        e.hdr.type = event::Type::kIoctl;
        event::IoctlData d;
        d.nr = event::nvidia::kEscRmAlloc;
        d.rm_class = kAllocClass;
        e.data = d;
        break;
      }
      default: {
        // Not an exec: an exec replaces the process image, and the mix
        // should be the same for each iteration. A close-like event with no
        // baseline fact: the host-wide cost of observe() alone.
        e.hdr.type = event::Type::kConnect;
        event::ConnectData d;
        d.family = AF_UNIX;
        d.unix_path = "/run/app.sock";
        e.data = d;
        break;
      }
    }
    w.events.push_back(std::move(e));
  }
  return w;
}

std::shared_ptr<const rules::Ruleset> rules_or_die() {
  auto r = rules::load_rules({"rules/vigil_rules.yaml", "rules/baseline/inference_baseline.yaml"}, {});
  if (!r.ruleset) {
    std::fprintf(stderr, "cannot load the rules (run from the repository root)\n");
    std::exit(2);
  }
  return r.ruleset;
}

void run(benchmark::State& bs, int mode) {
  World w = make_world();
  std::unique_ptr<baseline::Store> store;
  if (mode != 0) {
    baseline::Config cfg;
    cfg.learn_for_ns = 0;
    store = std::make_unique<baseline::Store>(cfg);
  }
  std::uint64_t alerts = 0;
  pipeline::Pipeline pipe({*w.st, [&alerts](std::shared_ptr<const event::Alert>) { ++alerts; }, "bench", store.get()},
                          rules_or_die());
  if (mode == 2) {
    for (auto& e : w.events) pipe.process(e);  // learn the mix, then lock
    for (const baseline::Profile* p : store->profiles()) store->lock(p->key(), 1, "command");
  }
  std::size_t i = 0;
  for (auto _ : bs) {
    pipe.process(w.events[i]);
    if (++i == w.events.size()) i = 0;
  }
  bs.counters["alerts"] = static_cast<double>(alerts);
  bs.SetItemsProcessed(bs.iterations());
}

void BM_Baselines_Off(benchmark::State& bs) { run(bs, 0); }
void BM_Baselines_Learning(benchmark::State& bs) { run(bs, 1); }
void BM_Baselines_Locked(benchmark::State& bs) { run(bs, 2); }

}  // namespace

BENCHMARK(BM_Baselines_Off);
BENCHMARK(BM_Baselines_Learning);
BENCHMARK(BM_Baselines_Locked);
BENCHMARK_MAIN();
