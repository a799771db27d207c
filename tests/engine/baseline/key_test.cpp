#include "engine/baseline/key.h"

#include <gtest/gtest.h>

namespace vigil::baseline {
namespace {

state::Container container(std::string image, std::string image_id = "", std::string name = "server") {
  state::Container c;
  c.id = std::string(64, 'a');
  c.image = std::move(image);
  c.image_id = std::move(image_id);
  c.name = std::move(name);
  return c;
}

TEST(BaselineKey, ImageKeyIsRepositoryAndTagWithLatestWhenNoneIsNamed) {
  EXPECT_EQ(workload_key(KeyMode::kImage, container("docker.io/vllm/vllm-openai:v0.6.3"), nullptr),
            "docker.io/vllm/vllm-openai:v0.6.3");
  EXPECT_EQ(workload_key(KeyMode::kImage, container("registry:5000/team/app"), nullptr),
            "registry:5000/team/app:latest");
  EXPECT_EQ(workload_key(KeyMode::kImage, container("registry:5000/team/app:1.2"), nullptr),
            "registry:5000/team/app:1.2");
}

TEST(BaselineKey, NoImageNoKey) {
  EXPECT_EQ(workload_key(KeyMode::kImage, container(""), nullptr), "");
  EXPECT_EQ(workload_key(KeyMode::kOwner, container(""), nullptr), "");
}

TEST(BaselineKey, DigestModeUsesTheRuntimeDigestElseTheTag) {
  const std::string digest = "sha256:" + std::string(64, 'b');
  EXPECT_EQ(
      workload_key(KeyMode::kImageDigest, container("nvcr.io/nim/llama:1", "nvcr.io/nim/llama@" + digest), nullptr),
      "nvcr.io/nim/llama@" + digest);
  EXPECT_EQ(workload_key(KeyMode::kImageDigest, container("nvcr.io/nim/llama:1", digest), nullptr),
            "nvcr.io/nim/llama@" + digest);
  EXPECT_EQ(workload_key(KeyMode::kImageDigest, container("nvcr.io/nim/llama:1", ""), nullptr), "nvcr.io/nim/llama:1");
}

TEST(BaselineKey, OwnerKeyFoldsADeploymentsReplicaSetAndKeepsTheContainerName) {
  state::Pod pod;
  pod.ns = "serving";
  pod.owner_kind = "ReplicaSet";
  pod.owner_name = "llama-7d4b9c8f6";
  pod.labels["pod-template-hash"] = "7d4b9c8f6";
  EXPECT_EQ(workload_key(KeyMode::kOwner, container("x:1"), &pod), "serving/Deployment/llama/server");
  // Without the hash label the ReplicaSet is its own owner.
  pod.labels.clear();
  EXPECT_EQ(workload_key(KeyMode::kOwner, container("x:1"), &pod), "serving/ReplicaSet/llama-7d4b9c8f6/server");
  pod.owner_kind = "StatefulSet";
  pod.owner_name = "triton";
  EXPECT_EQ(workload_key(KeyMode::kOwner, container("x:1", "", "sidecar"), &pod), "serving/StatefulSet/triton/sidecar");
}

TEST(BaselineKey, OwnerKeyFallsBackToTheImageForAPodWithoutOwner) {
  state::Pod pod;
  pod.ns = "default";
  EXPECT_EQ(workload_key(KeyMode::kOwner, container("busybox:1.36"), &pod), "busybox:1.36");
  EXPECT_EQ(workload_key(KeyMode::kOwner, container("busybox:1.36"), nullptr), "busybox:1.36");
}

TEST(BaselineKey, OverlongKeyHasNoKey) {
  EXPECT_EQ(workload_key(KeyMode::kImage, container(std::string(600, 'r') + ":1"), nullptr), "");
}

TEST(BaselineKey, FileNamesAreEscapedFlatAndBounded) {
  EXPECT_EQ(file_name_for("docker.io/vllm/vllm-openai:v0.6.3"), "docker.io%2Fvllm%2Fvllm-openai%3Av0.6.3.json");
  EXPECT_EQ(file_name_for(".."), "%...json");
  const std::string a = file_name_for(std::string(300, 'x') + "/a");
  const std::string b = file_name_for(std::string(300, 'x') + "/b");
  EXPECT_LE(a.size(), 210u);
  EXPECT_NE(a, b);  // the hash of the whole key tells them apart
  EXPECT_EQ(a.find('/'), std::string::npos);
  // A cut never leaves half an escape.
  const std::string c = file_name_for(std::string(179, 'x') + std::string(10, '/'));
  EXPECT_EQ(c.substr(0, 179), std::string(179, 'x'));
  EXPECT_EQ(c[179], '~');
}

}  // namespace
}  // namespace vigil::baseline
