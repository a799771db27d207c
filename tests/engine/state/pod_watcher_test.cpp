// LIST + WATCH against a stand-in API server over TLS, and the kubelet
// pod-resources join (engine/state/pod_watcher.h).
#include "engine/state/pod_watcher.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <thread>

#include "engine/state/state.h"
#include "tests/engine/state/standin_kubelet.h"
#include "tests/engine/state/test_util.h"
#include "tests/support/k8s_stub.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace vigil::state {
namespace {

using support::TempDir;
using testing::RecordingListener;
using testing::replay_config;

// --- the watcher against a local HTTPS API server --------------------------------

bool run_cmd(const std::string& cmd) { return std::system(("(" + cmd + ") >/dev/null 2>&1").c_str()) == 0; }

// The Kubernetes API stand-in (support::K8sStub: k8s_stub.py over TLS, with a
// CA and a server certificate for 127.0.0.1 made in dir_) and a watcher
// configuration that points at it.
class PodWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!run_cmd("command -v python3") || !run_cmd("command -v openssl")) {
      GTEST_SKIP() << "python3 and openssl are needed for the stand-in API server";
    }
    ASSERT_EQ(stub_.start(dir_), "");
  }

  K8sConfig config() const {
    K8sConfig c;
    c.api_url = stub_.url();
    c.ca_file = stub_.ca();
    c.token_file = stub_.token_file();
    c.node_name = support::K8sStub::kNode;
    c.backoff_initial = std::chrono::milliseconds(50);
    c.backoff_max = std::chrono::milliseconds(200);
    return c;
  }

  // Drains into the state until pred() holds or the deadline passes.
  bool drain_until(PodWatcher& w, State& s, const std::function<bool()>& pred, int ms = 15000) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      w.drain(s);
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  TempDir dir_;  // outlives the stand-in, which writes there
  support::K8sStub stub_;
};

const std::string kUidA = "aaaaaaaa-0000-4000-8000-000000000001";
const std::string kUidB = "bbbbbbbb-0000-4000-8000-000000000002";
const std::string kUidC = "cccccccc-0000-4000-8000-000000000003";

// Whether the pod is in force (listed); a deleted one stays known to
// s.pod() for its grace period.
bool listed(const State& s, const std::string& uid) {
  for (const Pod& p : s.pods()) {
    if (p.uid == uid) return true;
  }
  return false;
}

TEST_F(PodWatcherTest, ListWatchDropRelistOnGoneAndDelete) {
  State s(replay_config());
  RecordingListener l;
  s.set_listener(&l);
  Container ca;
  ca.id = std::string(64, 'a');
  ca.pod_uid = kUidA;
  ca.cgroup_id = 11;
  s.upsert_container(ca);

  PodWatcher w(config());
  ASSERT_TRUE(w.start().ok());

  // LIST 1, then WATCH 1 adds B and modifies A.
  ASSERT_TRUE(drain_until(w, s, [&] {
    const Pod* a = s.pod(kUidA);
    return s.pod(kUidB) != nullptr && a && a->labels.count("v");
  })) << w.stats().last_error;
  EXPECT_EQ(s.pod(kUidA)->containers.at(0).gpu_limit, 1);
  EXPECT_EQ(s.pod(kUidA)->containers.at(0).nvidia_visible_devices, "0");
  EXPECT_EQ(s.container(ca.id)->image, "registry.example/a:1");

  // The connection drops, the watch resumes, 410 Gone forces a relist (A, C),
  // which removes B; WATCH 3 deletes A.
  ASSERT_TRUE(drain_until(w, s, [&] { return !listed(s, kUidB) && listed(s, kUidC) && !listed(s, kUidA); }))
      << w.stats().last_error;
  EXPECT_NE(s.pod(kUidA), nullptr) << "a deleted pod stays known for its grace period";
  EXPECT_TRUE(s.pod(kUidC)->containers.at(0).privileged);
  EXPECT_EQ(s.pods().size(), 1u);
  bool removed_b = false, removed_a = false;
  for (const auto& u : l.removed) {
    removed_b |= u == kUidB;
    removed_a |= u == kUidA;
  }
  EXPECT_TRUE(removed_b);
  EXPECT_TRUE(removed_a);

  // Wait until WATCH 3 is open and has delivered its bookmark, then stop.
  PodWatcher::Stats st;
  for (int i = 0; i < 200; ++i) {
    st = w.stats();
    if (st.watches >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto t0 = std::chrono::steady_clock::now();
  w.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3))
      << "stop() must interrupt a watch that is held open";
  st = w.stats();
  EXPECT_TRUE(st.synced);
  EXPECT_EQ(st.lists, 2u);
  EXPECT_EQ(st.relists_gone, 1u);
  EXPECT_GE(st.errors, 1u) << "the dropped connection is counted";
  EXPECT_GE(st.events, 3u);

  // What the watcher asked for.
  std::string log = stub_.requests();
  std::string token = support::read_file(stub_.token_file());
  token = token.substr(0, token.find('\n'));
  EXPECT_NE(log.find("\"auth\": \"Bearer " + token + "\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"kind\": \"list-page2\""), std::string::npos) << "paginated LIST";
  std::istringstream lines(log);
  std::vector<std::string> watch_rvs;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"kind\": \"watch\"") == std::string::npos) continue;
    auto p = line.find("\"resourceVersion\": \"");
    ASSERT_NE(p, std::string::npos) << line;
    p += 20;
    watch_rvs.push_back(line.substr(p, line.find('"', p) - p));
  }
  ASSERT_GE(watch_rvs.size(), 3u) << log;
  EXPECT_EQ(watch_rvs[0], "100");  // from LIST 1
  EXPECT_EQ(watch_rvs[1], "102");  // resumed after the drop from the last event
  EXPECT_EQ(watch_rvs[2], "200");  // from the relist
}

