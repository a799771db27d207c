// End-to-end tests of self-protection (issue 15, tag `tamper`): the real
// `vigil run` with the bundled rules (a copy of rules/vigil_rules.yaml, so
// that writing to it touches no source file), the real BPF programs, the
// Kubernetes API stand-in's pod "c" in its kubelet-style cgroup. An intruder
// enumerates BPF programs from the pod, signals and ptraces vigil from the
// host, opens vigil's rules for writing: each is one alert. Benign actions
// (reading the rules, a SIGHUP reload, signals between other processes)
// raise nothing.
//
// Needs root and a kernel with BTF (label integration); skipped otherwise.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

const char* const kTamperRules[] = {"BPF activity in container",
                                    "BPF objects enumerated by unexpected process",
                                    "BPF program loaded by unexpected process",
                                    "Signal sent to vigil",
                                    "Ptrace attached to vigil",
                                    "vigil files modified",
                                    "Kernel tracing opened by unexpected process",
                                    "Tracing file system written"};

class e2eTamper : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    if (std::string why = api_.start(dir_); !why.empty()) GTEST_SKIP() << why;
    cgroup_.emplace(K8sStub::kStablePodUid, K8sStub::stable_container_id());
    ASSERT_TRUE(cgroup_->ok()) << cgroup_->error();
    std::ifstream in(std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml");
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty());
    rules_ = dir_.write("vigil_rules.yaml", text.str());
    std::vector<std::string> args = {
        "-r",       rules_, "-o", "flight_recorder.enabled=false", "-o", "state_dir=" + dir_.path() + "/state",
        "--format", "json"};
    for (const auto& a : api_.vigil_args()) args.push_back(a);
    ASSERT_TRUE(v_.start(args));
    ASSERT_TRUE(v_.wait_ready()) << "vigil did not get ready" << v_.diag();
    ASSERT_TRUE(api_.wait_script_done()) << api_.requests() << v_.diag();
    std::this_thread::sleep_for(1s);  // the watcher's last page drained into the state
  }

  // Runs the actor (a copy named after `role`) with `steps`, in the pod's
  // cgroup or on the host; its name and exit status.
  std::pair<std::string, int> act(const std::string& role, const std::vector<std::string>& steps, bool in_pod) {
    std::string name = unique_name(role);
    std::string path = dir_.install(VIGIL_E2E_ACTOR, name);
    std::vector<std::string> argv = {path};
    argv.insert(argv.end(), steps.begin(), steps.end());
    SpawnOptions o;
    if (in_pod) o.cgroup = cgroup_->scope();
    Child c = Child::spawn(argv, o);
    return {name, c.wait()};
  }

  // The tamper alerts naming `name` as proc.name.
  std::vector<json> alerts_for(const std::string& name, std::chrono::milliseconds wait) {
    return v_.alerts([&](const json& a) { return alert_of(a, kTamperRules, name); }, wait);
  }

  TempDir dir_;
  K8sStub api_;
  std::optional<PodCgroup> cgroup_;
  Vigil v_;
  std::string rules_;
};

