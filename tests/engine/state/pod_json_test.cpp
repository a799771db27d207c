// A v1.Pod's JSON -> the Pod model (engine/state/pod_json.h).
#include "engine/state/pod_json.h"

#include <gtest/gtest.h>
#include <string>

namespace vigil::state {
namespace {

TEST(ParsePodJson, ReadsWhatRulesNeed) {
  const char* kPod = R"({
    "metadata": {"name": "vllm-0", "namespace": "ml", "uid": "u-1", "resourceVersion": "77",
                 "labels": {"app.kubernetes.io/component": "inference"},
                 "annotations": {"a": "b", "kubectl.kubernetes.io/last-applied-configuration": "%BIG%"}},
    "spec": {"nodeName": "n1",
             "initContainers": [{"name": "init", "image": "busybox"}],
             "containers": [
               {"name": "server", "image": "vllm/vllm-openai:v0.6",
                "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "1Gi"}},
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "GPU-1,GPU-2"},
                        {"name": "X", "valueFrom": {"fieldRef": {}}}],
                "securityContext": {"privileged": true}},
               {"name": "side", "image": "envoy:1", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    "status": {"containerStatuses": [
                 {"name": "side", "containerID": "cri-o://abc"},
                 {"name": "server", "containerID": "containerd://def"}],
               "initContainerStatuses": [{"name": "init", "containerID": "docker://ghi"}]}
  })";
  std::string text = kPod;
  text.replace(text.find("%BIG%"), 5, std::string(10000, 'x'));
  auto r = parse_pod_json(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Pod& p = *r;
  EXPECT_EQ(p.uid, "u-1");
  EXPECT_EQ(p.name, "vllm-0");
  EXPECT_EQ(p.ns, "ml");
  EXPECT_EQ(p.node, "n1");
  EXPECT_EQ(p.resource_version, "77");
  EXPECT_EQ(p.labels.at("app.kubernetes.io/component"), "inference");
  EXPECT_EQ(p.annotations.size(), 1u) << "huge annotation values are not kept";
  ASSERT_EQ(p.containers.size(), 3u);
  EXPECT_EQ(p.containers[0].name, "server");
  EXPECT_EQ(p.containers[0].id, "def");
  EXPECT_EQ(p.containers[0].gpu_limit, 2);
  EXPECT_EQ(p.containers[0].nvidia_visible_devices, "GPU-1,GPU-2");
  EXPECT_TRUE(p.containers[0].privileged);
  EXPECT_EQ(p.containers[1].id, "abc");
  EXPECT_EQ(p.containers[1].gpu_limit, 1);
  EXPECT_FALSE(p.containers[1].privileged);
  EXPECT_EQ(p.containers[2].name, "init");
  EXPECT_EQ(p.containers[2].id, "ghi");
}

// container.start_ts: status.containerStatuses[].state.running.startedAt, as
// ns since the epoch; 0 for a container that is not running or a time that is
// not RFC 3339.
TEST(ParsePodJson, RunningContainersStartTime) {
  auto r = parse_pod_json(R"({"metadata": {"uid": "u"},
    "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}],
             "initContainers": [{"name": "init"}]},
    "status": {"containerStatuses": [
        {"name": "a", "containerID": "containerd://1", "state": {"running": {"startedAt": "2026-11-26T10:00:00Z"}}},
        {"name": "b", "state": {"running": {"startedAt": "2024-02-29T23:59:59.123456789+05:30"}}},
        {"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        {"name": "d", "state": {"running": {"startedAt": "yesterday"}}},
        {"name": "e", "state": {"running": {"startedAt": 1764150000}}}],
      "initContainerStatuses": [{"name": "init", "state": {"terminated": {"startedAt": "2026-11-26T09:59:00Z"}}}]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->containers.size(), 6u);
  EXPECT_EQ(r->containers[0].started_at_ns, 1'795'687'200'000'000'000);
  EXPECT_EQ(r->containers[1].started_at_ns, 1'709'231'399'123'456'789);  // the offset taken off
  EXPECT_EQ(r->containers[2].started_at_ns, 0);
  EXPECT_EQ(r->containers[3].started_at_ns, 0);
  EXPECT_EQ(r->containers[4].started_at_ns, 0);
  EXPECT_EQ(r->containers[5].started_at_ns, 0);  // terminated: not running
  for (const char* bad : {"2026-11-26T10:00:00", "2026-13-01T00:00:00Z", "1969-12-31T23:59:59Z",
                          "2026-11-26T10:00:00.Z", "2026-11-26T10:00:00+0530", "2026-11-26"}) {
    std::string text = R"({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "a"}]},
      "status": {"containerStatuses": [{"name": "a", "state": {"running": {"startedAt": ")" +
                       std::string(bad) + R"("}}}]}})";
    r = parse_pod_json(text);
    ASSERT_TRUE(r.ok()) << bad;
    EXPECT_EQ(r->containers.at(0).started_at_ns, 0) << bad;
  }
}

// metadata.ownerReferences: the controller, else the first; none when absent or malformed.
TEST(ParsePodJson, OwnerIsTheControllerReference) {
  auto r = parse_pod_json(R"({"metadata": {"uid": "u", "ownerReferences": [
      {"kind": "Node", "name": "n1"},
      {"kind": "ReplicaSet", "name": "web-7d4b9c8f6", "controller": true}]}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->owner_kind, "ReplicaSet");
  EXPECT_EQ(r->owner_name, "web-7d4b9c8f6");
  r = parse_pod_json(R"({"metadata": {"uid": "u", "ownerReferences": [{"kind": "Job", "name": "etl"}]}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->owner_kind, "Job");
  for (const char* bad : {R"({"metadata": {"uid": "u"}})", R"({"metadata": {"uid": "u", "ownerReferences": 5}})",
                          R"({"metadata": {"uid": "u", "ownerReferences": [{"kind": 3, "name": "x"}, 7]}})"}) {
    r = parse_pod_json(bad);
    ASSERT_TRUE(r.ok()) << bad;
    EXPECT_EQ(r->owner_kind, "") << bad;
    EXPECT_EQ(r->owner_name, "") << bad;
  }
}

