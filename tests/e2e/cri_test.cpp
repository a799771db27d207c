// `vigil run` beside a real container runtime (issue 28): Debian's containerd
// started by the test (tests/e2e/containerd.h), pods and containers made
// through the CRI as the kubelet makes them, and no Kubernetes API server at
// all. A container's very first action (the exec of its command, then an
// open) alerts with its pod named: vigil asked the runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/containerd.h"
#include "tests/e2e/e2e_util.h"
#include "tests/support/k8s_stub.h"

namespace vigil::e2e {
namespace {

using namespace std::chrono_literals;

class e2eCri : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    if (std::string why = ctd_.start(dir_.path()); !why.empty()) GTEST_SKIP() << "containerd cannot run here: " << why;
  }

  std::string rules() const {
    return dir_.write("rules.yaml", R"(
- rule: e2e shadow read in a container
  desc: a container reads /etc/shadow
  condition: evt.type in (open, openat, openat2) and fd.name = /etc/shadow and container.id != host
  output: >
    shadow read (proc.pid=%proc.pid container.id=%container.id container.name=%container.name
    k8s.pod.name=%k8s.pod.name k8s.ns.name=%k8s.ns.name k8s.pod.uid=%k8s.pod.uid
    app=%k8s.pod.label.app evt.rawtime=%evt.rawtime)
  priority: WARNING
)");
  }

  TempDir dir_;
  Containerd ctd_;
};

