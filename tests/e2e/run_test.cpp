// End-to-end tests of `vigil run`: the real binary, the real BPF programs,
// real processes. Each test writes a precise rule file, starts vigil, waits
// for `ready`, makes the activity, stops vigil with SIGTERM and checks the
// JSON alerts on its stdout and its exit code.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

// The options every test passes: no flight recorder, its own rule file.
std::vector<std::string> base_args(const std::string& rules) {
  return {"-r", rules, "-o", "flight_recorder.enabled=false", "--format", "json"};
}

// Every test runs as root (or is skipped) with a temporary directory of its own.
class e2eRun : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
  }

  // Starts the Kubernetes API stand-in and makes the kubelet-style cgroup of
  // its stable pod. Skips the test when the stand-in cannot run here (no
  // python3 or openssl) and fails it when the cgroup cannot be made; false
  // then, and the test returns.
  bool start_api_and_pod_cgroup() {
    if (std::string why = api_.start(dir_); !why.empty()) {
      [&] { GTEST_SKIP() << why; }();
      return false;
    }
    cgroup_.emplace(K8sStub::kStablePodUid, K8sStub::stable_container_id());
    EXPECT_TRUE(cgroup_->ok()) << cgroup_->error();
    return cgroup_->ok();
  }

  // A copy of the actor in the test's directory under a unique name made
  // from `role`: {name, path}.
  std::pair<std::string, std::string> install_actor(const std::string& role) const {
    std::string name = unique_name(role);
    std::string path = dir_.install(VIGIL_E2E_ACTOR, name);
    return {name, path};
  }

  TempDir dir_;
  K8sStub api_;
  std::optional<PodCgroup> cgroup_;
};

// 1. exec argv and ancestry: grandparent -> parent -> leaf, three copies of
//    the actor under unique names; the leaf's alert names all three.
TEST_F(e2eRun, ExecArgvAndAncestry) {
  const std::string gp = unique_name("gp"), par = unique_name("par"), leaf = unique_name("leaf");
  const std::string gp_path = dir_.install(VIGIL_E2E_ACTOR, gp);
  const std::string par_path = dir_.install(VIGIL_E2E_ACTOR, par);
  const std::string leaf_path = dir_.install(VIGIL_E2E_ACTOR, leaf);
  ASSERT_FALSE(leaf_path.empty());
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e exec with ancestry
  desc: the leaf program run by its parent
  condition: evt.type = execve and proc.name = ")" + leaf +
                                                         R"(" and proc.pname = ")" + par + R"("
  output: >
    leaf ran (proc.name=%proc.name proc.cmdline=%proc.cmdline proc.args=%proc.args
    proc.exepath=%proc.exepath proc.pid=%proc.pid proc.ppid=%proc.ppid proc.pname=%proc.pname
    proc.pcmdline=%proc.pcmdline proc.aname[2]=%proc.aname[2] proc.apid[2]=%proc.apid[2])
  priority: WARNING
)");
  Vigil v;
  ASSERT_TRUE(v.start(base_args(rules)));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();

  // gp spawns par, par spawns leaf with an argument holding a space.
  Child c = Child::spawn({gp_path, "spawn", par_path, par, "spawn", leaf_path, leaf, "note", "with space"});
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the process chain failed: " << Child::what(st);

  auto got = v.alerts([](const json& a) { return a.value("rule", "") == "e2e exec with ancestry"; }, 20s);
  ASSERT_FALSE(got.empty()) << "no alert for the leaf's exec" << v.diag();
  const json& a = got.front();
  EXPECT_EQ(a.value("priority", ""), "Warning");
  EXPECT_EQ(field(a, "proc.name"), leaf);
  EXPECT_EQ(field(a, "proc.cmdline"), leaf + " note with space") << a.dump();
  EXPECT_EQ(field(a, "proc.args"), "note with space") << a.dump();
  EXPECT_EQ(field(a, "proc.exepath"), leaf_path) << a.dump();
  EXPECT_EQ(field(a, "proc.pname"), par) << a.dump();
  EXPECT_EQ(field(a, "proc.pcmdline"), par + " spawn " + leaf_path + " " + leaf + " note with space") << a.dump();
  EXPECT_EQ(field(a, "proc.aname[2]"), gp) << a.dump();
  EXPECT_EQ(field(a, "proc.apid[2]"), std::to_string(c.pid())) << a.dump();
  EXPECT_EQ(got.size(), 1u) << "one exec, one alert" << v.diag();

  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 2. A connect from a process in a kubelet-style cgroup, in its own network