// bpf(BPF_PROG_GET_NEXT_ID) walked from a pod: one alert, however many ids.
TEST_F(e2eTamper, BpfEnumerationFromAPodIsOneAlert) {
  const auto [name, st] = act("enum", {"bpfenum", "bpfenum"}, true);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto got = alerts_for(name, 20s);
  ASSERT_FALSE(got.empty()) << v_.diag();
  got = alerts_for(name, 2s);  // anything late
  ASSERT_EQ(got.size(), 1u) << v_.diag();
  const json& a = got.front();
  EXPECT_EQ(a.value("rule", ""), "BPF activity in container");
  EXPECT_EQ(a.value("priority", ""), "Critical");
  EXPECT_EQ(field(a, "evt.arg.cmd"), "BPF_PROG_GET_NEXT_ID") << a.dump();
  EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// SIGUSR1 and a ptrace seize at vigil from the host: an alert each, and
// vigil, which ignores SIGUSR1, goes on.
TEST_F(e2eTamper, SignalAndPtraceAtVigilAlert) {
  const std::string pid = std::to_string(v_.pid());
  const auto [killer, kst] = act("kill", {"kill", pid, std::to_string(SIGUSR1)}, false);
  ASSERT_TRUE(WIFEXITED(kst) && WEXITSTATUS(kst) == 0) << Child::what(kst);
  auto got = alerts_for(killer, 20s);
  ASSERT_EQ(got.size(), 1u) << v_.diag();
  EXPECT_EQ(got[0].value("rule", ""), "Signal sent to vigil");
  EXPECT_EQ(field(got[0], "evt.arg.sig"), "SIGUSR1") << got[0].dump();
  EXPECT_EQ(field(got[0], "evt.arg.pid"), pid) << got[0].dump();
  EXPECT_FALSE(v_.exited()) << "SIGUSR1 ended vigil" << v_.diag();

  const auto [tracer, tst] = act("trace", {"ptseize", pid}, false);
  ASSERT_TRUE(WIFEXITED(tst) && WEXITSTATUS(tst) == 0) << Child::what(tst);
  got = alerts_for(tracer, 20s);
  ASSERT_EQ(got.size(), 1u) << v_.diag();
  EXPECT_EQ(got[0].value("rule", ""), "Ptrace attached to vigil");
  EXPECT_EQ(field(got[0], "evt.arg.request"), "PTRACE_SEIZE") << got[0].dump();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// Opening vigil's rules file for writing (even without writing) alerts.
TEST_F(e2eTamper, OpeningItsRulesForWritingAlerts) {
  const auto [writer, st] = act("wr", {"openw", rules_}, false);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto got = alerts_for(writer, 20s);
  ASSERT_EQ(got.size(), 1u) << v_.diag();
  EXPECT_EQ(got[0].value("rule", ""), "vigil files modified");
  EXPECT_EQ(field(got[0], "fd.name"), rules_) << got[0].dump();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// Benign: reading the rules, a SIGHUP reload from the host, a process
// signalling its own child. Then a marker (BPF enumeration from the pod): once
// its alert is out, the benign actions were processed before it.
TEST_F(e2eTamper, BenignActionsRaiseNothing) {
  const auto [reader, rst] = act("rd", {"open", rules_}, false);
  ASSERT_TRUE(WIFEXITED(rst) && WEXITSTATUS(rst) == 0) << Child::what(rst);
  const auto [hup, hst] = act("hup", {"kill", std::to_string(v_.pid()), std::to_string(SIGHUP)}, false);
  ASSERT_TRUE(WIFEXITED(hst) && WEXITSTATUS(hst) == 0) << Child::what(hst);
  const auto [parent, pst] = act("par", {"spawn", "/bin/sh", "sh", "-c", "sleep 5 & kill $!; wait"}, false);
  ASSERT_TRUE(WIFEXITED(pst)) << Child::what(pst);
  ASSERT_TRUE(v_.wait_stderr("reloaded")) << v_.diag();
  const auto [marker, mst] = act("mark", {"bpfenum"}, true);
  ASSERT_TRUE(WIFEXITED(mst) && WEXITSTATUS(mst) == 0) << Child::what(mst);
  ASSERT_FALSE(alerts_for(marker, 20s).empty()) << v_.diag();
  for (const std::string& n : {reader, hup, parent, std::string("sh"), std::string("sleep")}) {
    EXPECT_TRUE(alerts_for(n, 0ms).empty()) << n << v_.diag();
  }
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// Replay agrees with live: a capture of a run in which vigil's rules are
// opened for writing, vigil is sent SIGUSR1 and ptraced, replayed with the
// same rule file (vigil.file takes vigil's paths from the replay's own -r),
// gives the same tamper alerts.
TEST(e2eTamperReplay, ACaptureReplaysToTheSameTamperAlerts) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::ifstream in(std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string rules = dir.write("vigil_rules.yaml", text.str());
  const std::string cap = dir.path() + "/live.vcap";
  Vigil live;
  ASSERT_TRUE(live.start({"-r", rules, "-o", "flight_recorder.enabled=false", "-o",
                          "state_dir=" + dir.path() + "/state", "--format", "json", "--capture", cap}));
  ASSERT_TRUE(live.wait_ready()) << live.diag();
  const std::string pid = std::to_string(live.pid());
  const std::string name = unique_name("rp");
  const std::string path = dir.install(VIGIL_E2E_ACTOR, name);
  Child c = Child::spawn({path, "openw", rules, "kill", pid, std::to_string(SIGUSR1), "ptseize", pid}, {});
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto ours = [&](const json& a) {
    const json& f = a.at("output_fields");
    return f.contains("proc.name") && f["proc.name"] == name;
  };
  auto rules_of = [](const std::vector<json>& alerts) {
    std::vector<std::string> out;
    for (const auto& a : alerts) out.push_back(a.value("rule", ""));
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::string> want = {"Ptrace attached to vigil", "Signal sent to vigil", "vigil files modified"};
  for (int i = 0; i < 200 && rules_of(live.alerts(ours)).size() < want.size(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(rules_of(live.alerts(ours)), want) << live.diag();
  EXPECT_EQ(live.stop(), 0) << live.diag();

  Vigil replay;
  ASSERT_TRUE(replay.start_command("replay", {cap, "-r", rules}));
  const int rst = replay.wait_exit(60s);
  ASSERT_TRUE(WIFEXITED(rst) && WEXITSTATUS(rst) == 0) << replay.diag();
  EXPECT_EQ(rules_of(replay.alerts(ours)), want) << replay.diag();
}

}  // namespace
}  // namespace vigil::e2e