// The first millisecond: the container's own command reads /etc/shadow as it
// starts; its alert names the pod, namespace, container and the pod's label,
// all from the runtime.
TEST_F(e2eCri, AContainersFirstActionNamesItsPodFromTheRuntime) {
  const std::string config = dir_.write("vigil.yaml", "cri:\n  socket: " + ctd_.socket() + "\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules(), "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  ASSERT_GE(v.stderr_count("asking the container runtime at " + ctd_.socket()), 1) << v.diag();

  const std::string uid = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
  auto pod = ctd_.run_pod("infer-0", "ml", uid);
  ASSERT_TRUE(pod) << ctd_.last_error();
  // Its first action as it starts, and the same a second later.
  const std::string id =
      ctd_.start_container(*pod, "server", {"/bin/sh", "-c", "cat /etc/shadow; sleep 1; cat /etc/shadow"});
  ASSERT_FALSE(id.empty()) << ctd_.last_error();

  auto got = v.alerts([&](const json& a) { return a.value("rule", "") == "e2e shadow read in a container"; }, 20s);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (got.size() < 2 && std::chrono::steady_clock::now() < deadline)
    got = v.alerts([&](const json& a) { return a.value("rule", "") == "e2e shadow read in a container"; }, 1s);
  ASSERT_EQ(got.size(), 2u) << v.diag();
  for (const json& a : got) {
    SCOPED_TRACE(a.dump());
    EXPECT_EQ(field(a, "container.id"), id.substr(0, 12));
    EXPECT_EQ(field(a, "container.name"), "server");
    EXPECT_EQ(field(a, "k8s.pod.name"), "infer-0");
    EXPECT_EQ(field(a, "k8s.ns.name"), "ml");
    EXPECT_EQ(field(a, "k8s.pod.uid"), uid);
    EXPECT_EQ(field(a, "k8s.pod.label.app"), "infer");
    EXPECT_EQ(field(a, "k8s.meta"), "complete");
  }
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// The API server is configured but away (nothing listens at its address, as
// while a control plane restarts): a new pod's alerts still name it.
TEST_F(e2eCri, WhileTheApiServerIsAwayTheRuntimeNamesThePod) {
  const std::string config =
      dir_.write("vigil.yaml", "cri:\n  socket: " + ctd_.socket() + "\nk8s:\n  api: http://127.0.0.1:9\n" +
                                   "  node_name: gpu-node-1\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules(), "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  const std::string uid = "0b9e1f2a-3c4d-4e5f-8a6b-7c8d9e0f1a2b";
  auto pod = ctd_.run_pod("train-3", "research", uid);
  ASSERT_TRUE(pod) << ctd_.last_error();
  const std::string id = ctd_.start_container(*pod, "trainer", {"/bin/cat", "/etc/shadow"});
  ASSERT_FALSE(id.empty()) << ctd_.last_error();
  auto got = v.alerts([&](const json& a) { return a.value("rule", "") == "e2e shadow read in a container"; }, 20s);
  ASSERT_EQ(got.size(), 1u) << v.diag();
  EXPECT_EQ(field(got[0], "k8s.pod.name"), "train-3") << got[0].dump();
  EXPECT_EQ(field(got[0], "k8s.ns.name"), "research");
  EXPECT_EQ(field(got[0], "container.name"), "trainer");
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// An API server that announces the pod 10 s late, after closing the watch
// with 410 Gone and relisting (the stand-in's script): the container's
// first action is named by the runtime at once, and its action after the
// API's record arrived is named too, by the merged record.
TEST_F(e2eCri, AnApiServerTenSecondsLateAfterA410DoesNotDelayThePodsName) {
  support::K8sStub api;
  api.set_stable_pod_delay(10s);
  support::TempDir api_dir("vigil-e2e-api");
  if (std::string why = api.start(api_dir); !why.empty()) GTEST_SKIP() << why;
  const std::string config = dir_.write("vigil.yaml", "cri:\n  socket: " + ctd_.socket() + "\n" + api.config_yaml());
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules(), "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
  auto pod = ctd_.run_pod(support::K8sStub::kStablePodName, support::K8sStub::kStablePodNamespace,
                          support::K8sStub::kStablePodUid);
  ASSERT_TRUE(pod) << ctd_.last_error();
  const auto started = std::chrono::steady_clock::now();
  const std::string id =
      ctd_.start_container(*pod, "main", {"/bin/sh", "-c", "cat /etc/shadow; sleep 14; cat /etc/shadow"});
  ASSERT_FALSE(id.empty()) << ctd_.last_error();
  const std::string rule = "e2e shadow read in a container";
  auto got = v.alerts([&](const json& a) { return a.value("rule", "") == rule; }, 20s);
  ASSERT_GE(got.size(), 1u) << v.diag();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s) << "the first alert did not wait for the API";
  ASSERT_TRUE(api.wait_script_done(30s)) << "the watcher did not get through the 410 and the late list; requests:\n"
                                         << api.requests() << v.diag();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (got.size() < 2 && std::chrono::steady_clock::now() < deadline)
    got = v.alerts([&](const json& a) { return a.value("rule", "") == rule; }, 1s);
  ASSERT_EQ(got.size(), 2u) << v.diag();
  for (const json& a : got) {
    SCOPED_TRACE(a.dump());
    EXPECT_EQ(field(a, "k8s.pod.name"), support::K8sStub::kStablePodName);
    EXPECT_EQ(field(a, "k8s.ns.name"), support::K8sStub::kStablePodNamespace);
    EXPECT_EQ(field(a, "k8s.pod.uid"), support::K8sStub::kStablePodUid);
    EXPECT_EQ(field(a, "container.name"), "main");
    EXPECT_EQ(field(a, "k8s.meta"), "complete");
  }
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// Churn: short-lived pods made at 5 per second, each container reading
// /etc/shadow as it starts and exiting: every alert names its own pod. The
// delay from the event to the alert line read here is reported (p50, p90,
// p99, max). VIGIL_CRI_CHURN_PODS sets the count (default 60 here;
// docs/performance.md has the run with 300).
TEST_F(e2eCri, ShortLivedPodsAtFivePerSecondAreEachNamed) {
  int n = 60;
  if (const char* e = std::getenv("VIGIL_CRI_CHURN_PODS")) n = std::max(1, std::atoi(e));
  const std::string config = dir_.write("vigil.yaml", "cri:\n  socket: " + ctd_.socket() + "\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules(), "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();

  std::mutex mu;
  std::map<std::string, std::string> pod_of;  // container id (12) -> pod name
  std::vector<Containerd::Pod> made;
  std::atomic<int> next{0}, failed{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (int i = next++; i < n; i = next++) {
      std::this_thread::sleep_until(t0 + i * 200ms);
      char uid[40];
      std::snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012x", i);
      const std::string name = "churn-" + std::to_string(i);
      auto pod = ctd_.run_pod(name, "churn", uid);
      if (!pod) {
        ++failed;
        continue;
      }
      // It acts at once and lives a second: a container gone before vigil
      // resolved its cgroup is attributed to the host (its own issue).
      const std::string id = ctd_.start_container(*pod, "job", {"/bin/sh", "-c", "cat /etc/shadow; sleep 1"});
      std::lock_guard<std::mutex> lk(mu);
      made.push_back(*pod);
      if (id.empty()) {
        ++failed;
        continue;
      }
      pod_of[id.substr(0, 12)] = name;
    }
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 6; ++w) workers.emplace_back(worker);
  for (auto& t : workers) t.join();
  const double made_in_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(failed.load(), 0) << ctd_.last_error();

  const std::string rule = "e2e shadow read in a container";
  auto ours = [&] {
    std::vector<std::pair<json, std::int64_t>> out;
    for (auto& [a, at] : v.timed_alerts())
      if (a.value("rule", "") == rule) out.emplace_back(a, at);
    return out;
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (ours().size() < static_cast<std::size_t>(n) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  const auto got = ours();
  // Every alert must name its pod, and (at most one in twenty aside, said by
  // name) every container's open alerts.
  std::vector<std::string> missing;
  for (const auto& [cid, name] : pod_of) {
    bool seen = false;
    for (const auto& [a, at] : got) seen = seen || field(a, "container.id") == cid;
    if (!seen) missing.push_back(name + " (" + cid + ")");
  }
  if (!missing.empty()) {
    std::cout << "churn: no alert from " << missing.size() << " container(s):";
    for (const auto& m : missing) std::cout << " " << m;
    std::cout << std::endl;
  }
  EXPECT_LE(missing.size(), static_cast<std::size_t>(n / 20)) << v.diag();
  int complete = 0;
  std::vector<double> delays_ms;
  for (const auto& [a, at] : got) {
    auto it = pod_of.find(field(a, "container.id"));
    if (it != pod_of.end() && field(a, "k8s.pod.name") == it->second && field(a, "k8s.ns.name") == "churn" &&
        field(a, "k8s.meta") == "complete") {
      ++complete;
    } else {
      ADD_FAILURE() << "an alert without its pod: " << a.dump();
    }
    const auto& raw = a.at("output_fields").at("evt.rawtime");
    if (raw.is_number()) delays_ms.push_back(static_cast<double>(at - raw.get<std::int64_t>()) / 1e6);
  }
  EXPECT_EQ(complete, static_cast<int>(got.size())) << "every alert that came names its pod";
  std::sort(delays_ms.begin(), delays_ms.end());
  auto pct = [&](double p) {
    return delays_ms.empty()
               ? 0.0
               : delays_ms[std::min(delays_ms.size() - 1, static_cast<std::size_t>(p * delays_ms.size()))];
  };
  std::cout << "churn: " << n << " pods made in " << made_in_s << " s, " << complete << "/" << got.size()
            << " alerts named their pod; delay event -> alert line (ms): p50 " << pct(0.5) << ", p90 " << pct(0.9)
            << ", p99 " << pct(0.99) << ", max " << (delays_ms.empty() ? 0.0 : delays_ms.back()) << std::endl;
  RecordProperty("delay_p50_ms", std::to_string(pct(0.5)));
  RecordProperty("delay_p99_ms", std::to_string(pct(0.99)));
  EXPECT_EQ(v.stop(), 0) << v.diag();

  // The pods go in parallel too (the destructor would remove them one by one).
  std::atomic<std::size_t> k{0};
  std::vector<std::thread> removers;
  for (int w = 0; w < 6; ++w)
    removers.emplace_back([&] {
      for (std::size_t i = k++; i < made.size(); i = k++) ctd_.remove_pod(made[i]);
    });
  for (auto& t : removers) t.join();
}

}  // namespace
}  // namespace vigil::e2e
