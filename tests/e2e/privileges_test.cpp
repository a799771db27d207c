// `vigil run` with reduced capability sets and missing mounts (issue 14,
// "least privilege, per part"): the real binary under setpriv, whose bounding
// set is all a root process keeps across exec. Each test checks which parts
// come up, the one line each part that is off logs, and that what runs still
// alerts. docs/install.md, "Privileges", is the table these prove.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/util/caps.h"
#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

constexpr const char* kSetpriv = "/usr/bin/setpriv";

// The capabilities deploy/daemonset.yaml adds, in setpriv's spelling: no
// SYS_ADMIN (kernels >= 5.8 have CAP_BPF and CAP_PERFMON) and no
// SYS_RESOURCE (BPF memory is charged to the memory cgroup from 5.11).
const std::vector<std::string> kDaemonSetCaps = {"bpf",    "perfmon",    "net_admin",
                                                 "syslog", "sys_ptrace", "dac_read_search"};

std::vector<std::string> without(std::vector<std::string> caps, const std::string& cap) {
  std::erase(caps, cap);
  return caps;
}

// vigil under setpriv: only `caps` in the bounding set (so in its permitted
// and effective sets as root), none inheritable or ambient.
void limit_caps(Vigil& v, const std::vector<std::string>& caps) {
  std::string set = "-all";
  for (const std::string& c : caps) set += ",+" + c;
  v.run_under({kSetpriv, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=" + set, "--"});
}

std::string exec_rule(const std::string& name) {
  return "- rule: priv exec\n  desc: the test program ran\n  condition: evt.type = execve and proc.name = \"" + name +
         "\"\n  output: ran (proc.pid=%proc.pid proc.name=%proc.name)\n  priority: WARNING\n";
}

const char* kXidRule = R"(- rule: priv xid
  desc: an Xid line
  condition: evt.type = xid and gpu.xid = 79
  output: xid (gpu.xid=%gpu.xid gpu.pci=%gpu.pci)
  priority: CRITICAL
)";

// A DNS rule loads the cgroup socket programs (part bpf_cgroup); it never fires here.
std::string dns_rule(const std::string& name) {
  return "- rule: priv dns\n  desc: loads the cgroup programs\n  condition: evt.type = dns and proc.name = \"" + name +
         "\"\n  output: dns\n  priority: NOTICE\n";
}

pid_t run_once(const std::string& prog) {
  Child c = Child::spawn({prog});
  c.wait();
  return c.pid();
}

// The `ready` log line ("" when there is none).
std::string ready_line(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(" ready: ") != std::string::npos) return line;
  return "";
}

// The parts the ready line lists as off ("none" when all run), up to the
// next part of the line ("; posture: ...").
std::string parts_off(const std::string& log) {
  const std::string ready = ready_line(log);
  const auto at = ready.find("parts off: ");
  if (at == std::string::npos) return "<no parts off: in the ready line>";
  const std::string rest = ready.substr(at + 11);
  return rest.substr(0, rest.find(';'));
}

bool lists(const std::string& parts, const std::string& part) {
  std::string list = ", " + parts + ",";
  return list.find(", " + part + ",") != std::string::npos;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class e2ePrivileges : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    if (::access(kSetpriv, X_OK) != 0) GTEST_SKIP() << kSetpriv << " (util-linux) is needed to reduce capabilities";
    ASSERT_TRUE(dir_.ok());
    name_ = unique_name("pv");
    prog_ = dir_.install(VIGIL_E2E_ACTOR, name_);
  }
  void TearDown() override {
    if (fifo_fd_ >= 0) ::close(fifo_fd_);
  }

  // A FIFO that stands in for /dev/kmsg, held open for writing.
  std::string make_kmsg_fifo() {
    const std::string fifo = dir_.path() + "/kmsg";
    if (::mkfifo(fifo.c_str(), 0600) != 0) return "";
    fifo_fd_ = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    return fifo_fd_ >= 0 ? fifo : "";
  }
  void write_xid() {
    const std::string rec =
        "4,1,123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.\n";
    ASSERT_EQ(::write(fifo_fd_, rec.data(), rec.size()), static_cast<ssize_t>(rec.size())) << std::strerror(errno);
  }
  std::vector<std::string> args(const std::string& rules, const std::string& kmsg_path) {
    return {"-r",       rules,
            "-o",       "flight_recorder.enabled=false",
            "-o",       "sensor.kmsg_path=" + kmsg_path,
            "-o",       "state_dir=" + dir_.path() + "/state",
            "--format", "json"};
  }
  bool exec_alerts(Vigil& v) {
    const pid_t pid = run_once(prog_);
    return !v.alerts_where("priv exec", "proc.pid", pid, 20s).empty();
  }

  TempDir dir_;
  std::string name_;
  std::string prog_;
  int fifo_fd_ = -1;
};

