// The scenario rig shared by the scenario tests (scenario_test.cpp,
// baseline_scenario_test.cpp): stand-in pods (kubelet-style cgroups, a
// Kubernetes API stand-in, per-pod network namespaces with DNS and TCP
// stand-ins, a private /dev with NVIDIA nodes), the agent under test, and the
// Scenario fixture. Each test binary includes it once (its definitions live
// in an unnamed namespace of that binary's one test source).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cgroup.h"
#include "tests/support/net.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vigil_process.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kNode = "vigil-scenario-node";

using vigil::support::Child;
using vigil::support::PodCgroup;
using vigil::support::VigilProcess;

// ---------------------------------------------------------------------------
// Stand-in pods

struct PodSpec {
  std::string name{}, ns{}, uid{}, container{}, image{};
  std::map<std::string, std::string> labels{};
  int gpu_limit = 0;
  std::string visible{};  // NVIDIA_VISIBLE_DEVICES, "" = unset
  std::string id{};       // 64 hex
  std::string scope{};    // cgroup directory
};

json pod_json(const PodSpec& p) {
  json c = {{"name", p.container}, {"image", p.image}};
  if (p.gpu_limit > 0) c["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(p.gpu_limit)}}}};
  if (!p.visible.empty()) c["env"] = json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", p.visible}}});
  json labels = json::object();
  for (const auto& [k, v] : p.labels) labels[k] = v;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", p.name}, {"namespace", p.ns}, {"uid", p.uid}, {"resourceVersion", "7"}, {"labels", labels}}},
          {"spec", {{"nodeName", kNode}, {"containers", json::array({c})}}},
          {"status",
           {{"phase", "Running"},
            {"containerStatuses", json::array({{{"name", p.container},
                                                {"containerID", "containerd://" + p.id},
                                                {"image", p.image},
                                                {"ready", true}}})}}}};
}

std::string hex_id(int n) {
  char buf[65];
  for (int i = 0; i < 64; ++i) buf[i] = "0123456789abcdef"[(n * 7 + i * 13 + (i * i) % 11) % 16];
  buf[64] = 0;
  std::string s(buf);
  std::snprintf(buf, 9, "%08x", 0x5ce00000 + n);
  s.replace(0, 8, buf);
  return s;
}

// ---------------------------------------------------------------------------
// Kubernetes API stand-in: LIST returns the pods, WATCH stays open and silent,
// a PATCH or DELETE (vigil's label and delete_pod responses) is recorded and
// answered 200.

