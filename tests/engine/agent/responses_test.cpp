// The responses that act outside vigil (docs/prevention.md, "Responses"): a
// container's cgroup frozen (never the host's, vigil's, pid 1's, never
// through a link), and a pod labelled or deleted through the API server.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/agent/freeze.h"
#include "engine/agent/pod_responses.h"
#include "engine/agent/prevention.h"
#include "engine/event/event.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/state/state.h"
#include "tests/support/k8s_stub.h"
#include "tests/support/net.h"
#include "tests/support/temp_dir.h"

namespace vigil::agent {
namespace {

namespace fs = std::filesystem;

const std::string kId = std::string(60, 'a') + "0001";
const std::string kPodSlice = "/kubepods.slice/kubepods-pod5ce0a000_0000_4000_8000_000000000001.slice";
const std::string kScope = kPodSlice + "/cri-containerd-" + kId + ".scope";

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class FreezeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path();
    roots_.cgroup2 = root_ + "/cg2";
    roots_.proc = root_ + "/proc";
    roots_.self_pid = 777;
    cgroup(roots_.cgroup2 + kScope, "cgroup.freeze", "0\n");
    cgroup(roots_.cgroup2 + kScope, "cgroup.procs", "4242\n4243\n");
    proc("1", "0::/init.scope\n");
    proc("self", "0::/system.slice/vigil.service\n");
    proc("4242", "0::" + kScope + "\n");
  }
  void cgroup(const std::string& dir, const std::string& file, const std::string& text) {
    fs::create_directories(dir);
    std::ofstream(dir + "/" + file) << text;
  }
  void proc(const std::string& who, const std::string& text) {
    fs::create_directories(roots_.proc + "/" + who);
    std::ofstream(roots_.proc + "/" + who + "/cgroup") << text;
  }
  std::uint64_t ino(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  support::TempDir dir_{"vigil-freeze"};
  std::string root_;
  FreezeRoots roots_;
};

TEST_F(FreezeTest, WritesOneToTheContainersCgroupFreeze) {
  const FreezeOutcome o = CgroupFreezer(roots_).freeze(kId, kScope, ino(roots_.cgroup2 + kScope), 4242);
  EXPECT_EQ(o.result, FreezeOutcome::Result::kFrozen) << o.detail;
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "1");
}

TEST_F(FreezeTest, NeverACgroupThatIsNotTheContainers) {
  CgroupFreezer f(roots_);
  cgroup(roots_.cgroup2 + "/system.slice/containerd.service", "cgroup.freeze", "0\n");
  // The pod's slice, a service, the root, a path that climbs: all refused.
  for (const std::string& p : {kPodSlice, std::string("/system.slice/containerd.service"), std::string("/"),
                               kScope + "/../../system.slice/containerd.service"}) {
    const FreezeOutcome o = f.freeze(kId, p, 0, 4242);
    EXPECT_EQ(o.result, FreezeOutcome::Result::kRefused) << p << ": " << o.detail;
  }
  EXPECT_EQ(slurp(roots_.cgroup2 + "/system.slice/containerd.service/cgroup.freeze"), "0\n");
  // Another container's id, or none (the host).
  EXPECT_EQ(f.freeze(std::string(64, 'b'), kScope, 0, 4242).result, FreezeOutcome::Result::kRefused);
  EXPECT_EQ(f.freeze("", kScope, 0, 4242).result, FreezeOutcome::Result::kRefused);
  // A cgroup made again under the same name: not the one the events named.
  EXPECT_EQ(f.freeze(kId, kScope, ino(roots_.cgroup2 + kScope) + 1, 4242).result, FreezeOutcome::Result::kRefused);
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "0\n");
}