// The DaemonSet's set, without CAP_SYS_ADMIN: every part that needs a
// capability runs (the tracing and cgroup programs, kmsg, /proc), both an
// exec and an Xid line alert, and the Critical one gets its flight-recorder
// capture (files written with none of a container's default capabilities,
// which the DaemonSet drops). This is the proof that SYS_ADMIN can go.
TEST_F(e2ePrivileges, TheDaemonSetSetWithoutSysAdminRunsEveryPart) {
  const std::string fifo = make_kmsg_fifo();
  ASSERT_FALSE(fifo.empty()) << std::strerror(errno);
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + kXidRule + dns_rule(name_));
  const std::string flight = dir_.path() + "/state/flight";
  Vigil v;
  limit_caps(v, kDaemonSetCaps);
  std::vector<std::string> a = args(rules, fifo);
  for (const std::string& o : {std::string("flight_recorder.enabled=true"), "flight_recorder.dir=" + flight,
                               std::string("flight_recorder.after_s=0")}) {
    a.push_back("-o");
    a.push_back(o);
  }
  ASSERT_TRUE(v.start(a));
  ASSERT_TRUE(v.wait_ready()) << v.diag();

  // The process really runs without CAP_SYS_ADMIN and CAP_SYS_RESOURCE.
  auto caps = util::parse_cap_eff(read_text("/proc/" + std::to_string(v.pid()) + "/status"));
  ASSERT_TRUE(caps) << v.diag();
  EXPECT_FALSE(caps->has(util::Cap::kSysAdmin));
  EXPECT_FALSE(caps->has(util::Cap::kSysResource));
  EXPECT_TRUE(caps->has(util::Cap::kBpf));

  const std::string log = v.stderr_text();
  const std::string off = parts_off(log);
  for (const char* part : {"bpf", "bpf_cgroup", "kmsg", "procfs"}) {
    EXPECT_FALSE(lists(off, part)) << part << " is off: " << off << v.diag();
    EXPECT_EQ(v.stderr_count(std::string("part ") + part + " off"), 0) << v.diag();
  }
  EXPECT_NE(ready_line(log).find("cgroup_skb/ingress"), std::string::npos) << v.diag();
  EXPECT_NE(ready_line(log).find("tp_btf/sched_process_exec"), std::string::npos) << v.diag();

  EXPECT_TRUE(exec_alerts(v)) << "no alert for the exec" << v.diag();
  write_xid();
  EXPECT_FALSE(v.alerts([](const json& a) { return a.value("rule", "") == "priv xid"; }, 20s).empty())
      << "no alert for the Xid line" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  std::error_code ec;
  std::size_t captures = 0;
  for (const auto& e : std::filesystem::directory_iterator(flight, ec)) captures += e.is_regular_file() ? 1 : 0;
  EXPECT_GE(captures, 1u) << "no flight-recorder capture in " << flight << v.diag();
}

// Without CAP_NET_ADMIN the cgroup socket programs stay out, saying so; the
// tracing programs run and alert.
TEST_F(e2ePrivileges, WithoutNetAdminTheTracingProgramsRunAlone) {
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + dns_rule(name_));
  Vigil v;
  limit_caps(v, without(kDaemonSetCaps, "net_admin"));
  ASSERT_TRUE(v.start(args(rules, dir_.path() + "/no-kmsg")));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_EQ(v.stderr_count("warning part bpf_cgroup off: the cgroup socket programs need CAP_NET_ADMIN (or "
                           "CAP_SYS_ADMIN); no DNS answers"),
            1)
      << v.diag();
  EXPECT_TRUE(lists(parts_off(v.stderr_text()), "bpf_cgroup")) << v.diag();
  EXPECT_FALSE(lists(parts_off(v.stderr_text()), "bpf")) << v.diag();
  EXPECT_EQ(ready_line(v.stderr_text()).find("cgroup_skb"), std::string::npos) << v.diag();
  EXPECT_TRUE(exec_alerts(v)) << "no alert for the exec" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// No capability at all: the sensor is off, naming CAP_BPF and CAP_PERFMON,
// and vigil runs on the kmsg reader alone (a FIFO standing in for
// /dev/kmsg), whose Xid line still alerts.
TEST_F(e2ePrivileges, WithoutBpfCapabilitiesItRunsOnKmsgAlone) {
  const std::string fifo = make_kmsg_fifo();
  ASSERT_FALSE(fifo.empty()) << std::strerror(errno);
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + kXidRule);
  Vigil v;
  limit_caps(v, {});
  ASSERT_TRUE(v.start(args(rules, fifo)));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_EQ(v.stderr_count("warning part bpf off: sensor: the kernel loads no BPF program for vigil without "
                           "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"),
            1)
      << v.diag();
  EXPECT_EQ(v.stderr_count("warning part procfs off: "), 1) << v.diag();
  const std::string off = parts_off(v.stderr_text());
  EXPECT_TRUE(lists(off, "bpf")) << off << v.diag();
  EXPECT_TRUE(lists(off, "procfs")) << off << v.diag();
  EXPECT_FALSE(lists(off, "kmsg")) << off << v.diag();
  write_xid();
  EXPECT_FALSE(v.alerts([](const json& a) { return a.value("rule", "") == "priv xid"; }, 20s).empty())
      << "no alert for the Xid line" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// Nothing can run (no capability, no kernel log): exit 1 before `ready`,