class ApiStandIn {
 public:
  explicit ApiStandIn(std::vector<json> pods) : pods_(std::move(pods)), listener_("127.0.0.1", 0) {
    if (listener_.ok()) th_ = std::thread([this] { loop(); });
  }
  ~ApiStandIn() {
    stop_ = true;
    listener_.shutdown();
    if (th_.joinable()) th_.join();
    for (int fd : watches_) close(fd);
  }
  int port() const { return listener_.port(); }
  bool listed() const { return lists_ > 0; }
  int lists() const { return lists_; }
  struct Change {
    std::string method, path, content_type, body;
  };
  // The PATCH and DELETE requests received so far.
  std::vector<Change> changes() const {
    std::lock_guard<std::mutex> lk(mu_);
    return changes_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd pf{listener_.fd(), POLLIN, 0};
      if (poll(&pf, 1, 200) != 1) continue;
      int c = accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        pollfd cp{c, POLLIN, 0};
        if (poll(&cp, 1, 2000) != 1) break;
        ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
      }
      std::string first = req.substr(0, req.find("\r\n"));
      if (first.rfind("PATCH ", 0) == 0 || first.rfind("DELETE ", 0) == 0) {
        change(c, req, first);
        continue;
      }
      if (first.find("watch=") != std::string::npos) {
        std::string h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        (void)write(c, h.data(), h.size());
        watches_.push_back(c);  // open and silent until the end
        continue;
      }
      json list = {
          {"apiVersion", "v1"}, {"kind", "PodList"}, {"metadata", {{"resourceVersion", "100"}}}, {"items", pods_}};
      std::string body = list.dump();
      std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;
      std::size_t off = 0;
      while (off < resp.size()) {
        ssize_t n = write(c, resp.data() + off, resp.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      close(c);
      ++lists_;
    }
  }
  // A header's value (name in lower case) in the request's head.
  static std::string header(const std::string& head, const std::string& name) {
    std::string lower = head;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto at = lower.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    const auto from = head.find_first_not_of(' ', at + 3 + name.size());
    return head.substr(from, head.find("\r\n", from) - from);
  }
  void change(int c, std::string req, const std::string& first) {
    const std::size_t head_end = req.find("\r\n\r\n") + 4;
    const std::string head = req.substr(0, head_end);
    std::size_t len = 0;
    if (auto v = header(head, "content-length"); !v.empty()) len = std::min<std::size_t>(std::stoul(v), 1 << 20);
    char buf[4096];
    while (req.size() < head_end + len) {
      pollfd cp{c, POLLIN, 0};
      if (poll(&cp, 1, 2000) != 1) break;
      ssize_t n = read(c, buf, sizeof(buf));
      if (n <= 0) break;
      req.append(buf, static_cast<std::size_t>(n));
    }
    Change ch;
    ch.method = first.substr(0, first.find(' '));
    const auto p0 = first.find(' ') + 1;
    ch.path = first.substr(p0, first.find(' ', p0) - p0);
    ch.content_type = header(head, "content-type");
    ch.body = req.substr(head_end, len);
    {
      std::lock_guard<std::mutex> lk(mu_);
      changes_.push_back(std::move(ch));
    }
    const std::string body = "{}";
    const std::string resp =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        "Content-Length: 2\r\n\r\n" +
        body;
    (void)write(c, resp.data(), resp.size());
    close(c);
  }

  std::vector<json> pods_;
  mutable std::mutex mu_;
  std::vector<Change> changes_;  // guarded by mu_
  vigil::support::TcpListener listener_;
  std::atomic<bool> stop_{false};
  std::atomic<int> lists_{0};
  std::vector<int> watches_;
  std::thread th_;
};

// ---------------------------------------------------------------------------
// The agent under test.