TEST_F(FreezeTest, NeverACgroupHoldingVigilOrPidOne) {
  proc("self", "0::" + kScope + "/vigil\n");
  EXPECT_EQ(CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242).result, FreezeOutcome::Result::kRefused);
  proc("self", "0::/system.slice/vigil.service\n");
  proc("1", "0::" + kScope + "\n");
  const FreezeOutcome o = CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242);
  EXPECT_EQ(o.result, FreezeOutcome::Result::kRefused);
  EXPECT_NE(o.detail.find("pid 1"), std::string::npos) << o.detail;
  // vigil in a cgroup namespace of its own sees itself at "/": the
  // cgroup's own list of processes still says.
  proc("1", "0::/init.scope\n");
  proc("self", "0::/\n");
  cgroup(roots_.cgroup2 + kScope, "cgroup.procs", "4242\n777\n");
  EXPECT_EQ(CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242).result, FreezeOutcome::Result::kRefused);
  cgroup(roots_.cgroup2 + kScope, "cgroup.procs", "1\n");
  EXPECT_EQ(CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242).result, FreezeOutcome::Result::kRefused);
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "0\n");
}

TEST_F(FreezeTest, NeverThroughALink) {
  // The pod's slice is a link to a directory elsewhere that looks the same.
  const std::string elsewhere = root_ + "/elsewhere";
  cgroup(elsewhere + "/cri-containerd-" + kId + ".scope", "cgroup.freeze", "0\n");
  cgroup(elsewhere + "/cri-containerd-" + kId + ".scope", "cgroup.procs", "4242\n");
  fs::remove_all(roots_.cgroup2 + kPodSlice);
  fs::create_directory_symlink(elsewhere, roots_.cgroup2 + kPodSlice);
  FreezeOutcome o = CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242);
  EXPECT_EQ(o.result, FreezeOutcome::Result::kFailed) << o.detail;
  EXPECT_EQ(slurp(elsewhere + "/cri-containerd-" + kId + ".scope/cgroup.freeze"), "0\n");
  // cgroup.freeze itself a link.
  fs::remove(roots_.cgroup2 + kPodSlice);
  cgroup(roots_.cgroup2 + kScope, "cgroup.procs", "4242\n");
  std::ofstream(root_ + "/target") << "0\n";
  fs::create_symlink(root_ + "/target", roots_.cgroup2 + kScope + "/cgroup.freeze");
  o = CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242);
  EXPECT_EQ(o.result, FreezeOutcome::Result::kFailed) << o.detail;
  EXPECT_EQ(slurp(root_ + "/target"), "0\n");
}

// A hybrid host whose runtime put the container in a v1 freezer cgroup.
TEST_F(FreezeTest, AV1FreezerCgroupIsFrozenWithFrozen) {
  roots_.freezer = root_ + "/freezer";
  const std::string v1 = "/kubepods/besteffort/pod5ce0a000-0000-4000-8000-000000000001/" + kId;
  cgroup(roots_.freezer + v1, "freezer.state", "THAWED\n");
  cgroup(roots_.freezer + v1, "cgroup.procs", "4242\n");
  proc("4242", "7:freezer:" + v1 + "\n6:memory:" + v1 + "\n0::" + kScope + "\n");
  proc("1", "7:freezer:/\n0::/init.scope\n");
  proc("self", "7:freezer:/\n0::/system.slice/vigil.service\n");
  const FreezeOutcome o = CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242);
  EXPECT_EQ(o.result, FreezeOutcome::Result::kFrozen) << o.detail;
  EXPECT_EQ(slurp(roots_.freezer + v1 + "/freezer.state"), "FROZEN");
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "0\n") << "one of the two, not both";
  // In the v1 hierarchy's root (the stand-in pods on this kind of host): v2.
  proc("4242", "7:freezer:/\n0::" + kScope + "\n");
  EXPECT_EQ(CgroupFreezer(roots_).freeze(kId, kScope, 0, 4242).result, FreezeOutcome::Result::kFrozen);
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "1");
}

TEST(FreezeRootsTest, TheFreezerHierarchyIsFoundInMountinfo) {
  const std::string mi =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
      "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(find_freezer_mount(mi), "/sys/fs/cgroup/freezer");
  EXPECT_EQ(find_freezer_mount("41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"), "");
}

