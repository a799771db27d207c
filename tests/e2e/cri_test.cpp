// `vigil run` beside a real container runtime (issue 28): Debian's containerd
// started by the test (tests/e2e/containerd.h), pods and containers made
// through the CRI as the kubelet makes them, and no Kubernetes API server at
// all. A container's very first action (the exec of its command, then an
// open) alerts with its pod named: vigil asked the runtime.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/e2e/containerd.h"
#include "tests/e2e/e2e_util.h"

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
    app=%k8s.pod.label.app)
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

}  // namespace
}  // namespace vigil::e2e