//    namespace, is attributed to the container and the pod the API serves.
TEST_F(e2eRun, ConnectFromAPodIsAttributedToItsContainerAndPod) {
  if (!start_api_and_pod_cgroup()) return;
  const auto [name, prog] = install_actor("conn");
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e pod connect
  desc: a connect by the test program
  condition: evt.type = connect and proc.name = ")" + name +
                                                         R"(" and fd.sport = 47123
  output: >
    pod connect (proc.name=%proc.name proc.pid=%proc.pid fd.name=%fd.name fd.sip=%fd.sip
    fd.sport=%fd.sport container.id=%container.id container.full_id=%container.full_id
    container.name=%container.name container.type=%container.type k8s.pod.name=%k8s.pod.name
    k8s.ns.name=%k8s.ns.name k8s.pod.uid=%k8s.pod.uid)
  priority: NOTICE
)");
  auto args = base_args(rules);
  for (const auto& a : api_.vigil_args()) args.push_back(a);
  Vigil v;
  ASSERT_TRUE(v.start(args));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  ASSERT_TRUE(api_.wait_script_done()) << "the pod watcher did not get through the API script; requests:\n"
                                       << api_.requests() << v.diag();
  std::this_thread::sleep_for(1s);  // the watcher's last page drained into the state

  SpawnOptions o;
  o.cgroup = cgroup_->scope();
  o.new_netns = true;
  Child c = Child::spawn({prog, "connect", "127.0.0.1", "47123"}, o);
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the connecting program failed: " << Child::what(st);

  auto got = v.alerts_where("e2e pod connect", "proc.pid", c.pid(), 20s);
  ASSERT_FALSE(got.empty()) << "no alert for the connect" << v.diag();
  const json& a = got.front();
  EXPECT_EQ(field(a, "fd.sip"), "127.0.0.1") << a.dump();
  EXPECT_EQ(field(a, "fd.sport"), "47123") << a.dump();
  EXPECT_EQ(field(a, "container.id"), K8sStub::stable_container_id().substr(0, 12)) << a.dump();
  EXPECT_EQ(field(a, "container.full_id"), K8sStub::stable_container_id()) << a.dump();
  EXPECT_EQ(field(a, "container.type"), "containerd") << a.dump();
  EXPECT_EQ(field(a, "container.name"), "main") << a.dump();
  EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
  EXPECT_EQ(field(a, "k8s.ns.name"), K8sStub::kStablePodNamespace) << a.dump();
  EXPECT_EQ(field(a, "k8s.pod.uid"), K8sStub::kStablePodUid) << a.dump();

  EXPECT_EQ(v.stop(), 0) << v.diag();
  // The watcher authenticated with the token file.
  EXPECT_NE(api_.requests().find("Bearer e2e-token"), std::string::npos) << api_.requests();
}