TEST(ParsePodJson, HostileInputIsRejectedOrIgnoredNeverThrown) {
  EXPECT_FALSE(parse_pod_json("").ok());
  EXPECT_FALSE(parse_pod_json("{").ok());
  EXPECT_FALSE(parse_pod_json("[]").ok());
  EXPECT_FALSE(parse_pod_json(R"({"metadata": 5})").ok());
  EXPECT_FALSE(parse_pod_json(R"({"metadata": {"name": "no-uid"}})").ok());
  EXPECT_FALSE(parse_pod_json(R"({"metadata": {"uid": 12}})").ok());
  // Wrong types everywhere else are ignored.
  auto r = parse_pod_json(R"({"metadata": {"uid": "u", "labels": {"a": 1, "b": "ok"}},
     "spec": {"containers": [5, {"name": 3, "env": "x", "resources": {"limits": {"nvidia.com/gpu": "-1"}},
              "securityContext": {"privileged": "yes"}}]},
     "status": {"containerStatuses": "nope"}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->labels.size(), 1u);
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].gpu_limit, 0);
  EXPECT_FALSE(r->containers[0].privileged);
  // Deep nesting does not crash.
  std::string deep(100000, '[');
  EXPECT_FALSE(parse_pod_json(deep).ok());
}

TEST(ParsePodJson, GpuLimitCountsSharedAndMigResources) {
  auto r = parse_pod_json(R"({"metadata": {"uid": "u"}, "spec": {"containers": [
      {"name": "a", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/gpu.shared": 1,
                                             "nvidia.com/gpux": "5", "cpu": "4"}}}]}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->containers[0].gpu_limit, 3);
}

}  // namespace
}  // namespace vigil::state
