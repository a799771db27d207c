// End-to-end tests of program identity and ancestry (issue 15): the real
// `vigil run` with the bundled rules, a stand-in inference pod (the
// Kubernetes API stand-in's pod "c", made an inference pod by the tuning
// macro user_known_inference_pods, in its kubelet-style cgroup) and the
// evasions the rules must see through: a renamed copy of dash, a renamed
// shell behind a Python interpreter, a program run from a memfd. The benign
// run (the pod's server starting its own non-shell program) must raise
// nothing.
//
// Needs root and a kernel with BTF (label integration); skipped otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

const char* const kIdentityRules[] = {"Shell spawned by inference server", "Shell in inference pod",
                                      "Disguised shell or interpreter in container", "Fileless program executed"};

// The command line marker of a Python-launched vLLM server.
const char* const kServerMarker = "vllm.entrypoints.openai.api_server";

class e2eIdent : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    if (std::string why = api_.start(dir_); !why.empty()) GTEST_SKIP() << why;
    cgroup_.emplace(K8sStub::kStablePodUid, K8sStub::stable_container_id());
    ASSERT_TRUE(cgroup_->ok()) << cgroup_->error();
    // The stand-in pod is an inference pod, by the documented tuning macro.
    const std::string tuning = dir_.write("tuning.yaml", R"(
- macro: user_known_inference_pods
  condition: (k8s.pod.name = c)
  override: {condition: replace}
)");
    std::vector<std::string> args = {"-r",       std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml",
                                     "-r",       tuning,
                                     "-o",       "flight_recorder.enabled=false",
                                     "--format", "json"};
    for (const auto& a : api_.vigil_args()) args.push_back(a);
    ASSERT_TRUE(v_.start(args));
    ASSERT_TRUE(v_.wait_ready()) << "vigil did not get ready" << v_.diag();
    ASSERT_TRUE(api_.wait_script_done()) << api_.requests() << v_.diag();
    std::this_thread::sleep_for(1s);  // the watcher's last page drained into the state
  }

  // Runs argv in the pod's cgroup and waits for it; its exit status.
  int run_in_pod(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.cgroup = cgroup_->scope();
    Child c = Child::spawn(argv, o);
    return c.wait();
  }

  std::pair<std::string, std::string> install(const std::string& program, const std::string& role) const {
    std::string name = unique_name(role);
    return {name, dir_.install(program, name)};
  }

  // Alerts of the identity rules naming `name` as proc.name.
  std::vector<json> alerts_for(const std::string& name, std::chrono::milliseconds wait) {
    return v_.alerts([&](const json& a) { return alert_of(a, kIdentityRules, name); }, wait);
  }

  TempDir dir_;
  K8sStub api_;
  std::optional<PodCgroup> cgroup_;
  Vigil v_;
};

bool has_rule(const std::vector<json>& alerts, const std::string& rule) {
  for (const auto& a : alerts)
    if (a.value("rule", "") == rule) return true;
  return false;
}

// (a) The server runs a renamed copy of dash, which exits at once: a shell
// by identity, and disguised.
TEST_F(e2eIdent, RenamedDashStartedByTheServerIsAShell) {
  const auto [server, server_path] = install(VIGIL_E2E_ACTOR, "srv");
  const auto [x, x_path] = install("/bin/dash", "x");
  ASSERT_FALSE(x_path.empty());
  const int st = run_in_pod({server_path, "note", kServerMarker, "spawn", x_path, x, "-c", "exit 0"});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto got = alerts_for(x, 20s);
  // Both rules' alerts come from one event; give the second a moment.
  if (got.size() < 2) got = alerts_for(x, 2s);
  ASSERT_TRUE(has_rule(got, "Shell spawned by inference server")) << v_.diag();
  EXPECT_TRUE(has_rule(got, "Disguised shell or interpreter in container")) << v_.diag();
  for (const auto& a : got) {
    if (a.value("rule", "") != "Shell spawned by inference server") continue;
    EXPECT_EQ(field(a, "proc.exe_known_as"), "dash") << a.dump();
    EXPECT_EQ(field(a, "proc.pname"), server) << a.dump();
    EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
  }
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// (b) The server runs python3, which runs a renamed shell: caught through
// the ancestry (the grandparent's command line), not the parent's.
TEST_F(e2eIdent, RenamedShellBehindPythonIsSpawnedByTheServer) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const auto [server, server_path] = install(VIGIL_E2E_ACTOR, "srv");
  const auto [y, y_path] = install("/bin/dash", "y");
  const std::string py = "import subprocess, sys; sys.exit(subprocess.call(['" + y_path + "', '-c', 'exit 0']))";
  const int st = run_in_pod({server_path, "note", kServerMarker, "spawn", "/usr/bin/python3", "python3", "-c", py});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto got = alerts_for(y, 20s);
  ASSERT_TRUE(has_rule(got, "Shell spawned by inference server")) << v_.diag();
  for (const auto& a : got) {
    if (a.value("rule", "") != "Shell spawned by inference server") continue;
    EXPECT_EQ(field(a, "proc.pname"), "python3") << a.dump();
    EXPECT_EQ(field(a, "proc.exe_known_as"), "dash") << a.dump();
  }
  // python3 itself, the server's child, is no shell and raises nothing.
  EXPECT_TRUE(alerts_for("python3", 0ms).empty()) << v_.diag();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// (c) A program copied into a memfd and run from it (fexecve).
TEST_F(e2eIdent, ProgramRunFromAMemfdIsFileless) {
  const auto [server, server_path] = install(VIGIL_E2E_ACTOR, "srv");
  const auto [payload, payload_path] = install(VIGIL_E2E_ACTOR, "pay");
  const int st = run_in_pod({server_path, "memfdspawn", payload_path, "miner", "sleep", "200"});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  auto got = v_.alerts_where("Fileless program executed", "proc.pname", server, 20s);
  ASSERT_FALSE(got.empty()) << v_.diag();
  const json& a = got.front();
  EXPECT_EQ(field(a, "proc.exe_kind"), "memfd") << a.dump();
  EXPECT_EQ(field(a, "proc.exepath").rfind("memfd:e2e", 0), 0u) << a.dump();
  EXPECT_EQ(field(a, "proc.exe_sha256").size(), 64u) << a.dump();
  EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

// (d) Benign: the server starts its own worker program (no shell, on disk,
// under its own name): none of the identity rules fires for either.
TEST_F(e2eIdent, ServerStartingItsWorkerRaisesNothing) {
  const auto [server, server_path] = install(VIGIL_E2E_ACTOR, "srv");
  const auto [worker, worker_path] = install(VIGIL_E2E_ACTOR, "wrk");
  const int st = run_in_pod({server_path, "note", kServerMarker, "spawn", worker_path, worker, "sleep", "100"});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st);
  // A marker exec after it, so that "nothing" is not read too early: once the
  // renamed dash's alert is out, the worker's exec was processed before it.
  const auto [x, x_path] = install("/bin/dash", "x");
  ASSERT_EQ(run_in_pod({server_path, "note", kServerMarker, "spawn", x_path, x, "-c", "exit 0"}), 0);
  ASSERT_FALSE(alerts_for(x, 20s).empty()) << v_.diag();
  EXPECT_TRUE(alerts_for(worker, 0ms).empty()) << v_.diag();
  EXPECT_TRUE(alerts_for(server, 0ms).empty()) << v_.diag();
  EXPECT_EQ(v_.stop(), 0) << v_.diag();
}

}  // namespace
}  // namespace vigil::e2e