// 3. An open and an NV_ESC_RM_ALLOC of AMPERE_COMPUTE_A on a stand-in
//    /dev/nvidia0 (a node named nvidia0 with /dev/null's numbers, in a private
//    /dev of the process's own mount namespace, so the host's /dev is untouched).
TEST_F(e2eRun, OpenAndRmAllocOnAStandInNvidiaNode) {
  struct stat null_st {};
  ASSERT_EQ(::stat("/dev/null", &null_st), 0);
  const std::string node = "/dev/nvidia0";
  const auto [name, prog] = install_actor("gpu");
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e nvidia open
  desc: the test program opens the stand-in node
  condition: evt.type in (open, openat) and proc.name = ")" +
                                                         name + R"(" and fd.name = ")" + node + R"("
  output: >
    nvidia open (proc.pid=%proc.pid fd.name=%fd.name gpu.device=%gpu.device gpu.index=%gpu.index
    gpu.major=%gpu.major gpu.minor=%gpu.minor evt.is_open_write=%evt.is_open_write)
  priority: NOTICE
- rule: e2e nvidia alloc
  desc: the test program allocates an RM class on the stand-in node
  condition: evt.type = ioctl and proc.name = ")" + name +
                                                         R"(" and gpu.ioctl = NV_ESC_RM_ALLOC
  output: >
    nvidia alloc (proc.pid=%proc.pid gpu.ioctl=%gpu.ioctl gpu.ioctl.nr=%gpu.ioctl.nr gpu.class=%gpu.class
    gpu.class.name=%gpu.class.name gpu.class.kind=%gpu.class.kind evt.failed=%evt.failed)
  priority: NOTICE
)");
  Vigil v;
  ASSERT_TRUE(v.start(base_args(rules)));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();

  SpawnOptions o;
  o.private_dev_nodes = {"nvidia0"};
  Child c = Child::spawn({prog, "nvalloc", node, "c6c0"}, o);
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the GPU program failed: " << Child::what(st);

  auto opens = v.alerts_where("e2e nvidia open", "proc.pid", c.pid(), 20s);
  ASSERT_FALSE(opens.empty()) << "no alert for the open of " << node << v.diag();
  const json& op = opens.front();
  EXPECT_EQ(field(op, "fd.name"), node);
  EXPECT_EQ(field(op, "gpu.device"), node) << op.dump();
  EXPECT_EQ(field(op, "gpu.index"), "0") << op.dump();
  EXPECT_EQ(field(op, "gpu.major"), std::to_string(major(null_st.st_rdev))) << op.dump();
  EXPECT_EQ(field(op, "gpu.minor"), std::to_string(minor(null_st.st_rdev))) << op.dump();
  EXPECT_EQ(field(op, "evt.is_open_write"), "true") << op.dump();

  auto allocs = v.alerts_where("e2e nvidia alloc", "proc.pid", c.pid(), 20s);
  ASSERT_FALSE(allocs.empty()) << "no alert for the RM_ALLOC ioctl" << v.diag();
  const json& a = allocs.front();
  EXPECT_EQ(field(a, "gpu.ioctl"), "NV_ESC_RM_ALLOC") << a.dump();
  EXPECT_EQ(field(a, "gpu.ioctl.nr"), "43") << a.dump();
  EXPECT_EQ(field(a, "gpu.class"), std::to_string(0xC6C0)) << a.dump();
  EXPECT_EQ(field(a, "gpu.class.name"), "AMPERE_COMPUTE_A") << a.dump();
  EXPECT_EQ(field(a, "gpu.class.kind"), "compute") << a.dump();
  // /dev/null's driver refuses the call.
  EXPECT_EQ(field(a, "evt.failed"), "true") << a.dump();
  EXPECT_EQ(allocs.size(), 1u) << "one allocation, one alert" << v.diag();

  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 4. An Xid line written to /dev/kmsg naming a live process becomes an alert