// Starts `vigil run` with the bundled rules, the API stand-in on `api_port`,
// `kmsg_fifo` as its kernel log and the suite's options (extra_args after
// them, e.g. --capture FILE), and waits up to 60 s for `ready`; false with
// the reason in `why` otherwise.
bool start_agent(VigilProcess& agent, int api_port, const std::string& kmsg_fifo, std::string& why,
                 const std::vector<std::string>& extra_args = {}) {
  // The stand-in workload is every pod's image program. Where the build tree
  // sits in a world-writable directory (a clone under /tmp), its path would
  // make it a "dropped" program to the spread rule; it is declared known, as
  // an operator declares their own programs (a copy of it at another path,
  // which the intrusion scenario drops, is still judged).
  const std::string known = kmsg_fifo + ".known.yaml";
  std::ofstream(known) << "- macro: user_known_spread_programs\n  condition: (proc.exepath = \"" VIGIL_WORKLOAD "\")\n";
  std::vector<std::string> args = {"-r",        "rules/",
                                   "-r",        "rules/optional/vigil_model_dirs.yaml",
                                   "-r",        known,
                                   "--k8s-api", "http://127.0.0.1:" + std::to_string(api_port),
                                   "-o",        "sensor.kmsg_path=" + kmsg_fifo,
                                   "-o",        "flight_recorder.enabled=false",
                                   "-o",        "sensor.usage_interval_ms=1000",
                                   "-o",        "sensor.egress_interval_ms=1000",
                                   "--format",  "json"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (!agent.start(args, {{"NODE_NAME", kNode}})) {
    why = "cannot start " VIGIL_BINARY;
    return false;
  }
  if (agent.wait_ready(60s)) return true;
  if (agent.exited()) {
    const int st = agent.wait_exit();
    why = "vigil run exited before it was ready (" + vigil::support::describe_wait_status(st) + "); stderr:\n" +
          agent.stderr_text();
  } else {
    why = "vigil did not log 'ready' within 60 s; stderr:\n" + agent.stderr_text();
  }
  return false;
}

// ---------------------------------------------------------------------------
// Running workloads inside a stand-in pod.

struct PodRun {
  // Addresses put on the pod's loopback (/32 or /128).
  std::vector<std::string> addrs = {"10.96.0.10",   "198.51.100.20",   "198.51.100.9", "198.51.100.70",
                                    "203.0.113.50", "169.254.169.254", "10.100.4.7",   "10.244.3.18"};
  std::map<std::string, std::string> dns;  // name -> IPv4 answer of the DNS stand-in at 10.96.0.10
  std::vector<std::string> tcp_sinks;      // "ADDR:PORT" accepting and reading connections
  std::vector<std::string> argv;           // the workload's command line (argv[0] = its path)
  std::string steps, child_steps;
  std::vector<std::string> env;  // "NAME=value" added to the workload's environment
  std::string cwd;               // the workload's working directory ("" = the test's)
};

void put_u16(std::string& s, std::uint16_t v) {
  s += static_cast<char>(v >> 8);
  s += static_cast<char>(v & 0xff);
}

// A DNS server on 10.96.0.10:53 answering A questions from a fixed table.
void dns_server(const std::map<std::string, std::string>& table) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, "10.96.0.10", &a.sin_addr);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) _exit(1);
  while (true) {
    unsigned char buf[512];
    sockaddr_in from{};
    socklen_t fl = sizeof(from);
    ssize_t n = recvfrom(s, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n < 17) continue;
    std::string name;
    std::size_t i = 12;
    while (i < static_cast<std::size_t>(n) && buf[i] != 0) {
      std::size_t len = buf[i];
      if (!name.empty()) name += '.';
      name.append(reinterpret_cast<char*>(buf + i + 1), std::min(len, static_cast<std::size_t>(n) - i - 1));
      i += len + 1;
    }
    std::size_t qend = i + 5;
    if (qend > static_cast<std::size_t>(n)) continue;
    std::string r(reinterpret_cast<char*>(buf), qend);
    r[2] = static_cast<char>(0x81);
    r[3] = static_cast<char>(0x80);
    auto it = table.find(name);
    if (it == table.end()) {
      r[3] = static_cast<char>(0x83);  // NXDOMAIN
    } else {
      r[7] = 1;
      r += "\xC0\x0C";
      put_u16(r, 1);
      put_u16(r, 1);
      r += std::string("\0\0\0\x3c", 4);
      put_u16(r, 4);
      in_addr ip{};
      inet_pton(AF_INET, it->second.c_str(), &ip);
      r.append(reinterpret_cast<char*>(&ip), 4);
    }
    sendto(s, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
  }
}

void tcp_sink(const std::string& ep) {
  auto c = ep.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(ep.substr(c + 1))));
  inet_pton(AF_INET, ep.substr(0, c).c_str(), &a.sin_addr);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(s, 8) != 0) _exit(1);
  while (true) {
    int x = accept(s, nullptr, nullptr);
    if (x < 0) continue;
    if (fork() == 0) {
      char buf[1024];
      while (read(x, buf, sizeof(buf)) > 0) {}
      _exit(0);
    }
    close(x);
  }
}

