// Integration (root + a real kernel): `vigil capture` watches the Kubernetes
// API like `vigil run`, so a capture carries pod metadata: an exec in a
// stand-in pod replays attributed to that pod. The real binary, the API
// stand-in of the state tests (tests/engine/state/k8s_stub.py, over TLS) and
// a kubelet-style cgroup. Skipped with a message when not root.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

TEST(CaptureK8s, PodMetadataFromTheApiLandsInTheCapture) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  K8sStub api;
  if (std::string why = api.start(dir); !why.empty()) GTEST_SKIP() << why;
  PodCgroup cg(K8sStub::kStablePodUid, K8sStub::stable_container_id());
  ASSERT_TRUE(cg.ok()) << cg.error();

  const std::string cap = dir.path() + "/pods.vcap";
  std::vector<std::string> args = {"-w", cap};
  for (const auto& a : api.vigil_args()) args.push_back(a);
  Vigil rec;
  ASSERT_TRUE(rec.start_command("capture", args));
  ASSERT_TRUE(rec.wait_ready()) << rec.diag();
  EXPECT_NE(rec.stderr_text().find("watching pods of node gpu-node-1"), std::string::npos) << rec.diag();
  ASSERT_TRUE(api.wait_script_done()) << "the watcher did not reach pod c\n" << api.requests() << rec.diag();
  std::this_thread::sleep_for(1s);  // the listed pod reaches the capture's state

  const std::string marker = unique_name("pod");
  std::string prog = dir.install("/bin/true", marker);
  ASSERT_FALSE(prog.empty());
  Child c = Child::spawn({prog}, {.cgroup = cg.scope()});
  ASSERT_EQ(c.wait(), 0) << Child::what(c.wait());
  std::this_thread::sleep_for(1500ms);  // written on the next tick
  ASSERT_EQ(rec.stop(), 0) << rec.diag();

  // The events of the capture: the marked exec carries the pod and container.
  Vigil replay;
  ASSERT_TRUE(replay.start_command("replay", {cap, "--events"}));
  ASSERT_EQ(replay.stop(0), 0) << replay.diag();  // signal 0: just wait for it to finish
  int marked = 0;
  for (const auto& e : json_lines(replay.stdout_text())) {
    if (e.value("comm", "") != marker || e.value("type", "") != "execve") continue;
    ++marked;
    EXPECT_EQ(e.value("k8s.pod.name", json()), K8sStub::kStablePodName) << e.dump();
    EXPECT_EQ(e.value("k8s.ns.name", json()), K8sStub::kStablePodNamespace) << e.dump();
    EXPECT_EQ(e.value("container.id", "").substr(0, 12), K8sStub::stable_container_id().substr(0, 12)) << e.dump();
  }
  EXPECT_GT(marked, 0) << "the marked exec is not in the capture\n" << replay.diag();

  // Replay's --pod filter selects it by the pod name alone.
  Vigil by_pod;
  ASSERT_TRUE(by_pod.start_command(
      "replay", {cap, "--events", "--pod", std::string(K8sStub::kStablePodNamespace) + "/" + K8sStub::kStablePodName}));
  ASSERT_EQ(by_pod.stop(0), 0) << by_pod.diag();
  auto selected = json_lines(by_pod.stdout_text());
  int selected_marked = 0;
  for (const auto& e : selected) {
    EXPECT_EQ(e.value("k8s.pod.name", json()), K8sStub::kStablePodName) << e.dump();
    if (e.value("comm", "") == marker && e.value("type", "") == "execve") ++selected_marked;
  }
  EXPECT_EQ(selected_marked, marked);
}

}  // namespace
}  // namespace vigil::e2e