// one error line naming each event source and why it is off.
TEST_F(e2ePrivileges, WithNoEventSourceItRefusesNamingEachPart) {
  const std::string missing = dir_.path() + "/no-kmsg";
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + kXidRule);
  Vigil v;
  limit_caps(v, {});
  ASSERT_TRUE(v.start(args(rules, missing)));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 1) << v.diag();
  EXPECT_EQ(v.stderr_count("ready"), 0) << v.diag();
  EXPECT_EQ(v.stderr_count("error no event source can run, so vigil would see nothing: part bpf off: sensor: the "
                           "kernel loads no BPF program for vigil without CAP_BPF and CAP_PERFMON (or "
                           "CAP_SYS_ADMIN) (uid 0); part kmsg off: cannot open " +
                           missing + " (ENOENT): mount the host's /dev/kmsg"),
            1)
      << v.diag();
}

// No kernel log mounted: vigil runs without the kmsg part, says so once, and
// the sensor alerts.
TEST_F(e2ePrivileges, WithoutKmsgItRunsAndSaysSo) {
  const std::string missing = dir_.path() + "/no-kmsg";
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + kXidRule);
  Vigil v;
  limit_caps(v, kDaemonSetCaps);
  ASSERT_TRUE(v.start(args(rules, missing)));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_EQ(v.stderr_count("warning part kmsg off: cannot open " + missing +
                           " (ENOENT): mount the host's /dev/kmsg; GPU Xid errors from the kernel log are not seen"),
            1)
      << v.diag();
  EXPECT_TRUE(lists(parts_off(v.stderr_text()), "kmsg")) << v.diag();
  EXPECT_TRUE(exec_alerts(v)) << "no alert for the exec" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// The real /dev/kmsg without CAP_SYSLOG: refused where kernel.dmesg_restrict
// is 1 (the line names CAP_SYSLOG), read where it is 0.
TEST_F(e2ePrivileges, DevKmsgWithoutSyslogNamesTheCapability) {
  const std::string restrict = read_text("/proc/sys/kernel/dmesg_restrict");
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_) + kXidRule);
  Vigil v;
  limit_caps(v, without(kDaemonSetCaps, "syslog"));
  ASSERT_TRUE(v.start(args(rules, "/dev/kmsg")));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  if (restrict.starts_with("1")) {
    EXPECT_EQ(v.stderr_count("warning part kmsg off: cannot open /dev/kmsg (EPERM): needs CAP_SYSLOG; "), 1)
        << v.diag();
    EXPECT_TRUE(lists(parts_off(v.stderr_text()), "kmsg")) << v.diag();
  } else {
    EXPECT_EQ(v.stderr_count("part kmsg off"), 0) << v.diag();
  }
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// In a cluster (the API stand-in) on a node where the kubelet's pod-resources
// socket and /proc/driver/nvidia may be missing: each missing one is said
// once, naming the path and the mount, and vigil runs and alerts.
TEST_F(e2ePrivileges, MissingPodResourcesAndNvidiaAreSaidAndVigilRuns) {
  K8sStub api;
  if (std::string why = api.start(dir_); !why.empty()) GTEST_SKIP() << "no Kubernetes API stand-in: " << why;
  const std::string rules = dir_.write("rules.yaml", exec_rule(name_));
  Vigil v;
  limit_caps(v, kDaemonSetCaps);
  std::vector<std::string> a = args(rules, dir_.path() + "/no-kmsg");
  for (const auto& x : api.vigil_args()) a.push_back(x);
  ASSERT_TRUE(v.start(a));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  const std::string off = parts_off(v.stderr_text());
  EXPECT_FALSE(lists(off, "k8s")) << off << v.diag();

  struct stat st {};
  const char* sock = "/var/lib/kubelet/pod-resources/kubelet.sock";
  if (::stat(sock, &st) != 0) {
    EXPECT_EQ(v.stderr_count(std::string("warning part pod_resources off: cannot open ") + sock +
                             " (ENOENT): mount the host's /var/lib/kubelet/pod-resources; the kubelet's GPU "
                             "assignments are not seen"),
              1)
        << v.diag();
    EXPECT_TRUE(lists(off, "pod_resources")) << off << v.diag();
  }
  if (::stat("/proc/driver/nvidia/gpus", &st) != 0) {
    EXPECT_EQ(v.stderr_count("warning part gpu_inventory off: cannot open /proc/driver/nvidia/gpus (ENOENT): no "
                             "NVIDIA driver loaded on this node; "),
              1)
        << v.diag();
    EXPECT_TRUE(lists(off, "gpu_inventory")) << off << v.diag();
  } else {
    EXPECT_FALSE(lists(off, "gpu_inventory")) << off << v.diag();
  }
  EXPECT_TRUE(exec_alerts(v)) << "no alert for the exec" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
