#include "engine/state/podresources.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <string>
#include <thread>

#include "tests/engine/state/standin_kubelet.h"
#include "tests/engine/state/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::state {
namespace {

// Protobuf wire-format helpers to build test messages by hand.
std::string varint(std::uint64_t v) {
  std::string out;
  do {
    std::uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v ? (b | 0x80) : b));
  } while (v);
  return out;
}
std::string bytes_field(std::uint32_t num, const std::string& data) {
  return varint((num << 3) | 2) + varint(data.size()) + data;
}

std::string container_devices(const std::string& resource, std::vector<std::string> ids) {
  std::string m = bytes_field(1, resource);
  for (const auto& id : ids) m += bytes_field(2, id);
  return m;
}

std::string sample_response() {
  std::string devs = container_devices("nvidia.com/gpu", {"GPU-aaa", "GPU-bbb::2"});
  // An unknown varint field and an unknown fixed64 field are skipped.
  devs += varint((7 << 3) | 0) + varint(300) + varint((8 << 3) | 1) + std::string(8, '\x01');
  std::string c1 =
      bytes_field(1, "server") + bytes_field(2, devs) + bytes_field(2, container_devices("example.com/fpga", {"f0"}));
  std::string pod =
      bytes_field(1, "vllm-0") + bytes_field(2, "ml") + bytes_field(3, c1) + bytes_field(3, bytes_field(1, "sidecar"));
  return bytes_field(1, pod) + bytes_field(1, bytes_field(1, "empty") + bytes_field(2, "default"));
}

TEST(PodResourcesDecode, ListResponse) {
  auto r = decode_list_pod_resources(sample_response());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (ContainerDeviceIds{"ml", "vllm-0", "server", "nvidia.com/gpu", {"GPU-aaa", "GPU-bbb::2"}}));
  EXPECT_EQ((*r)[1].resource, "example.com/fpga");
  EXPECT_TRUE(decode_list_pod_resources("")->empty());
}

TEST(PodResourcesDecode, HostileBytesAreErrors) {
  std::string good = sample_response();
  // Every truncation of a valid message is either an error or a clean prefix, never a crash.
  for (std::size_t n = 0; n < good.size(); ++n) (void)decode_list_pod_resources(good.substr(0, n));
  EXPECT_FALSE(decode_list_pod_resources(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(decode_list_pod_resources(std::string(11, '\xff')).ok());              // endless varint
  EXPECT_FALSE(decode_list_pod_resources(varint((1 << 3) | 2) + varint(1000)).ok());  // length
  EXPECT_FALSE(decode_list_pod_resources(varint((1 << 3) | 3)).ok());                 // group
  EXPECT_FALSE(decode_list_pod_resources(std::string("\x00", 1)).ok());               // field 0
  // Bounded output.
  std::string many;
  for (int i = 0; i < 100; ++i) {
    many += bytes_field(
        1, bytes_field(1, "p") +
               bytes_field(3, bytes_field(1, "c") + bytes_field(2, container_devices("nvidia.com/gpu", {"x"}))));
  }
  EXPECT_EQ(decode_list_pod_resources(many, 10)->size(), 10u);
}

TEST(PodResourcesApply, NvidiaResourcesOnlyAndByName) {
  Pod p;
  p.ns = "ml";
  p.name = "vllm-0";
  p.containers.resize(2);
  p.containers[0].name = "server";
  p.containers[1].name = "sidecar";
  auto r = decode_list_pod_resources(sample_response());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(apply_pod_resources(p, *r));
  EXPECT_EQ(p.containers[0].gpu_devices, (std::vector<std::string>{"GPU-aaa", "GPU-bbb::2"}));
  EXPECT_TRUE(p.containers[1].gpu_devices.empty());
  EXPECT_FALSE(apply_pod_resources(p, *r)) << "nothing changed the second time";
  Pod other = p;
  other.ns = "default";
  other.containers[0].gpu_devices.clear();
  EXPECT_FALSE(apply_pod_resources(other, *r));
  EXPECT_TRUE(other.containers[0].gpu_devices.empty());
}

TEST(PodResourcesList, AbsentSocketIsAnError) {
  auto r = list_pod_resources("/nonexistent/kubelet.sock");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no socket"), std::string::npos);
}

TEST(PodResourcesList, AgainstAStandInKubelet) {
  support::TempDir d;
  std::string sock = d.path() + "/kubelet.sock";
  testing::StandInKubelet kubelet;
  ASSERT_TRUE(kubelet.start(sock, {{"ml", "vllm-0", "server", "nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}},
                                   {"ml", "train-1", "main", "nvidia.com/mig-1g.10gb", {"MIG-xyz"}}}));
  auto r = list_pod_resources(sock);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (ContainerDeviceIds{"ml", "vllm-0", "server", "nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}}));
  EXPECT_EQ((*r)[1].device_ids, std::vector<std::string>{"MIG-xyz"});
}

// An answer larger than the call allows is an error, not a large allocation.
TEST(PodResourcesList, AnAnswerOverTheBoundIsAnError) {
  support::TempDir d;
  std::string sock = d.path() + "/kubelet.sock";
  std::vector<ContainerDeviceIds> many;
  for (int i = 0; i < 2000; ++i)
    many.push_back({"ns", "pod-" + std::to_string(i), "c", "nvidia.com/gpu", {"GPU-" + std::to_string(i)}});
  testing::StandInKubelet kubelet;
  ASSERT_TRUE(kubelet.start(sock, many));
  auto r = list_pod_resources(sock, std::chrono::seconds(5), 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("kubelet.sock"), std::string::npos) << r.error().message;
  auto ok = list_pod_resources(sock);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->size(), 2000u);
}

}  // namespace
}  // namespace vigil::state
