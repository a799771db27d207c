// End-to-end test of per-workload baselines (issue 15 part 2,
// docs/baselines.md): the real `vigil run` with baseline.enabled, the bundled
// rules and rules/baseline/inference_baseline.yaml, a stand-in inference pod
// (the Kubernetes API stand-in's pod "c", made an inference pod by the tuning
// macro), and a benign "server" that connects to a cluster service, writes
// its state file and starts its worker.
//
//   1. agent A learns the benign run; `vigil baseline lock --all` locks the
//      profile while A runs, and A picks the lock up from the file;
//   2. agent B starts from the locked profile, records a capture, and sees
//      the benign run again (no baseline alert: the false-positive count) and
//      the attack variants (a new program, a new destination, a new file
//      written: one alert each);
//   3. `vigil replay --baseline` of B's capture with a copy of the profiles
//      gives B's alerts, uuid for uuid, and leaves the copy untouched.
//
// Needs root and a kernel with BTF (label integration); skipped otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

namespace fs = std::filesystem;

const char* const kBaselineRules[] = {
    "Program outside the workload baseline", "Connection outside the workload baseline",
    "File written outside the workload baseline", "GPU class outside the workload baseline",
    "New GPU compute context then connection outside the workload baseline"};

bool is_baseline_rule(const json& a) {
  for (const char* r : kBaselineRules)
    if (a.value("rule", "") == r) return true;
  return false;
}

class e2eBaseline : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    if (std::string why = api_.start(dir_); !why.empty()) GTEST_SKIP() << why;
    cgroup_.emplace(K8sStub::kStablePodUid, K8sStub::stable_container_id());
    ASSERT_TRUE(cgroup_->ok()) << cgroup_->error();
    app_ = dir_.path() + "/app/";
    fs::create_directories(app_);
    bdir_ = dir_.path() + "/baseline";
    // Pod "c" is an inference pod; the watched paths are the test's own.
    tuning_ = dir_.write("tuning.yaml", R"(
- macro: user_known_inference_pods
  condition: (k8s.pod.name = c)
  override: {condition: replace}
- list: vigil_baseline_watched_paths
  items: [)" + app_ + R"(]
  override: {items: replace}
)");
    config_ =
        dir_.write("vigil.yaml", "flight_recorder: {enabled: false}\nbaseline:\n  enabled: true\n  dir: " + bdir_ +
                                     "\n  learn_for_s: 0\n  save_interval_s: 1\n  watch_paths: [" + app_ + "]\n");
    server_ = unique_name("srv");
    server_path_ = dir_.install(VIGIL_E2E_ACTOR, server_);
    worker_ = unique_name("wrk");
    worker_path_ = dir_.install(VIGIL_E2E_ACTOR, worker_);
    tool_ = unique_name("tool");
    tool_path_ = dir_.install(VIGIL_E2E_ACTOR, tool_);
  }

  std::vector<std::string> rule_args() const {
    return {"-r", std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml",
            "-r", std::string(VIGIL_SOURCE_ROOT) + "/rules/baseline/inference_baseline.yaml",
            "-r", tuning_};
  }

  void start(Vigil& v, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = rule_args();
    for (const auto& a : {"-c", config_.c_str(), "--format", "json"}) args.emplace_back(a);
    for (const auto& a : api_.vigil_args()) args.push_back(a);
    for (const auto& a : extra) args.push_back(a);
    ASSERT_TRUE(v.start(args));
    ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
    ASSERT_TRUE(v.wait_stderr("baselines on:")) << v.diag();
    // The file rule's paths reach the sensor's open filter: its writes are
    // sent because of its own paths, not because another rule names /tmp.
    EXPECT_EQ(v.stderr_text().find("'File written outside the workload baseline'"), std::string::npos) << v.diag();
    ASSERT_TRUE(api_.wait_script_done()) << api_.requests() << v.diag();
    std::this_thread::sleep_for(1s);  // the watcher's last page drained into the state
  }

  int run_in_pod(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.cgroup = cgroup_->scope();
    return Child::spawn(argv, o).wait();
  }

  // The benign day: a cluster service, the state file, the worker.
  void benign_run() {
    const int st = run_in_pod({server_path_, "connect", "127.0.1.5", "16379", "write", app_ + "state", "spawn",
                               worker_path_, worker_, "note", "idle"});
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  }

  // `vigil baseline ARGS...` run to its end: exit code and stdout.
  std::pair<int, std::string> baseline_cmd(const std::vector<std::string>& args) {
    Vigil cli;
    if (!cli.start_command("baseline", args)) return {-1, ""};
    const int st = cli.wait_exit(30s);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, cli.stdout_text() + cli.stderr_text()};
  }

  TempDir dir_;
  K8sStub api_;
  std::optional<PodCgroup> cgroup_;
  std::string app_, bdir_, tuning_, config_;
  std::string server_, server_path_, worker_, worker_path_, tool_, tool_path_;
};