// ---------------------------------------------------------------------------

state::K8sConfig config_for(const support::K8sStub& api) {
  state::K8sConfig c;
  c.api_url = api.url();
  c.ca_file = api.ca();
  c.token_file = api.token_file();
  return c;
}

std::vector<nlohmann::json> changes(const support::K8sStub& api) {
  std::vector<nlohmann::json> out;
  std::istringstream log(api.requests());
  for (std::string line; std::getline(log, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && (j.value("kind", "") == "patch" || j.value("kind", "") == "delete")) out.push_back(j);
  }
  return out;
}

TEST(PodResponderTest, LabelsAndDeletesThroughTheApiServer) {
  support::TempDir dir("vigil-pod-responses");
  support::K8sStub api;
  if (std::string why = api.start(dir); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::string> errors;
  std::mutex mu;
  {
    PodResponder r(config_for(api), [&](const PodResponseJob&, const std::string& e) {
      std::lock_guard<std::mutex> lk(mu);
      errors.push_back(e);
    });
    ASSERT_TRUE(r.offer({"Shell in \"pod\"", rules::kResponseLabel, "ml", "trainer-0", "uid-1"}));
    ASSERT_TRUE(r.offer({"Miner", rules::kResponseDeletePod, "ml", "trainer-0", "uid-1"}));
    r.wait_idle();
  }
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  const auto got = changes(api);
  ASSERT_EQ(got.size(), 2u) << api.requests();
  EXPECT_EQ(got[0]["kind"], "patch");
  EXPECT_EQ(got[0]["path"], "/api/v1/namespaces/ml/pods/trainer-0");
  EXPECT_EQ(got[0]["content_type"], "application/merge-patch+json");
  EXPECT_EQ(got[0]["auth"], "Bearer e2e-token");
  const auto patch = nlohmann::json::parse(got[0]["body"].get<std::string>());
  EXPECT_EQ(patch["metadata"]["labels"]["vigil.dev/quarantined"], "true");
  EXPECT_EQ(patch["metadata"]["annotations"]["vigil.dev/quarantine-rule"], "Shell in \"pod\"");
  EXPECT_EQ(got[1]["kind"], "delete");
  EXPECT_EQ(got[1]["path"], "/api/v1/namespaces/ml/pods/trainer-0");
  const auto del = nlohmann::json::parse(got[1]["body"].get<std::string>());
  EXPECT_EQ(del["preconditions"]["uid"], "uid-1") << "only the pod vigil knows, never a new one of the same name";
}

// A server that never answers: the request in flight times out or is
// cancelled, and a full queue drops what is offered.
TEST(PodResponderTest, AFullQueueDropsAndStopIsPrompt) {
  support::TcpListener silent("127.0.0.1", 0);
  ASSERT_TRUE(silent.ok()) << silent.error();
  state::K8sConfig c;
  c.api_url = "http://127.0.0.1:" + std::to_string(silent.port());
  std::size_t accepted = 0;
  std::chrono::steady_clock::time_point stopping;
  {
    PodResponder r(c, nullptr, 1);
    ASSERT_TRUE(r.offer({"r", rules::kResponseLabel, "ns", "p", "u"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // in flight: the server never answers
    for (int i = 0; i < 2; ++i) accepted += r.offer({"r", rules::kResponseLabel, "ns", "p", "u"}) ? 1 : 0;
    stopping = std::chrono::steady_clock::now();
  }
  EXPECT_EQ(accepted, 1u) << "one in flight and one queued: the third is dropped";
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(5))
      << "stopping cancels the request in flight: it waits for no timeout";
}

// ---------------------------------------------------------------------------
// The tap that carries out a decision's responses, and counts each.

class TapTest : public FreezeTest {
 protected:
  TapTest() : st_(config()), pipe_(pipeline::Deps{st_, nullptr, "node"}, nullptr) {}
  static state::Config config() {
    state::Config c;
    c.live = false;
    return c;
  }
  void SetUp() override {
    FreezeTest::SetUp();
    c_.id = kId;
    c_.cgroup_path = kScope;
    c_.cgroup_id = ino(roots_.cgroup2 + kScope);
    p_.uid = "5ce0a000-0000-4000-8000-000000000001";
    p_.name = "trainer-0";
    p_.ns = "ml";
  }
  // Decides `responses` for pid 4242 at event time `t_s` (seconds).
  void decide(PreventionTap& tap, std::uint8_t responses, std::uint64_t t_s, bool in_pod = true,
              const char* outcome = "respond", std::uint32_t pid = 4242) {
    event::Event ev;
    ev.hdr.pid = pid;
    ev.hdr.ts_ns = t_s * 1'000'000'000ull;
    state::EvalContext ctx;
    ctx.ev = &ev;
    if (in_pod) {
      ctx.container = &c_;
      ctx.pod = &p_;
    }
    rules::PreventionDecision d{"Miner", outcome, pid, 0, responses};
    tap.on_decision(d, ctx);
  }
  std::uint64_t n(const PreventionTap& tap, const std::string& response, const std::string& result) {
    const auto r = tap.responses();
    auto it = r.find({"Miner", response, result});
    return it == r.end() ? 0 : it->second;
  }

  state::State st_;
  pipeline::Pipeline pipe_;
  state::Container c_;
  state::Pod p_;
};

TEST_F(TapTest, FreezesTheContainerAndCountsWhatItCouldNotDo) {
  PreventionTap tap(nullptr, pipe_, nullptr, roots_);
  decide(tap, rules::kResponseFreeze | rules::kResponseLabel, 10);
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "1");
  EXPECT_EQ(n(tap, "freeze", "done"), 1u);
  EXPECT_EQ(n(tap, "label", "no_api"), 1u) << "no API server configured";
  // A host process (no container), pid 1: refused, never done.
  decide(tap, rules::kResponseFreeze | rules::kResponseLabel, 11, false);
  EXPECT_EQ(n(tap, "freeze", "refused"), 1u);
  EXPECT_EQ(n(tap, "label", "refused"), 1u);
  decide(tap, rules::kResponseKill, 12, true, "respond", 1);
  EXPECT_EQ(n(tap, "kill", "refused"), 1u);
  // Monitor mode: nothing done, nothing counted.
  std::ofstream(roots_.cgroup2 + kScope + "/cgroup.freeze") << "0\n";
  const auto before = tap.responses();
  decide(tap, rules::kResponseFreeze | rules::kResponseKill, 13, true, "would_respond");
  EXPECT_EQ(slurp(roots_.cgroup2 + kScope + "/cgroup.freeze"), "0\n");
  EXPECT_EQ(tap.responses(), before);
}

// A pod is labelled at most once a minute (event time), however often the rule fires.
TEST_F(TapTest, LabelsAPodAtMostOnceAMinute) {
  support::TempDir dir("vigil-tap-responses");
  support::K8sStub api;
  if (std::string why = api.start(dir); !why.empty()) GTEST_SKIP() << why;
  PreventionTap tap(nullptr, pipe_, nullptr, roots_);
  tap.set_k8s(config_for(api));
  auto wait_done = [&](std::uint64_t want) {
    for (int i = 0; i < 100 && n(tap, "label", "done") < want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return n(tap, "label", "done");
  };
  decide(tap, rules::kResponseLabel, 100);
  decide(tap, rules::kResponseLabel, 130);
  EXPECT_EQ(wait_done(1), 1u);
  decide(tap, rules::kResponseLabel, 161);
  EXPECT_EQ(wait_done(2), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(changes(api).size(), 2u) << api.requests();
  EXPECT_EQ(n(tap, "label", "error"), 0u);
}

}  // namespace
}  // namespace vigil::agent