bool run_cmd(const std::vector<std::string>& argv) {
  const int st = Child::spawn(argv).wait();
  return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// Stand-in NVIDIA and kernel nodes in a private /dev: numbers of /dev/null.
bool private_dev() {
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=1m") != 0) return false;
  mkdir("/dev/nvidia-caps", 0755);
  mkdir("/dev/pts", 0755);
  if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666") != 0) return false;
  symlink("pts/ptmx", "/dev/ptmx");
  for (const char* n :
       {"/dev/null", "/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
        "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap12", "/dev/kmsg", "/dev/mem"}) {
    if (mknod(n, S_IFCHR | 0666, makedev(1, 3)) != 0) return false;
  }
  return true;
}

// Runs one workload in the pod (cgroup, private netns with the addresses,
// DNS and TCP stand-ins, private /dev). Returns the workload's pid and exit code.
std::pair<pid_t, int> run_in_pod(const PodSpec& pod, const PodRun& run) {
  int p[2];
  if (pipe(p) != 0) return {-1, -1};
  // The pod's cgroup, and a network namespace of its own with loopback up.
  Child outer = Child::run(
      [&] {
        close(p[0]);
        if (unshare(CLONE_NEWNS) != 0) _exit(90);
        for (const auto& a : run.addrs) {
          if (!run_cmd({"/usr/sbin/ip", "addr", "add", a + "/32", "dev", "lo"})) _exit(92);
        }
        if (!private_dev()) _exit(93);
        std::vector<pid_t> helpers;
        if (!run.dns.empty()) {
          pid_t h = fork();
          if (h == 0) dns_server(run.dns);
          helpers.push_back(h);
        }
        for (const auto& ep : run.tcp_sinks) {
          pid_t h = fork();
          if (h == 0) tcp_sink(ep);
          helpers.push_back(h);
        }
        usleep(100 * 1000);  // the stand-ins bind before the workload starts
        pid_t w = fork();
        if (w == 0) {
          setenv("VIGIL_STEPS", run.steps.c_str(), 1);
          if (!run.child_steps.empty()) setenv("VIGIL_CHILD_STEPS", run.child_steps.c_str(), 1);
          for (const auto& e : run.env) putenv(const_cast<char*>(e.c_str()));
          if (!run.cwd.empty() && chdir(run.cwd.c_str()) != 0) _exit(94);
          std::vector<char*> a;
          for (const auto& s : run.argv) a.push_back(const_cast<char*>(s.c_str()));
          a.push_back(nullptr);
          execv(a[0], a.data());
          _exit(127);
        }
        (void)write(p[1], &w, sizeof(w));
        int st = 0;
        waitpid(w, &st, 0);
        for (pid_t h : helpers) kill(h, SIGKILL);
        for (pid_t h : helpers) waitpid(h, nullptr, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
      },
      {.cgroup = pod.scope, .new_netns = true});
  close(p[1]);
  pid_t w = -1;
  if (read(p[0], &w, sizeof(w)) != sizeof(w)) w = -1;
  close(p[0]);
  const int st = outer.wait(120s);
  return {w, st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1};
}

// ---------------------------------------------------------------------------
// The suite: one agent for all scenarios.

// A test binary may give the suite's agent more arguments (a configuration
// written into the suite's temporary directory `tmp`, more rule files); set
// before the first test starts.
std::function<std::vector<std::string>(const std::string& tmp)> g_extra_agent_args;

struct Suite {
  std::string skip;  // non-empty: why the scenarios cannot run here
  std::unique_ptr<vigil::support::TempDir> tmp_dir;
  std::string tmp;
  std::map<std::string, PodSpec> pods;
  std::vector<std::unique_ptr<PodCgroup>> cgroups;  // the pods', in the order they were made
  std::unique_ptr<ApiStandIn> api;
  VigilProcess agent{VIGIL_BINARY};
  std::string fifo;
  int fifo_fd = -1;
  int kmsg_seq = 1000;

  std::string tool(const std::string& name) const { return tmp + "/bin/" + name; }

  void add_pod(PodSpec p) {
    int n = static_cast<int>(pods.size()) + 1;
    char uid[64];
    std::snprintf(uid, sizeof(uid), "5ce0a000-0000-4000-8000-%012d", n);
    p.uid = uid;
    p.id = hex_id(n);
    cgroups.push_back(std::make_unique<PodCgroup>(p.uid, p.id, vigil::support::QosClass::kGuaranteed));
    p.scope = cgroups.back()->scope();
    pods[p.name] = std::move(p);
  }

  void set_up() {
    if (geteuid() != 0) {
      skip = "scenario tests need root (they load eBPF programs and create cgroups and namespaces)";
      return;
    }
    if (access(VIGIL_BINARY, X_OK) != 0) {
      skip = std::string("the vigil binary is not built: ") + VIGIL_BINARY;
      return;
    }
    if (vigil::support::cgroup2_root().empty()) {
      skip = "no cgroup v2 hierarchy mounted";
      return;
    }
    tmp_dir = std::make_unique<vigil::support::TempDir>("vigil-scenario");
    if (!tmp_dir->ok()) {
      skip = std::string("FAIL: cannot make a temporary directory: ") + std::strerror(errno);
      return;
    }
    tmp = tmp_dir->path();
    fs::create_directories(tmp + "/bin");
    for (const char* n : {"xmrig", "vllm", "nvidia-smi", "runc", "worker", "bpfloader", "pt_main_thread", "etl",
                          "nvidia-ctk", "mknod", "raylet", "ray::IDLE", "rival", "tar", "ollama", "containerd"}) {
      fs::create_symlink(VIGIL_WORKLOAD, tool(n));
    }

    add_pod({.name = "miner-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "web-0",
             .ns = "shop",
             .container = "web",
             .image = "docker.io/library/python:3.12",
             .labels = {{"app", "web"}}});
    add_pod({.name = "train-1",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "llm-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.3",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "job-0",
             .ns = "batch",
             .container = "job",
             .image = "docker.io/library/python:3.12",
             .labels = {{"app", "job"}}});
    add_pod({.name = "llm-ok-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.3",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "1"});
    add_pod({.name = "pretrain-0",
             .ns = "research",
             .container = "pytorch",
             .image = "nvcr.io/nvidia/pytorch:24.08-py3",
             .labels = {{"app", "pretrain"}},
             .gpu_limit = 2,
             .visible = "0,1"});
    add_pod({.name = "etl-0",
             .ns = "batch",
             .container = "etl",
             .image = "registry.example.com/data/etl:7",
             .labels = {{"job-name", "etl"}}});
    // The sequences scenario's inference pod: no other scenario runs a shell there.
    add_pod({.name = "llm-seq-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.3",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "0"});
    // The forensics scenario's own pod, so no other scenario sees its alerts.
    add_pod({.name = "forensics-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    // The NVIDIA stack scenario's pods: one attacked, one benign.
    add_pod({.name = "gpu-stack-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "gpu-stack-ok-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    // The baselines scenario's own pods (baseline_scenario_test.cpp): the
    // benign inference server, training job and batch job, learnt and judged.
    add_pod({.name = "base-llm-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.4",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "1"});
    add_pod({.name = "base-train-0",
             .ns = "research",
             .container = "pytorch",
             .image = "nvcr.io/nvidia/pytorch:24.09-py3",
             .labels = {{"app", "pretrain"}},
             .gpu_limit = 2,
             .visible = "0,1"});
    add_pod({.name = "base-etl-0",
             .ns = "batch",
             .container = "etl",
             .image = "registry.example.com/data/etl:8",
             .labels = {{"job-name", "etl"}}});
    // The driver surface scenario's pods: one issuing a CUDA-like start-up,
    // one probing the driver.
    add_pod({.name = "cuda-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    // GPU faults: an Xid about a process that already exited.
    add_pod({.name = "fault-0",
             .ns = "research",
             .container = "hammer",
             .image = "ghcr.io/acme/hammer:1.0",
             .labels = {{"app", "hammer"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "probe-0",
             .ns = "ml",
             .container = "trainer",
             .image = "ghcr.io/acme/train:1.4",
             .labels = {{"app", "train"}},
             .gpu_limit = 1,
             .visible = "0"});
    // The AI-infrastructure scenario's pods: a Ray worker pod attacked and
    // one running ordinary tasks, an inference pod whose weights are stolen
    // and one loading them, a training job uploading its checkpoint.
    add_pod({.name = "ray-0",
             .ns = "ray",
             .container = "ray-worker",
             .image = "docker.io/rayproject/ray:2.9.0-py310-gpu",
             .labels = {{"ray.io/cluster", "raycluster"}, {"ray.io/node-type", "worker"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "ray-2",
             .ns = "ray",
             .container = "ray-worker",
             .image = "docker.io/rayproject/ray:2.9.0-py310-gpu",
             .labels = {{"ray.io/cluster", "raycluster"}, {"ray.io/node-type", "worker"}},
             .gpu_limit = 1,
             .visible = "1"});
    add_pod({.name = "ray-ok-0",
             .ns = "ray-ok",
             .container = "ray-worker",
             .image = "docker.io/rayproject/ray:2.9.0-py310-gpu",
             .labels = {{"ray.io/cluster", "raycluster"}, {"ray.io/node-type", "worker"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "llm-steal-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.3",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "llm-push-0",
             .ns = "serving",
             .container = "ollama",
             .image = "docker.io/ollama/ollama:0.6.5",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "0"});
    add_pod({.name = "llm-load-ok-0",
             .ns = "serving",
             .container = "vllm",
             .image = "docker.io/vllm/vllm-openai:v0.6.3",
             .labels = {{"app.kubernetes.io/component", "inference"}},
             .gpu_limit = 1,
             .visible = "1"});
    add_pod({.name = "ckpt-ok-0",
             .ns = "finetune",
             .container = "pytorch",
             .image = "nvcr.io/nvidia/pytorch:24.08-py3",
             .labels = {{"job-name", "finetune"}},
             .gpu_limit = 1,
             .visible = "0"});
    for (const auto& cg : cgroups) {
      if (!cg->ok()) {
        skip = "cannot create the kubelet-style cgroup: " + cg->error();
        return;
      }
    }

    fifo = tmp + "/kmsg";
    mkfifo(fifo.c_str(), 0600);
    fifo_fd = open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // held open: vigil never sees EOF

    std::vector<json> items;
    for (const auto& [name, p] : pods) items.push_back(pod_json(p));
    api = std::make_unique<ApiStandIn>(items);
    std::string why;
    const std::vector<std::string> extra = g_extra_agent_args ? g_extra_agent_args(tmp) : std::vector<std::string>{};
    if (!start_agent(agent, api->port(), fifo, why, extra)) {
      skip = "FAIL: " + why;
      return;
    }
    // The pod list must be in vigil's state before any workload runs.
    for (int i = 0; i < 100 && !api->listed(); ++i) std::this_thread::sleep_for(100ms);
    std::this_thread::sleep_for(1500ms);
  }

  void tear_down() {
    agent.stop();
    api.reset();
    if (fifo_fd >= 0) close(fifo_fd);
    while (!cgroups.empty()) cgroups.pop_back();  // the last made first: the slice they share goes last
    tmp_dir.reset();
  }

  void kmsg(int prefix, const std::string& text) { kmsg_to(fifo_fd, prefix, text); }
  // The same record into another agent's kernel-log FIFO.
  void kmsg_to(int fd, int prefix, const std::string& text) {
    std::string rec = std::to_string(prefix) + "," + std::to_string(++kmsg_seq) + ",123456789,-;" + text + "\n";
    (void)write(fd, rec.data(), rec.size());
  }
};

std::string dump(const std::vector<json>& v) {
  std::string out;
  for (const auto& j : v) out += j.dump() + "\n";
  return out;
}

// The pid of a running process named `comm` in the pod's container cgroup; 0
// when none shows up within `wait`.
[[maybe_unused]] pid_t pid_in_pod(const std::string& comm, const PodSpec& pod, std::chrono::milliseconds wait = 5s) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      std::string n = e.path().filename();
      if (n.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream c(e.path() / "comm");
      std::string name;
      std::getline(c, name);
      if (name != comm) continue;
      std::ifstream cg(e.path() / "cgroup");
      std::string all((std::istreambuf_iterator<char>(cg)), std::istreambuf_iterator<char>());
      if (all.find(pod.id) != std::string::npos) return std::stoi(n);
    }
    std::this_thread::sleep_for(100ms);
  }
  return 0;
}

// `vigil replay CAPTURE -r RULES` run to its end: its exit code (-1 when it
// did not exit normally within a minute), its alerts and its log.
struct Replay {
  int code = -1;
  std::vector<json> alerts;
  std::string log;
};
[[maybe_unused]] Replay replay(const std::string& capture, const std::string& rules) {
  VigilProcess v(VIGIL_BINARY);
  Replay r;
  if (!v.start_command("replay", {capture, "-r", rules})) return r;
  const int st = v.wait_exit(60s);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.alerts = v.alerts([](const json&) { return true; });
  r.log = v.stderr_text();
  return r;
}

Suite* g_suite = nullptr;

class Scenario : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_suite = new Suite();
    g_suite->set_up();
  }
  static void TearDownTestSuite() {
    g_suite->tear_down();
    delete g_suite;
    g_suite = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(g_suite);
    if (g_suite->skip.rfind("FAIL: ", 0) == 0) FAIL() << g_suite->skip;
    if (!g_suite->skip.empty()) GTEST_SKIP() << g_suite->skip;
  }
  Suite& s() { return *g_suite; }
  const PodSpec& pod(const std::string& n) { return s().pods.at(n); }

  // Alerts of `rule` for pod `pod_name`, waiting up to 10 s for the first.
  std::vector<json> alerts_for(const std::string& rule, const std::string& pod_name,
                               std::chrono::milliseconds wait = 10s) {
    return s().agent.alerts(
        [&](const json& a) {
          return a.value("rule", "") == rule && a.contains("output_fields") &&
                 a["output_fields"].value("k8s.pod.name", json()) == pod_name;
        },
        wait);
  }
  void expect_alert(const std::string& rule, const std::string& pod_name, const std::string& priority) {
    auto got = alerts_for(rule, pod_name);
    ASSERT_FALSE(got.empty()) << "no '" << rule << "' alert for pod " << pod_name << "\nagent log:\n"
                              << s().agent.stderr_text();
    EXPECT_EQ(got[0].value("priority", ""), priority) << got[0].dump();
    EXPECT_EQ(got[0]["output_fields"].value("k8s.ns.name", json()), pod(pod_name).ns) << got[0].dump();
    EXPECT_EQ(got[0]["output_fields"].value("container.id", json()), pod(pod_name).id.substr(0, 12)) << got[0].dump();
    auto tags = got[0].value("tags", json::array());
    EXPECT_FALSE(tags.empty()) << got[0].dump();
  }
  // Every alert about the given pods or pids (after letting the pipeline drain).
  std::vector<json> any_alert(const std::set<std::string>& pods, const std::set<long>& pids) {
    std::this_thread::sleep_for(3s);
    return s().agent.alerts([&](const json& a) {
      if (!a.contains("output_fields")) return false;
      const auto& f = a["output_fields"];
      auto pn = f.value("k8s.pod.name", json());
      if (pn.is_string() && pods.count(pn.get<std::string>())) return true;
      auto pid = f.value("proc.pid", json());
      return pid.is_number() && pids.count(pid.get<long>());
    });
  }
};

}  // namespace
