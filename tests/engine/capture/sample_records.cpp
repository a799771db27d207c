#include "tests/engine/capture/sample_records.h"

#include <stdlib.h>
#include <sys/socket.h>

#include <filesystem>

#include "engine/capture/codec.h"

namespace vigil::capture::testing {
namespace {

event::Header header(std::uint64_t ts, event::Type type, std::uint32_t pid) {
  event::Header h;
  h.ts_ns = ts;
  h.type = type;
  h.pid = pid;
  h.tid = pid + 1;
  h.ppid = 1;
  h.uid = 1000;
  h.gid = 1001;
  h.cgroup_id = 0xabcdef12345;
  h.pid_ns = 4026531836u;
  h.mnt_ns = 4026531840u;
  h.net_ns = 4026531992u;
  h.comm = "python3";
  return h;
}

event::IpAddr ip4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  event::IpAddr ip;
  ip.family = AF_INET;
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

event::IpAddr ip6_last(std::uint8_t last) {
  event::IpAddr ip;
  ip.family = AF_INET6;
  ip.bytes[0] = 0xfd;
  ip.bytes[15] = last;
  return ip;
}

}  // namespace

event::Event sample_exec(std::uint64_t ts, std::uint32_t pid, std::uint32_t ppid, std::uint64_t cgroup_id,
                         std::string exe) {
  event::Event ev;
  ev.hdr = header(ts, event::Type::kExec, pid);
  ev.hdr.ppid = ppid;
  ev.hdr.cgroup_id = cgroup_id;
  event::ExecData d;
  d.filename = exe;
  d.exe = exe;
  d.args = {exe, "-c", "id"};
  d.cwd = "/workspace";
  ev.data = std::move(d);
  return ev;
}

std::vector<RecordData> sample_records() {
  using namespace event;
  std::vector<RecordData> out;

  state::Container c;
  c.id = std::string(64, 'a');
  c.runtime = state::ContainerRuntime::kContainerd;
  c.pod_uid = "0b6f1a2c-uid";
  c.cgroup_path = "kubepods.slice/kubepods-pod0b6f.slice/cri-containerd-aaaa.scope";
  c.cgroup_id = 0xabcdef12345;
  c.name = "trainer";
  c.image = "registry.example/trainer:1.2";
  c.image_id = "sha256:feed";
  c.privileged = true;
  out.emplace_back(c);

  state::Pod pod;
  pod.uid = "0b6f1a2c-uid";
  pod.name = "trainer-0";
  pod.ns = "ml";
  pod.node = "gpu-node-1";
  pod.labels = {{"app", "trainer"}, {"team", "research"}};
  pod.annotations = {{"note", "x=y"}};
  state::PodContainer pc;
  pc.name = "trainer";
  pc.image = "registry.example/trainer:1.2";
  pc.id = std::string(64, 'a');
  pc.gpu_limit = 2;
  pc.nvidia_visible_devices = "GPU-1,GPU-2";
  pc.gpu_devices = {"GPU-1", "GPU-2"};
  pc.privileged = true;
  pod.containers.push_back(pc);
  pod.resource_version = "12345";
  out.emplace_back(pod);

  state::Process p;
  p.pid = 4242;
  p.ppid = 4000;
  p.uid = 1000;
  p.gid = 1001;
  p.loginuid = 1000;
  p.comm = "python3";
  p.exe = "python3";
  p.exepath = "/usr/bin/python3.11";
  p.args = {"train.py", "--epochs", "3"};
  p.args_truncated = true;
  p.cwd = "/workspace";
  p.tty = 34816;
  p.cgroup_id = 0xabcdef12345;
  p.container_id = std::string(64, 'a');
  p.pid_ns = 1;
  p.mnt_ns = 2;
  p.net_ns = 3;
  p.vpid = 7;
  p.start_ts_ns = 1'700'000'000'000'000'000;
  p.exec_ts_ns = 1'700'000'000'000'000'100;
  p.stdin_is_socket = true;
  p.stdout_is_socket = true;
  p.from_proc = true;
  p.gpu_compute = true;
  p.gpu_devices_opened = 2;
  out.emplace_back(p);

  std::uint64_t ts = 1'700'000'001'000'000'000;
  {
    Event ev = sample_exec(ts++, 4242, 4000, 0xabcdef12345, "/bin/sh");
    auto& d = *ev.as<ExecData>();
    d.filename = "/tmp/run.sh";
    d.args_truncated = true;
    d.tty = 5;
    d.loginuid = 0;
    d.stdin_is_socket = true;
    d.stdout_is_socket = true;
    out.emplace_back(ev);
  }
  {
    Event ev{header(ts++, Type::kFork, 4242), ForkData{4243, 4244, true}};
    out.emplace_back(ev);
  }
  {
    Event ev{header(ts++, Type::kExit, 4243), ExitData{-3, 9}};
    out.emplace_back(ev);
  }
  {
    ConnectData d;
    d.family = AF_INET;
    d.proto = L4::kTcp;
    d.saddr = ip4(10, 0, 0, 5);
    d.sport = 40000;
    d.daddr = ip4(203, 0, 113, 9);
    d.dport = 3333;
    d.unix_path = "";
    d.result = -111;
    out.emplace_back(Event{header(ts++, Type::kConnect, 4242), d});
    d.family = AF_UNIX;
    d.proto = L4::kUnix;
    d.saddr = {};
    d.daddr = {};
    d.unix_path = "/run/containerd/containerd.sock";
    d.result = ConnectData::kResultUnknown;
    out.emplace_back(Event{header(ts++, Type::kConnect, 4242), d});
  }
  {
    OpenData d{"/dev/nvidia0", 0x80002, 0644, 7, 195, 0, true};
    out.emplace_back(Event{header(ts++, Type::kOpen, 4242), d});
  }
  {
    IoctlData d;
    d.fd = 7;
    d.cmd = 0xc020462a;
    d.nr = 0x2b;
    d.xfer = true;
    d.uvm = true;
    d.dev_major = 195;
    d.dev_minor = 255;
    d.rm_class = 0xc6c0;
    d.rm_control = 0x20800a4c;
    d.result = -22;
    d.rm_status = 0x1f;
    out.emplace_back(Event{header(ts++, Type::kIoctl, 4242), d});
  }
  {
    GpuUsageData d;
    d.interval_ns = 5'000'000'000;
    d.entries = {{195, 0, 0x2a, 1000}, {195, 1, 0x2b, 7}, {511, 0, 0x1, 1ull << 40}};
    out.emplace_back(Event{header(ts++, Type::kGpuUsage, 4242), d});
  }
  {
    XidData d;
    d.source = "kmsg";
    d.facility = 0;
    d.level = 4;
    d.pci = "0000:3b:00.0";
    d.code = 79;
    d.xid_pid = 4242;
    d.xid_comm = "python3";
    d.text = "pid=4242, name=python3, GPU has fallen off the bus.";
    out.emplace_back(Event{header(ts++, Type::kXid, 0), d});
  }
  {
    DnsData d;
    d.is_response = true;
    d.id = 0xbeef;
    d.name = "pool.minexmr.com";
    d.qtype = 28;
    d.rcode = 3;
    d.answers = {ip4(198, 51, 100, 1), ip6_last(9)};
    d.server = ip4(10, 96, 0, 10);
    d.server_port = 53;
    out.emplace_back(Event{header(ts++, Type::kDns, 4242), d});
  }
  {
    PayloadData d;
    d.family = AF_INET6;
    d.saddr = ip6_last(1);
    d.sport = 50000;
    d.daddr = ip6_last(2);
    d.dport = 4444;
    static constexpr char kStratum[] = "{\"method\":\"mining.subscribe\"}\0\xff\x01";
    d.bytes = std::string(kStratum, sizeof(kStratum) - 1);  // binary-safe: NUL and 0xff kept
    d.truncated = true;
    out.emplace_back(Event{header(ts++, Type::kPayload, 4242), d});
  }
  {
    BpfData d{5, 2, "kprobe_evil", 9};
    out.emplace_back(Event{header(ts++, Type::kBpf, 4242), d});
  }
  {
    Event ev{header(ts++, Type::kUnknown, 4242), std::monostate{}};
    out.emplace_back(ev);
  }
  out.emplace_back(PodRemoved{"0b6f1a2c-uid"});
  // Event types added with the event schema table (after the version 1
  // fixture was written: kSampleRecordsInV1Fixture stops before these).
  {
    FileOpData d;
    d.syscall = event::Syscall::kSymlinkat;
    d.path = "/etc/shadow";
    d.path2 = "innocent";
    d.fd = event::kAtFdcwd;
    d.fd2 = 7;
    d.result = 0;
    out.emplace_back(Event{header(ts++, Type::kSymlink, 4242), d});
  }
  {
    FileOpData d;
    d.syscall = event::Syscall::kFchmodat;
    d.path = "run.sh";
    d.fd = 5;
    d.mode = 04755;
    d.flags = 0x100;
    d.result = -13;
    out.emplace_back(Event{header(ts++, Type::kChmod, 4242), d});
  }
  {
    PtraceData d{16, 777, 0x7ffd0000, 0, true};
    out.emplace_back(Event{header(ts++, Type::kPtrace, 4242), d});
  }
  {
    SocketData d{17, 3 | 02000000, 768, 4};
    out.emplace_back(Event{header(ts++, Type::kSocket, 4242), d});
  }
  {
    DupData d;
    d.syscall = event::Syscall::kDup2;
    d.oldfd = 3;
    d.result = 1;
    d.family = AF_INET;
    d.proto = event::L4::kTcp;
    d.saddr = ip4(10, 0, 0, 2);
    d.sport = 40000;
    d.daddr = ip4(203, 0, 113, 9);
    d.dport = 4444;
    out.emplace_back(Event{header(ts++, Type::kDup, 4242), d});
  }
  {
    ModuleData d;
    d.syscall = event::Syscall::kFinitModule;
    d.fd = 3;
    d.args = "debug=1";
    d.result = -1;
    out.emplace_back(Event{header(ts++, Type::kModule, 4242), d});
  }
  {
    CredData d{event::Syscall::kSetresuid, 0, 1000, -1, 0};
    out.emplace_back(Event{header(ts++, Type::kSetuid, 4242), d});
  }
  {
    NsData d{5, 0x40000000, -1};
    out.emplace_back(Event{header(ts++, Type::kSetns, 4242), d});
  }
  {
    InboundData d;
    d.syscall = event::Syscall::kAccept4;
    d.fd = 3;
    d.flags = 02000000;
    d.result = 6;
    d.family = AF_INET6;
    d.proto = event::L4::kTcp;
    d.laddr = ip6_last(1);
    d.lport = 8080;
    d.raddr = ip6_last(7);
    d.rport = 51000;
    out.emplace_back(Event{header(ts++, Type::kAccept, 4242), d});
  }
  {
    SysCallData d{0, 1, 0, 0, "payload", 5};
    out.emplace_back(Event{header(ts++, Type::kMemfdCreate, 4242), d});
  }
  {
    CapsData d{1ull << 21, (1ull << 21) | 1, 0, 0};
    out.emplace_back(Event{header(ts++, Type::kCapset, 4242), d});
  }
  {
    // A signal to vigil (SIGKILL by kill()) and a kprobe opened with perf_event_open.
    SysCallData k{9, 4242, 0, 4243, "", 0};
    out.emplace_back(Event{header(ts++, Type::kVigilSignal, 4242), k});
    // A signal to another process (SIGKILL by tgkill to a thread of 4300).
    SysCallData kl{9, 4300, static_cast<std::uint64_t>(-6), 4301, "", 0};
    out.emplace_back(Event{header(ts++, Type::kKill, 4242), kl});
    SysCallData p{6, 0, static_cast<std::uint64_t>(-1), 2, "", 7};
    out.emplace_back(Event{header(ts++, Type::kPerfEventOpen, 4242), p});
  }
  {
    // Binary data, NUL included: captured byte for byte.
    PluginData d{"nvml", "nvml", "process_sample", 3, std::string("\x01\x00\xffsm=97", 8)};
    out.emplace_back(Event{header(ts++, Type::kPlugin, 4242), d});
  }
  {
    // The node's GPU posture and a pod asking for GPUs through its environment.
    PostureData n;
    n.kind = "node";
    n.changed = "toolkit vulnerable";
    n.driver_version = "580.95.05";
    n.toolkit_version = "1.17.7";
    n.vulnerable = "CVE-2025-23266,CVE-2025-23267";
    n.profiling_admin_only = 1;
    n.accept_envvar = 1;
    n.cuda_compat_hook = 0;
    n.runtime = "runc";
    n.ecc = "mixed";
    n.ecc_gpus = "0:GPU-a:on,1:GPU-b:off->on";  // appended after the first format
    out.emplace_back(Event{header(ts++, Type::kGpuPosture, 0), n});
    PostureData p;
    p.kind = "pod";
    p.pod_uid = "6b1f2c3d-0000-4000-8000-000000000040";
    p.container = "bench";
    p.visible_devices = "all";
    out.emplace_back(Event{header(ts++, Type::kGpuPosture, 0), p});
  }
  {
    // What a container sent to one destination in an interval (no process).
    EgressData e;
    e.family = AF_INET;
    e.proto = L4::kTcp;
    e.daddr = ip4(203, 0, 113, 60);
    e.dport = 443;
    e.bytes = 21'474'836;
    e.packets = 371;
    e.interval_ns = 10'000'000'000;
    e.window_bytes = 42'949'672;
    e.window_ns = 300'000'000'000;
    out.emplace_back(Event{header(ts++, Type::kEgress, 0), e});
  }
  return out;
}

state::NvidiaInfo sample_nvidia() {
  state::NvidiaInfo n;
  n.uvm_major = 508;
  n.caps_major = 509;
  n.gpus = {
      {"GPU-aaaaaaaa-1111-2222-3333-444444444444", "0000:1b:00.0", 2, "NVIDIA H100 80GB HBM3"},
      {"GPU-bbbbbbbb-1111-2222-3333-444444444444", "0000:3b:00.0", 0, "NVIDIA H100 80GB HBM3"},
      {"GPU-cccccccc-1111-2222-3333-444444444444", "0000:5b:00.0", 1, "NVIDIA H100 80GB HBM3"},
  };
  return n;
}

std::string encoded(const RecordData& r) {
  std::string s;
  append_record(r, s);
  return s;
}

FileInfo fixed_info() {
  FileInfo info;
  info.vigil_version = "0.1.0";
  info.hostname = "gpu-node-1";
  info.kernel = "6.1.0-test";
  info.created_ns = 1'700'000'000'000'000'000;
  info.boot_time_ns = 1'699'990'000'000'000'000;
  info.realtime_minus_monotonic_ns = 1'699'990'000'000'000'000;
  info.realtime_minus_boottime_ns = 1'699'990'000'000'000'000;
  return info;
}

WriterOptions fixed_options() {
  WriterOptions o;
  o.info = fixed_info();
  o.clock = [] { return std::uint64_t{0}; };
  o.flush_interval_ns = 0;
  return o;
}

ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "vigil-capture-XXXXXX").string();
  if (::mkdtemp(tmpl.data())) path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

}  // namespace vigil::capture::testing
