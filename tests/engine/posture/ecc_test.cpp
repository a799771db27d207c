// The GPUs' ECC in the posture: the node's mode over its GPUs (on, off,
// mixed, unsupported, unknown), a pending change, the per-GPU text, the
// ready line's words, and how one sample's readings are gathered.
#include "engine/posture/ecc.h"

#include <gtest/gtest.h>

#include "engine/posture/posture.h"

namespace vigil::posture {
namespace {

GpuEcc gpu(std::uint32_t index, std::string current, std::string pending = "") {
  GpuEcc g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.pending = pending.empty() ? current : pending;
  g.current = std::move(current);
  return g;
}

TEST(PostureEcc, NodeModeOverItsGpus) {
  EXPECT_EQ(ecc_summary({}), "");
  EXPECT_EQ(ecc_summary({gpu(0, "on"), gpu(1, "on")}), "on");
  EXPECT_EQ(ecc_summary({gpu(0, "off"), gpu(1, "off")}), "off");
  EXPECT_EQ(ecc_summary({gpu(0, "on"), gpu(1, "off")}), "mixed");
  EXPECT_EQ(ecc_summary({gpu(0, "unsupported"), gpu(1, "unsupported")}), "unsupported");
  // A GPU without ECC memory does not make a node of ECC GPUs mixed.
  EXPECT_EQ(ecc_summary({gpu(0, "on"), gpu(1, "unsupported")}), "on");
  EXPECT_EQ(ecc_summary({gpu(0, "off"), gpu(1, "unsupported")}), "off");
  // A GPU NVML could not answer for is left out; all unknown is unknown.
  EXPECT_EQ(ecc_summary({gpu(0, "on"), gpu(1, "")}), "on");
  EXPECT_EQ(ecc_summary({gpu(0, ""), gpu(1, "")}), "");
}

TEST(PostureEcc, PendingChangeWaitsForAReboot) {
  EXPECT_EQ(ecc_pending({}), -1);
  EXPECT_EQ(ecc_pending({gpu(0, "", "")}), -1);
  EXPECT_EQ(ecc_pending({gpu(0, "on"), gpu(1, "off")}), 0);
  EXPECT_EQ(ecc_pending({gpu(0, "on"), gpu(1, "off", "on")}), 1);
  EXPECT_EQ(ecc_pending({gpu(0, "unsupported")}), 0);
}

TEST(PostureEcc, PerGpuText) {
  EXPECT_EQ(ecc_gpus_text({}), "");
  EXPECT_EQ(ecc_gpus_text({gpu(0, "on"), gpu(1, "off", "on"), gpu(2, "unsupported"), gpu(3, "")}),
            "0:GPU-0:on,1:GPU-1:off->on,2:GPU-2:unsupported,3:GPU-3:unknown");
  GpuEcc odd = gpu(4, "on");
  odd.uuid = "GPU-a,b:c\x01";
  EXPECT_EQ(ecc_gpus_text({odd}), "4:GPU-a_b_c_:on");
  odd.uuid.clear();
  EXPECT_EQ(ecc_gpus_text({odd}), "4::on");
}

TEST(PostureEcc, ReadyLineWords) {
  EXPECT_EQ(ecc_summary_text({}), "unknown");
  EXPECT_EQ(ecc_summary_text({gpu(0, "on"), gpu(1, "on")}), "on (2 GPUs)");
  EXPECT_EQ(ecc_summary_text({gpu(0, "off")}), "off (1 GPU)");
  EXPECT_EQ(ecc_summary_text({gpu(0, "on"), gpu(1, "off"), gpu(2, "on")}), "mixed (on: GPU 0, 2; off: GPU 1)");
  EXPECT_EQ(ecc_summary_text({gpu(0, "unsupported")}), "unsupported (1 GPU)");
  EXPECT_EQ(ecc_summary_text({gpu(0, "on"), gpu(1, "unsupported"), gpu(2, "")}),
            "on (1 GPU), unknown on GPU 2, no ECC on GPU 1");
  EXPECT_EQ(ecc_summary_text({gpu(0, "off", "on"), gpu(1, "off")}), "off (2 GPUs), GPU 0 on after reboot");
}

TEST(PostureEcc, SamplesCompleteByTheirDeviceCount) {
  EccSamples s;
  EXPECT_FALSE(s.add(100, 2, gpu(1, "off")));
  auto done = s.add(100, 2, gpu(0, "on"));
  ASSERT_TRUE(done);
  ASSERT_EQ(done->size(), 2u);
  EXPECT_EQ((*done)[0].index, 0u);  // by index
  EXPECT_EQ((*done)[1].current, "off");
  // More of a whole sample is not part of it.
  EXPECT_FALSE(s.add(100, 2, gpu(2, "on")));
  // A GPU twice, or a count that changes within a sample: that sample is dropped.
  EXPECT_FALSE(s.add(200, 2, gpu(0, "on")));
  EXPECT_FALSE(s.add(200, 2, gpu(0, "on")));
  EXPECT_FALSE(s.add(200, 2, gpu(1, "on")));
  EXPECT_FALSE(s.add(300, 2, gpu(0, "on")));
  EXPECT_FALSE(s.add(300, 3, gpu(1, "on")));
  // The next whole one counts.
  EXPECT_FALSE(s.add(400, 2, gpu(0, "off")));
  done = s.add(400, 2, gpu(1, "off"));
  ASSERT_TRUE(done);
  EXPECT_EQ(ecc_summary(*done), "off");
}

TEST(PostureEcc, SamplesOfUnknownCountEndWithTheNextSample) {
  EccSamples s;
  EXPECT_FALSE(s.add(100, 0, gpu(0, "on")));
  EXPECT_FALSE(s.add(100, 0, gpu(1, "off")));
  auto done = s.add(200, 0, gpu(0, "on"));
  ASSERT_TRUE(done);
  EXPECT_EQ(ecc_summary(*done), "mixed");
}

TEST(PostureEcc, IsAFactOfThePosture) {
  Posture a;
  Posture b = a;
  set_ecc(b, {gpu(0, "on"), gpu(1, "on")});
  EXPECT_EQ(b.ecc, "on");
  EXPECT_EQ(changed_facts(a, b), "ecc");
  EXPECT_FALSE(a == b);
  Posture c = b;
  set_ecc(c, {gpu(0, "on"), gpu(1, "on", "off")});  // only a pending mode changed
  EXPECT_EQ(c.ecc, "on");
  EXPECT_EQ(changed_facts(b, c), "ecc");
  event::PostureData d = to_event(c, "ecc");
  EXPECT_EQ(d.ecc, "on");
  EXPECT_EQ(d.ecc_gpus, "0:GPU-0:on,1:GPU-1:on->off");
  EXPECT_NE(summary(c).find(", ECC on (2 GPUs), GPU 1 off after reboot"), std::string::npos) << summary(c);
  Posture none;
  set_ecc(none, {});
  EXPECT_EQ(none.ecc, "");
  EXPECT_EQ(to_event(none, "").ecc_gpus, "");
}

}  // namespace
}  // namespace vigil::posture