//    with the code, the PCI address and that process.
TEST_F(e2eRun, XidLineOnDevKmsgNamesTheProcess) {
  const auto [name, prog] = install_actor("xid");
  // The process the Xid names: started before the rule file exists, so its pid can go in the rule.
  SpawnOptions o;
  o.stdin_pipe = true;
  Child victim = Child::spawn({prog, "wait", "sleep", "0"}, o);
  ASSERT_GT(victim.pid(), 0);
  const std::string pid = std::to_string(victim.pid());
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e xid
  desc: an Xid naming the test process
  condition: evt.type = xid and gpu.xid.pid = )" + pid + R"( and gpu.xid.comm = ")" +
                                                         name + R"("
  output: >
    xid (gpu.xid=%gpu.xid gpu.pci=%gpu.pci gpu.xid.text=%gpu.xid.text gpu.xid.source=%gpu.xid.source
    gpu.xid.comm=%gpu.xid.comm proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline
    proc.exepath=%proc.exepath)
  priority: CRITICAL
)");
  Vigil v;
  ASSERT_TRUE(v.start(base_args(rules)));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();

  int kfd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(kfd, 0) << "/dev/kmsg: " << std::strerror(errno);
  const std::string line =
      "<4>NVRM: Xid (PCI:0000:3b:00): 79, pid=" + pid + ", name=" + name + ", GPU has fallen off the bus.\n";
  const ssize_t w = ::write(kfd, line.data(), line.size());
  ::close(kfd);
  ASSERT_EQ(w, static_cast<ssize_t>(line.size())) << std::strerror(errno);

  auto got = v.alerts([](const json& a) { return a.value("rule", "") == "e2e xid"; }, 20s);
  ASSERT_FALSE(got.empty()) << "no alert for the Xid line" << v.diag();
  const json& a = got.front();
  EXPECT_EQ(a.at("output_fields").value("gpu.xid", json()), 79) << a.dump();
  EXPECT_EQ(field(a, "gpu.pci"), "0000:3b:00") << a.dump();
  EXPECT_EQ(field(a, "gpu.xid.text"), "GPU has fallen off the bus.") << a.dump();
  EXPECT_EQ(field(a, "gpu.xid.source"), "kmsg") << a.dump();
  EXPECT_EQ(field(a, "gpu.xid.comm"), name) << a.dump();
  EXPECT_EQ(field(a, "proc.pid"), pid) << a.dump();
  EXPECT_EQ(field(a, "proc.name"), name) << a.dump();
  EXPECT_EQ(field(a, "proc.cmdline"), name + " wait sleep 0") << a.dump();
  EXPECT_EQ(field(a, "proc.exepath"), prog) << a.dump();

  victim.poke();
  EXPECT_EQ(victim.wait(), 0);
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 5. A process that started before vigil is known from /proc: its connect
//    after `ready` carries its name, executable and command line.
TEST_F(e2eRun, ProcessOlderThanVigilIsKnown) {
  const auto [name, prog] = install_actor("old");
  SpawnOptions o;
  o.stdin_pipe = true;
  Child old = Child::spawn({prog, "wait", "connect", "127.0.0.1", "47124"}, o);
  ASSERT_GT(old.pid(), 0);
  // Let it exec before vigil seeds its process table.
  for (int i = 0; i < 200 && read_file("/proc/" + std::to_string(old.pid()) + "/comm") != name + "\n"; ++i)
    std::this_thread::sleep_for(10ms);
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e old process connect
  desc: a connect by the process that predates vigil
  condition: evt.type = connect and fd.sport = 47124
  output: >
    old connect (proc.pid=%proc.pid proc.name=%proc.name proc.exepath=%proc.exepath
    proc.cmdline=%proc.cmdline proc.pname=%proc.pname)
  priority: NOTICE
)");
  Vigil v;
  ASSERT_TRUE(v.start(base_args(rules)));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();

  old.poke();
  const int st = old.wait();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the old process failed: " << Child::what(st);

  auto got = v.alerts_where("e2e old process connect", "proc.pid", old.pid(), 20s);
  ASSERT_FALSE(got.empty()) << "no alert for the old process's connect" << v.diag();
  const json& a = got.front();
  EXPECT_EQ(field(a, "proc.name"), name) << a.dump();
  EXPECT_EQ(field(a, "proc.exepath"), prog) << a.dump();
  EXPECT_EQ(field(a, "proc.cmdline"), name + " wait connect 127.0.0.1 47124") << a.dump();
  std::string self_comm = read_file("/proc/self/comm");
  if (!self_comm.empty() && self_comm.back() == '\n') self_comm.pop_back();
  EXPECT_EQ(field(a, "proc.pname"), self_comm) << a.dump();

  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 7. Aggregation (docs/outputs.md#aggregation): the same program started
//    five times under a rule with `aggregate` is one alert at once and, when
//    vigil stops, one summary that counts the other four.
TEST_F(e2eRun, RepeatsOfAnAggregatedRuleAreOneAlertAndASummaryAtTheStop) {
  const auto [name, prog] = install_actor("agg");
  ASSERT_FALSE(prog.empty());
  const std::string rules = dir_.write("rules.yaml", R"y(
- rule: e2e aggregated exec
  desc: the same program, again and again
  condition: evt.type = execve and proc.name = ")y" + name +
                                                         R"y("
  output: "aggregated program ran (proc.pid=%proc.pid proc.name=%proc.name)"
  priority: WARNING
  aggregate: {by: [proc.exepath], window: 1h}
)y");
  Vigil v;
  ASSERT_TRUE(v.start(base_args(rules)));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  for (int i = 0; i < 5; ++i) {
    Child c = Child::spawn({prog, "note", std::to_string(i)});
    const int st = c.wait();
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  }
  auto is_rule = [](const json& a) { return a.value("rule", "") == "e2e aggregated exec"; };
  ASSERT_EQ(v.alerts(is_rule, 20s).size(), 1u) << "the first start, at once" << v.diag();
  std::this_thread::sleep_for(1s);  // the other starts reach the rules
  EXPECT_EQ(v.alerts(is_rule).size(), 1u) << "the repeats are counted, not sent" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  const auto got = v.alerts(is_rule);
  ASSERT_EQ(got.size(), 2u) << v.diag();
  EXPECT_FALSE(got[0].contains("aggregate"));
  EXPECT_EQ(field(got[0], "proc.exepath"), prog) << "the key's field is in the alert: " << got[0].dump();
  ASSERT_TRUE(got[1].contains("aggregate")) << got[1].dump();
  const json& g = got[1]["aggregate"];
  EXPECT_EQ(g.value("count", 0), 4) << got[1].dump();
  EXPECT_EQ(g.value("total", 0), 5) << got[1].dump();
  EXPECT_EQ(g.value("reason", ""), "end") << got[1].dump();
  EXPECT_EQ(g.value("first_uuid", ""), got[0].value("uuid", "")) << got[1].dump();
  EXPECT_EQ(field(got[1], "proc.cmdline"), "<missing>") << "not printed by the rule";
  EXPECT_EQ(got[1]["output_fields"].value("proc.name", ""), name);
}

// 6. A process that execs and exits at once in a kubelet-style cgroup is
//    still attributed to its container and pod (nothing of it is left in /proc
//    by the time its exec is processed).
TEST_F(e2eRun, ShortLivedProcessInAPodIsAttributed) {
  if (!start_api_and_pod_cgroup()) return;
  const auto [name, prog] = install_actor("blink");
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e short-lived exec
  desc: the test program ran
  condition: evt.type = execve and proc.name = ")" + name +
                                                         R"("
  output: >
    blink (proc.pid=%proc.pid proc.name=%proc.name container.id=%container.id
    k8s.pod.name=%k8s.pod.name k8s.ns.name=%k8s.ns.name)
  priority: NOTICE
)");
  // This time the API comes from a configuration file (-c), and the flight
  // recorder writes to the test's directory.
  const std::string config =
      dir_.write("vigil.yaml", api_.config_yaml() + "flight_recorder:\n  dir: " + dir_.path() + "/flight\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  ASSERT_TRUE(api_.wait_script_done()) << "the pod watcher did not get through the API script; requests:\n"
                                       << api_.requests() << v.diag();
  std::this_thread::sleep_for(1s);

  // The actor with no steps: exec, then exit straight away.
  SpawnOptions o;
  o.cgroup = cgroup_->scope();
  std::vector<pid_t> pids;
  for (int i = 0; i < 5; ++i) {
    Child c = Child::spawn({prog}, o);
    const int st = c.wait();
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
    pids.push_back(c.pid());
  }
  for (pid_t pid : pids) {
    auto got = v.alerts_where("e2e short-lived exec", "proc.pid", pid, 20s);
    ASSERT_FALSE(got.empty()) << "no alert for the exec of pid " << pid << v.diag();
    const json& a = got.front();
    EXPECT_EQ(field(a, "container.id"), K8sStub::stable_container_id().substr(0, 12)) << a.dump();
    EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
    EXPECT_EQ(field(a, "k8s.ns.name"), K8sStub::kStablePodNamespace) << a.dump();
  }
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
