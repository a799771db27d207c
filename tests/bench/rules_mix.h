// The rule benchmarks' workload, shared by rules_bench.cpp (wall clock) and
// rules_count.cpp (instructions per event under callgrind), so both measure
// the same events: a synthetic mix of exec, open, connect, ioctl and dns
// events with a small share (5%) of the other calls a node makes, from 500
// processes in 50 containers (50 pods), and the rule sets (a) to (c).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/rules/fields.h"
#include "engine/rules/ruleset.h"

namespace vigil::bench {

class World : public state::StateView {
 public:
  std::map<std::uint32_t, state::Process> procs;
  std::unordered_map<std::uint32_t, std::string> dns;  // IPv4 -> name, as the state's table
  const state::Process* process(std::uint32_t pid) const override {
    auto it = procs.find(pid);
    return it == procs.end() ? nullptr : &it->second;
  }
  std::string_view dns_name_for(const state::EvalContext&, const event::IpAddr& a) const override {
    if (a.family != AF_INET) return {};
    std::uint32_t k;
    std::memcpy(&k, a.bytes.data(), 4);
    auto it = dns.find(k);
    return it == dns.end() ? std::string_view() : std::string_view(it->second);
  }
};

inline event::IpAddr ip(const std::string& s) {
  event::IpAddr a;
  rules::parse_ip(s, a);
  return a;
}

struct Mix {
  World world;
  std::vector<state::Container> containers;
  std::vector<state::Pod> pods;
  std::vector<event::Event> events;
  std::vector<state::EvalContext> ctxs;
};

// 50 containers (one per pod) with 10 processes each: an entrypoint under the
// runtime's shim and workers under it; a mix of the events a GPU node sees.
inline std::unique_ptr<Mix> make_mix(std::size_t n_events) {
  auto m = std::make_unique<Mix>();
  std::mt19937 rng(42);
  m->containers.resize(50);
  m->pods.resize(50);
  static const char* kImages[] = {"ghcr.io/acme/train:1.4", "nvcr.io/nvidia/tritonserver:24.01",
                                  "ghcr.io/acme/vllm:0.4", "docker.io/library/python:3.11"};
  static const char* kNames[] = {"python3", "tritonserver", "torchrun", "pt_main_thread", "nccl"};
  for (int c = 0; c < 50; ++c) {
    auto& ct = m->containers[c];
    char id[65];
    std::snprintf(id, sizeof id, "%064x", c + 1);
    ct.id = id;
    ct.runtime = "containerd";
    ct.name = "worker";
    ct.image = kImages[c % 4];
    ct.pod_uid = "pod-" + std::to_string(c);
    auto& pod = m->pods[c];
    pod.uid = ct.pod_uid;
    pod.name = "job-" + std::to_string(c);
    pod.ns = c % 2 ? "ml" : "inference";
    pod.labels = {{"app", c % 2 ? "train" : "serve"}};
    state::PodContainer pc;
    pc.id = ct.id;
    pc.name = "worker";
    pc.gpu_limit = 1;
    pc.nvidia_visible_devices = std::to_string(c % 8);
    pc.gpu_devices = {std::to_string(c % 8)};
    pod.containers.push_back(pc);
    std::uint32_t base = 10000 + static_cast<std::uint32_t>(c) * 100;
    state::Process shim;
    shim.pid = base;
    shim.ppid = 1;
    shim.comm = "containerd-shim";
    shim.exepath = "/usr/bin/containerd-shim-runc-v2";
    m->world.procs[shim.pid] = shim;
    for (int p = 0; p < 10; ++p) {
      state::Process pr;
      pr.pid = base + 1 + static_cast<std::uint32_t>(p);
      pr.ppid = p == 0 ? base : base + 1;
      pr.uid = 1000;
      pr.gid = 1000;
      pr.comm = kNames[(c + p) % 5];
      pr.exe = pr.comm;
      pr.exepath = "/usr/bin/" + pr.comm;
      pr.args = {"serve.py", "--port", std::to_string(8000 + p), "--model", "/models/llama"};
      pr.cwd = "/workspace";
      pr.container_id = ct.id;
      pr.start_ts_ns = 1;
      m->world.procs[pr.pid] = pr;
    }
  }
  for (int i = 0; i < 64; ++i) {
    auto a = ip("10.0." + std::to_string(i) + ".5");
    std::uint32_t k;
    std::memcpy(&k, a.bytes.data(), 4);
    m->world.dns[k] = "svc" + std::to_string(i) + ".cluster.local";
  }
  static const char* kPaths[] = {"/data/shard-0001.parquet",
                                 "/models/llama/model.safetensors",
                                 "/workspace/ckpt/step-100.pt",
                                 "/usr/lib/python3.11/json/__init__.py",
                                 "/dev/shm/nccl-0",
                                 "/proc/self/status",
                                 "/etc/ld.so.cache",
                                 "/tmp/torch_extensions/lock"};
  m->events.reserve(n_events);
  for (std::size_t i = 0; i < n_events; ++i) {
    int c = static_cast<int>(rng() % 50);
    std::uint32_t pid = 10000 + static_cast<std::uint32_t>(c) * 100 + 1 + rng() % 10;
    const auto& pr = m->world.procs[pid];
    event::Event ev;
    ev.hdr.ts_ns = 1767225600ull * 1000000000ull + i * 1000;
    ev.hdr.pid = pid;
    ev.hdr.tid = pid;
    ev.hdr.ppid = pr.ppid;
    ev.hdr.uid = 1000;
    ev.hdr.comm = pr.comm;
    // Per mille: exec 100, open 330, connect 190, ioctl 240, dns 90, and
    // 50 of the other calls (dup, socket, accept, unlink, rename, chmod,
    // mkdir, listen/bind) a training or serving container makes.
    unsigned kind = rng() % 1000;
    if (kind < 100) {  // exec
      ev.hdr.type = event::Type::kExec;
      event::ExecData d;
      d.filename = pr.exepath;
      d.exe = pr.exepath;
      d.args = {pr.exe, "serve.py"};
      d.cwd = pr.cwd;
      ev.data = d;
    } else if (kind < 430) {  // open
      ev.hdr.type = event::Type::kOpen;
      event::OpenData d;
      unsigned k = rng() % 8;
      d.path = kPaths[k];
      // Writes go to the checkpoint, the NCCL segment and the build lock only.
      bool writable = k == 2 || k == 4 || k == 7;
      d.flags = writable && rng() % 2 == 0 ? (O_WRONLY | O_CREAT) : O_RDONLY;
      d.result = 5;
      ev.data = d;
    } else if (kind < 620) {  // connect
      ev.hdr.type = event::Type::kConnect;
      event::ConnectData d;
      d.family = AF_INET;
      d.proto = event::L4::kTcp;
      d.saddr = ip("10.244." + std::to_string(c) + ".7");
      d.sport = static_cast<std::uint16_t>(30000 + rng() % 20000);
      d.daddr = ip("10.0." + std::to_string(rng() % 64) + ".5");
      d.dport = static_cast<std::uint16_t>(rng() % 2 ? 443 : 6379);
      d.result = 0;
      ev.data = d;
    } else if (kind < 860) {  // ioctl on the allocated GPU or nvidiactl
      ev.hdr.type = event::Type::kIoctl;
      event::IoctlData d;
      d.fd = 9;
      d.nr = 0x2A;  // NV_ESC_RM_CONTROL
      d.rm_control = 0x20800110;
      d.dev_major = 195;
      d.dev_minor = rng() % 2 ? 255u : static_cast<std::uint32_t>(c % 8);
      ev.data = d;
    } else if (kind < 950) {  // dns
      ev.hdr.type = event::Type::kDns;
      event::DnsData d;
      d.name = "svc" + std::to_string(rng() % 64) + ".cluster.local";
      d.qtype = 1;
      d.server = ip("10.96.0.10");
      ev.data = d;
    } else if (kind < 962) {  // dup2 of a pipe or file onto stdout/stderr, dup of a socket
      ev.hdr.type = event::Type::kDup;
      event::DupData d;
      if (rng() % 3 == 0) {
        d.syscall = event::Syscall::kDup;
        d.oldfd = 7;
        d.result = 12;
        d.family = AF_INET;
        d.proto = event::L4::kTcp;
        d.saddr = ip("10.244." + std::to_string(c) + ".7");
        d.sport = 8000;
        d.daddr = ip("10.244." + std::to_string(rng() % 50) + ".7");
        d.dport = static_cast<std::uint16_t>(30000 + rng() % 20000);
      } else {
        d.syscall = event::Syscall::kDup2;
        d.oldfd = 4;
        d.result = static_cast<std::int64_t>(1 + rng() % 2);
      }
      ev.data = d;
    } else if (kind < 972) {  // socket
      ev.hdr.type = event::Type::kSocket;
      event::SocketData d;
      unsigned k = rng() % 4;
      d.domain = k == 0 ? AF_UNIX : AF_INET;
      d.type = k == 3 ? SOCK_DGRAM : SOCK_STREAM | SOCK_CLOEXEC;
      d.result = 11;
      ev.data = d;
    } else if (kind < 980) {  // accept on the serving port
      ev.hdr.type = event::Type::kAccept;
      event::InboundData d;
      d.syscall = event::Syscall::kAccept4;
      d.fd = 6;
      d.flags = SOCK_CLOEXEC;
      d.result = 13;
      d.family = AF_INET;
      d.proto = event::L4::kTcp;
      d.laddr = ip("10.244." + std::to_string(c) + ".7");
      d.lport = 8000;
      d.raddr = ip("10.244." + std::to_string(rng() % 50) + ".9");
      d.rport = static_cast<std::uint16_t>(30000 + rng() % 20000);
      ev.data = d;
    } else if (kind < 996) {  // file calls: unlink, rename, chmod, mkdir
      event::FileOpData d;
      unsigned k = rng() % 16;
      if (k < 7) {
        ev.hdr.type = event::Type::kUnlink;
        d.syscall = event::Syscall::kUnlinkat;
        d.path = k < 4 ? "/tmp/torch_extensions/lock" : "/dev/shm/nccl-0";
      } else if (k < 12) {
        ev.hdr.type = event::Type::kRename;
        d.syscall = event::Syscall::kRename;
        d.path = "/workspace/ckpt/step-100.pt.tmp";
        d.path2 = "/workspace/ckpt/step-100.pt";
      } else if (k < 14) {
        ev.hdr.type = event::Type::kChmod;
        d.syscall = event::Syscall::kFchmodat;
        d.path = "/workspace/ckpt/step-100.pt";
        d.mode = 0644;
      } else {
        ev.hdr.type = event::Type::kMkdir;
        d.syscall = event::Syscall::kMkdirat;
        d.path = "/workspace/ckpt/step-200";
        d.mode = 0755;
      }
      ev.data = d;
    } else {  // listen/bind of the serving port
      ev.hdr.type = kind % 2 ? event::Type::kListen : event::Type::kBind;
      event::InboundData d;
      d.fd = 6;
      d.flags = ev.hdr.type == event::Type::kListen ? 128 : 0;
      d.family = AF_INET;
      d.proto = event::L4::kTcp;
      d.laddr = ip("0.0.0.0");
      d.lport = 8000;
      ev.data = d;
    }
    m->events.push_back(std::move(ev));
  }
  m->ctxs.reserve(m->events.size());
  for (const auto& ev : m->events) {
    state::EvalContext ctx;
    ctx.ev = &ev;
    ctx.proc = m->world.process(ev.hdr.pid);
    int c = static_cast<int>((ev.hdr.pid - 10000) / 100);
    ctx.container = &m->containers[c];
    ctx.pod = &m->pods[c];
    ctx.pod_container = &m->pods[c].containers[0];
    ctx.state = &m->world;
    m->ctxs.push_back(ctx);
  }
  return m;
}

// The rule sets: (a) bundled, (b) + falco_rules.yaml, (c) + all three stock
// files; and (a) with its sequences disabled, the baseline of what they cost.
enum class Set { kBundled, kFalco, kAllStock, kBundledNoSequences };

inline std::vector<std::string> rule_paths(Set set) {
  std::vector<std::string> v{"rules"};
  const char* env = std::getenv("VIGIL_FALCO_RULES_DIR");
  std::string dir = env ? env : "../shared/falco-rules";
  if (set == Set::kFalco || set == Set::kAllStock) v.push_back(dir + "/falco_rules.yaml");
  if (set == Set::kAllStock) {
    v.push_back(dir + "/falco-incubating_rules.yaml");
    v.push_back(dir + "/falco-sandbox_rules.yaml");
  }
  return v;
}

// Loads one rule set (from the repository root); `disabled` gets the
// sequences switched off for kBundledNoSequences.
inline rules::LoadResult load_set(Set set, std::size_t* disabled = nullptr) {
  rules::LoadOptions opts;
  if (set == Set::kBundledNoSequences) {
    auto all = rules::load_rules(rule_paths(set), opts);
    if (all.ruleset)
      for (const auto& s : all.ruleset->sequences()) opts.disabled_rules.insert(s.name);
  }
  if (disabled) *disabled = opts.disabled_rules.size();
  return rules::load_rules(rule_paths(set), opts);
}

}  // namespace vigil::bench
