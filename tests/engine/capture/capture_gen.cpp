// capture_gen: writes a synthetic capture of a busy GPU node, for the replay
// throughput measurement in docs/performance.md ("Replay").
//
//   capture_gen OUT.vcap EVENTS
//
// The node has eight GPUs, recorded first as the NVIDIA inventory a live
// capture starts with (PCI addresses, UUIDs, /dev/nvidia0-7), so replay
// resolves the pods' GPU allocations and the gpu.* fields as it would live.
// Eight inference/training pods, each given one GPU by UUID, plus host
// processes. Each process is forked, execs a program (python3, bash,
// nvidia-smi, curl, ...), opens /dev/nvidiactl and /dev/nvidiaN (its pod's
// GPU; host processes one by pid), issues NVIDIA ioctls, reports GPU usage,
// resolves and connects to in-cluster addresses, and exits. The mix is benign
// apart from a rare shell, so the alert rate is a realistic few per thousand.
// Deterministic (fixed seed).
#include <sys/socket.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>

#include "engine/capture/writer.h"

using namespace vigil;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: capture_gen OUT.vcap EVENTS\n");
    return 2;
  }
  const std::uint64_t total = std::strtoull(argv[2], nullptr, 10);
  capture::WriterOptions wo;
  wo.flush_interval_ns = 0;
  auto w = capture::CaptureWriter::open(argv[1], wo);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().message.c_str());
    return 1;
  }
  // An 8-GPU H100 node: GPUs in PCI order (NVML's index order), minor N for
  // /dev/nvidiaN; nvidia-uvm and nvidia-caps with dynamic majors.
  constexpr int kGpus = 8;
  constexpr std::array<const char*, kGpus> kPci = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                                                   "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  state::NvidiaInfo gpus;
  gpus.uvm_major = 510;
  gpus.caps_major = 511;
  for (int g = 0; g < kGpus; ++g) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08x-4c2e-9d1a-7b3f-%012llx", 0x5e1d7a00u + g, 0x1a2b3c4d5e60ull + g);
    gpus.gpus.push_back({uuid, kPci[g], static_cast<std::uint32_t>(g), "NVIDIA H100 80GB HBM3"});
  }
  if (auto s = (*w)->write_nvidia(gpus); !s) {  // before the pods, as live captures do
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }

  constexpr int kPods = 8;  // pod p has GPU p
  for (int p = 0; p < kPods; ++p) {
    state::Container c;
    c.id = std::string(63, 'a') + static_cast<char>('0' + p);
    c.runtime = state::ContainerRuntime::kContainerd;
    c.pod_uid = "pod-uid-" + std::to_string(p);
    c.cgroup_id = 10000 + p;
    c.name = "main";
    c.image = p % 2 ? "nvcr.io/nim/meta/llama3:1.0" : "ghcr.io/acme/train:2.3";
    (void)(*w)->write_container(c);
    state::Pod pod;
    pod.uid = c.pod_uid;
    pod.name = (p % 2 ? "llm-" : "train-") + std::to_string(p);
    pod.ns = p % 2 ? "inference" : "ml";
    pod.node = "gpu-node-1";
    pod.labels = {{"app", p % 2 ? "llm" : "train"}};
    state::PodContainer pc;
    pc.name = "main";
    pc.image = c.image;
    pc.id = c.id;
    pc.gpu_limit = 1;
    // The device plugin's envvar strategy: the UUID in NVIDIA_VISIBLE_DEVICES
    // and in the kubelet's pod-resources device ids.
    pc.nvidia_visible_devices = gpus.gpus[p].uuid;
    pc.gpu_devices = {gpus.gpus[p].uuid};
    pod.containers.push_back(pc);
    (void)(*w)->write_pod(pod);
    state::Process root;
    root.pid = 1000 + p;
    root.ppid = 1;
    root.comm = "python3";
    root.exe = "python3";
    root.exepath = "/usr/bin/python3";
    root.args = {"-m", "serve"};
    root.cgroup_id = c.cgroup_id;
    root.container_id = c.id;
    root.from_proc = true;
    (void)(*w)->write_process(root);
  }

  std::mt19937_64 rng(7);
  const char* programs[] = {
      "/usr/bin/python3", "/usr/bin/python3", "/usr/bin/nvidia-smi",    "/usr/bin/curl", "/bin/ls",
      "/usr/bin/python3", "/bin/cat",         "/usr/local/bin/torchrun"};
  std::uint64_t ts = 1'763'780'400'000'000'000ull;
  std::uint64_t n = 0;
  std::uint32_t next_pid = 20000;
  auto emit = [&](event::Event& ev) {
    ev.hdr.ts_ns = (ts += 1000);
    (void)(*w)->write_event(ev);
    ++n;
  };
  while (n < total) {
    int pod = static_cast<int>(rng() % (kPods + 1));  // kPods = host
    bool host = pod == kPods;
    std::uint32_t parent = host ? 1 : 1000 + pod;
    std::uint32_t pid = next_pid++;
    if (next_pid > 4'000'000) next_pid = 20000;
    event::Header h;
    h.pid = parent;
    h.tid = parent;
    h.ppid = 1;
    h.uid = 1000;
    h.gid = 1000;
    h.cgroup_id = host ? 1 : 10000 + pod;
    h.comm = "python3";
    event::Event fork{h, event::ForkData{pid, pid, false}};
    fork.hdr.type = event::Type::kFork;
    emit(fork);

    const char* prog = programs[rng() % 8];
    if (rng() % 1000 == 0) prog = "/bin/bash";  // the rare shell
    h.pid = h.tid = pid;
    h.ppid = parent;
    std::string p(prog);
    h.comm = p.substr(p.rfind('/') + 1).substr(0, 15);
    event::ExecData ex;
    ex.filename = prog;
    ex.exe = prog;
    ex.args = {h.comm, "--step", std::to_string(n % 1000)};
    ex.cwd = "/workspace";
    event::Event exec{h, ex};
    exec.hdr.type = event::Type::kExec;
    emit(exec);

    // The pod's GPU; a host process one of the eight (by pid, so the random
    // sequence, and with it the event mix, stays what it was).
    const std::uint32_t gpu = host ? pid % kGpus : static_cast<std::uint32_t>(pod);
    const std::pair<std::string, std::uint32_t> devs[] = {{"/dev/nvidiactl", 255},
                                                          {"/dev/nvidia" + std::to_string(gpu), gpu}};
    for (const auto& [dev, minor] : devs) {
      event::OpenData od{dev, 2, 0, 3, 195, minor, true};
      event::Event open{h, od};
      open.hdr.type = event::Type::kOpen;
      emit(open);
    }
    int ioctls = 4 + static_cast<int>(rng() % 8);
    for (int i = 0; i < ioctls; ++i) {
      event::IoctlData io;
      io.fd = 3;
      io.cmd = 0xc020462a;
      io.nr = i % 3 == 0 ? 0x2b : 0x2a;
      io.dev_major = 195;
      io.dev_minor = 255;
      io.rm_class = io.nr == 0x2b ? 0xc7c0 : 0;
      io.rm_control = io.nr == 0x2a ? 0x20800110 : 0;
      event::Event ioctl{h, io};
      ioctl.hdr.type = event::Type::kIoctl;
      emit(ioctl);
    }
    event::DnsData dns;
    dns.is_response = true;
    dns.name = "feature-store.ml.svc.cluster.local";
    dns.qtype = 1;
    event::IpAddr a;
    a.family = AF_INET;
    a.bytes = {10, 96, static_cast<std::uint8_t>(rng() % 8), 20};
    dns.answers = {a};
    dns.server.family = AF_INET;
    dns.server.bytes = {10, 96, 0, 10};
    dns.server_port = 53;
    event::Event dq{h, dns};
    dq.hdr.type = event::Type::kDns;
    emit(dq);
    event::ConnectData cd;
    cd.family = AF_INET;
    cd.proto = event::L4::kTcp;
    cd.daddr = a;
    cd.dport = 8080;
    cd.result = 0;
    event::Event conn{h, cd};
    conn.hdr.type = event::Type::kConnect;
    emit(conn);
    event::GpuUsageData gu;
    gu.interval_ns = 10'000'000'000;
    gu.entries = {{195, gpu, 0x2a, 1000 + rng() % 1000}};
    event::Event use{h, gu};
    use.hdr.type = event::Type::kGpuUsage;
    emit(use);
    event::Event exit{h, event::ExitData{0, 0}};
    exit.hdr.type = event::Type::kExit;
    emit(exit);
  }
  if (auto s = (*w)->close(); !s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  std::printf("%llu events, %llu bytes\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>((*w)->stats().bytes));
  return 0;
}