TEST_F(e2eBaseline, LearnLockByCommandDeviationsAlertAndReplayAgrees) {
  const std::string key = "registry.example/c:1";
  // 1. Learning, then the lock by command while agent A runs.
  {
    Vigil a;
    start(a);
    benign_run();
    // The profile is saved within a second or two (save_interval_s: 1).
    std::string listed;
    for (int i = 0; i < 100 && listed.find(server_) == std::string::npos; ++i) {
      std::this_thread::sleep_for(200ms);
      auto [rc, out] = baseline_cmd({"show", "--dir", bdir_, "--workload", key});
      listed = rc == 0 ? out : "";
    }
    ASSERT_NE(listed.find(server_path_), std::string::npos) << listed << a.diag();
    EXPECT_NE(listed.find(worker_path_), std::string::npos) << listed;
    EXPECT_NE(listed.find("127.0.1.0/24:16379/tcp"), std::string::npos) << listed;
    EXPECT_NE(listed.find(app_ + "state"), std::string::npos) << listed;
    EXPECT_NE(listed.find("state:        learning"), std::string::npos) << listed;
    auto [rc, out] = baseline_cmd({"lock", "--dir", bdir_, "--workload", key});
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("locked: " + key), std::string::npos) << out;
    EXPECT_TRUE(a.wait_stderr("baseline: locked " + key + " (command)", 1, 10s)) << a.diag();
    // Locked in A: a new program in the pod is a deviation at once.
    ASSERT_EQ(run_in_pod({tool_path_, "note", "x"}), 0);
    auto dev = a.alerts_where("Program outside the workload baseline", "proc.name", tool_, 20s);
    ASSERT_FALSE(dev.empty()) << a.diag();
    EXPECT_EQ(a.stop(), 0) << a.diag();
  }
  auto [lrc, listed] = baseline_cmd({"list", "--dir", bdir_});
  ASSERT_EQ(lrc, 0) << listed;
  EXPECT_NE(listed.find(key + "\tlocked"), std::string::npos) << listed;

  // The profiles as agent B will find them, for the replay.
  const std::string snapshot = dir_.path() + "/snapshot";
  fs::copy(bdir_, snapshot, fs::copy_options::recursive);

  // 2. Agent B: the benign day again, then the attacks.
  const std::string cap = dir_.path() + "/b.vcap";
  Vigil b;
  start(b, {"--capture", cap});
  benign_run();
  benign_run();
  ASSERT_EQ(run_in_pod({server_path_, "connect", "127.0.2.9", "14444"}), 0);          // another /24
  ASSERT_EQ(run_in_pod({server_path_, "write", app_ + "evil.so"}), 0);                // a new file
  ASSERT_EQ(run_in_pod({server_path_, "spawn", tool_path_, tool_, "note", "x"}), 0);  // a new program
  ASSERT_FALSE(b.alerts_where("Connection outside the workload baseline", "proc.name", server_, 20s).empty())
      << b.diag();
  ASSERT_FALSE(b.alerts_where("File written outside the workload baseline", "proc.name", server_, 20s).empty())
      << b.diag();
  ASSERT_FALSE(b.alerts_where("Program outside the workload baseline", "proc.name", tool_, 20s).empty()) << b.diag();
  std::this_thread::sleep_for(1s);
  // The benign runs came before the attacks: every baseline alert is an attack's.
  std::vector<json> benign;
  int attacks = 0;
  for (const json& a : b.alerts([](const json& x) { return is_baseline_rule(x); })) {
    const std::string fd = field(a, "fd.name"), name = field(a, "proc.name");
    const bool attack = fd.find("->127.0.2.9:14444") != std::string::npos || fd == app_ + "evil.so" || name == tool_;
    if (attack) {
      ++attacks;
      EXPECT_EQ(field(a, "baseline.workload"), key) << a.dump();
      EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
    } else {
      benign.push_back(a);
    }
  }
  EXPECT_TRUE(benign.empty()) << "the benign runs raised baseline alerts:\n" << benign.front().dump();
  EXPECT_EQ(attacks, 3) << b.diag();
  ASSERT_EQ(b.stop(), 0) << b.diag();
  const std::vector<json> live = b.alerts([](const json&) { return true; });

  // 3. Replay with the snapshot, read only: the same alerts, uuid for uuid.
  const auto before = fs::last_write_time(snapshot + "/registry.example%2Fc%3A1.json");
  Vigil r;
  std::vector<std::string> args = {cap};
  for (const auto& a : rule_args()) args.push_back(a);
  for (const auto& a : {"-c", config_.c_str(), "--baseline", snapshot.c_str()}) args.emplace_back(a);
  ASSERT_TRUE(r.start_command("replay", args));
  const int st = r.wait_exit(60s);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << r.diag();
  const std::vector<json> replayed = r.alerts([](const json&) { return true; });
  std::map<std::string, json> live_m, replay_m;
  for (const auto& a : live) live_m[a.value("uuid", "")] = {a["rule"], a["output_fields"]};
  for (const auto& a : replayed) replay_m[a.value("uuid", "")] = {a["rule"], a["output_fields"]};
  EXPECT_EQ(live_m, replay_m) << "live:\n" << b.stdout_text() << "replay:\n" << r.stdout_text();
  int replayed_baseline = 0;
  for (const auto& a : replayed) replayed_baseline += is_baseline_rule(a) ? 1 : 0;
  EXPECT_EQ(replayed_baseline, 3);
  EXPECT_EQ(fs::last_write_time(snapshot + "/registry.example%2Fc%3A1.json"), before);
  // Without --baseline the baseline rules have nothing to judge.
  Vigil plain;
  args.resize(args.size() - 2);
  ASSERT_TRUE(plain.start_command("replay", args));
  ASSERT_EQ(plain.wait_exit(60s), 0) << plain.diag();
  EXPECT_TRUE(plain.alerts([](const json& x) { return is_baseline_rule(x); }).empty()) << plain.stdout_text();
}

// A corrupt profile is refused by name at start; the agent runs and learns
// the others.
TEST_F(e2eBaseline, CorruptProfileIsRefusedByNameAndTheAgentRuns) {
  fs::create_directories(bdir_);
  const std::string bad = dir_.write("baseline/registry.example%2Fc%3A1.json", "{\"format\": \"vigil-baseline\", ");
  Vigil v;
  start(v);
  EXPECT_NE(v.stderr_text().find("baseline profile refused: " + bad + ": not valid JSON"), std::string::npos)
      << v.diag();
  benign_run();
  // The workload's profile replaces the refused file at the next save.
  std::string shown;
  for (int i = 0; i < 50 && shown.find(server_path_) == std::string::npos; ++i) {
    std::this_thread::sleep_for(200ms);
    shown = baseline_cmd({"show", "--dir", bdir_, "--workload", "registry.example/c:1"}).second;
  }
  EXPECT_NE(shown.find(server_path_), std::string::npos) << shown << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