// The loop waits on wake_fd() (runner add_feed): an update queued makes it
// readable, so an idle loop applies the pod at once.
TEST_F(PodWatcherTest, AQueuedUpdateMakesTheWakeFdReadable) {
  PodWatcher w(config());
  EXPECT_LT(w.wake_fd(), 0);
  ASSERT_TRUE(w.start().ok());
  ASSERT_GE(w.wake_fd(), 0);
  pollfd pfd{w.wake_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 15000), 1) << "no wake-up within 15 s: " << w.stats().last_error;
  State s(replay_config());
  EXPECT_TRUE(w.drain(s));
  EXPECT_TRUE(listed(s, kUidA));
  std::uint64_t n = 0;
  EXPECT_EQ(::read(w.wake_fd(), &n, sizeof(n)), static_cast<ssize_t>(sizeof(n)));
  EXPECT_GE(n, 1u);
}

TEST_F(PodWatcherTest, UntrustedServerCertificateIsRefused) {
  // A self-signed certificate of someone else, trusted instead of the CA
  // that signed the stand-in's.
  ASSERT_TRUE(run_cmd("cd " + dir_.path() +
                      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                      " -keyout other.key -out other.crt -days 2 -subj '/CN=someone else'"));
  K8sConfig c = config();
  c.ca_file = dir_.path() + "/other.crt";
  PodWatcher w(c);
  ASSERT_TRUE(w.start().ok());
  State s(replay_config());
  bool failed = drain_until(
      w, s, [&] { return w.stats().errors >= 1; }, 10000);
  w.stop();
  EXPECT_TRUE(failed);
  EXPECT_FALSE(w.stats().synced);
  EXPECT_TRUE(s.pods().empty());
  EXPECT_EQ(stub_.requests(), "");
}

TEST_F(PodWatcherTest, InsecureFlagSkipsVerification) {
  K8sConfig c = config();
  c.ca_file.clear();
  c.insecure = true;
  PodWatcher w(c);
  ASSERT_TRUE(w.start().ok());
  State s(replay_config());
  EXPECT_TRUE(drain_until(w, s, [&] { return s.pod(kUidA) != nullptr; }));
}

TEST_F(PodWatcherTest, OversizedListIsRefused) {
  K8sConfig c = config();
  c.max_list_bytes = 200;
  PodWatcher w(c);
  ASSERT_TRUE(w.start().ok());
  State s(replay_config());
  ASSERT_TRUE(drain_until(
      w, s, [&] { return w.stats().errors >= 1; }, 10000));
  w.stop();
  EXPECT_NE(w.stats().last_error.find("larger than"), std::string::npos) << w.stats().last_error;
  EXPECT_TRUE(s.pods().empty());
}

TEST_F(PodWatcherTest, GpuDeviceIdsComeFromTheKubeletPodResourcesApi) {
  std::string sock = dir_.path() + "/kubelet.sock";
  testing::StandInKubelet kubelet;
  ASSERT_TRUE(kubelet.start(sock, {{"ml", "a", "main", "nvidia.com/gpu", {"GPU-aaaa"}}}));
  K8sConfig c = config();
  c.pod_resources_socket = sock;
  State s(replay_config());
  PodWatcher w(c);
  ASSERT_TRUE(w.start().ok());
  // Pod A asks for a GPU once MODIFIED (watch 1): its device ids are filled in.
  bool got = drain_until(w, s, [&] {
    const Pod* a = s.pod(kUidA);
    return a && !a->containers.empty() && !a->containers[0].gpu_devices.empty();
  });
  w.stop();
  ASSERT_TRUE(got) << w.stats().last_error;
  EXPECT_EQ(s.pod(kUidA)->containers[0].gpu_devices, std::vector<std::string>{"GPU-aaaa"});
  EXPECT_GE(w.stats().pod_resources_calls, 1u);
  EXPECT_EQ(w.stats().pod_resources_errors, 0u);
}
TEST(PodWatcher, RejectsNonHttpUrl) {
  K8sConfig c;
  c.api_url = "file:///etc/passwd";
  PodWatcher w(c);
  Status st = w.start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, Error::Kind::kBadInput);
}

}  // namespace
}  // namespace vigil::state
