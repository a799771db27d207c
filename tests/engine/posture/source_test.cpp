#include "engine/posture/source.h"

#include <poll.h>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace vigil::posture {
namespace {

using support::TempDir;

std::vector<event::Event> poll_for(PostureSource& s, std::size_t want, int timeout_ms) {
  std::vector<event::Event> out;
  for (int waited = 0; out.size() < want && waited < timeout_ms; waited += 20) {
    pollfd p{s.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 20);
    auto n = s.poll(100, [&](event::Event&& e) { out.push_back(std::move(e)); });
    EXPECT_TRUE(n.ok());
  }
  return out;
}

TEST(PostureSource, ReportsAtStartAndOnChange) {
  TempDir root("vigil-posture");
  root.write("proc/driver/nvidia/params", "RmProfilingAdminOnly: 1\n");
  ReadOptions o;
  o.host_root = root.path();
  auto view = std::make_shared<View>();
  PostureSource src(o, std::chrono::milliseconds(50), read_posture(o), view, {});
  auto first = poll_for(src, 1, 2000);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].hdr.type, event::Type::kGpuPosture);
  const auto* d = first[0].as<event::PostureData>();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, "node");
  EXPECT_EQ(d->changed, all_facts());
  EXPECT_EQ(d->profiling_admin_only, 1);
  ASSERT_TRUE(view->get().has_value());

  // Unchanged re-checks report nothing.
  EXPECT_TRUE(poll_for(src, 1, 200).empty());

  root.write("proc/driver/nvidia/params", "RmProfilingAdminOnly: 0\n");
  auto next = poll_for(src, 1, 2000);
  ASSERT_EQ(next.size(), 1u);
  const auto* n = next[0].as<event::PostureData>();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->changed, "profiling");
  EXPECT_EQ(n->profiling_admin_only, 0);
  EXPECT_EQ(view->get()->profiling_admin_only, 0);
}

// The GPUs' ECC from the nvml plugin's samples: a change is a report naming
// ecc, an equal sample none, and a re-check of the files keeps it.
TEST(PostureSource, ReportsAChangeOfEcc) {
  ReadOptions o;
  o.host_root = "/nonexistent/vigil-posture-root";
  auto view = std::make_shared<View>();
  Posture first = read_posture(o);
  GpuEcc g0{0, "GPU-0", "on", "on"};
  GpuEcc g1{1, "GPU-1", "on", "on"};
  set_ecc(first, {g0, g1});
  PostureSource src(o, std::chrono::milliseconds(50), first, view, {});
  auto start = poll_for(src, 1, 2000);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].as<event::PostureData>()->ecc, "on");
  EXPECT_EQ(start[0].as<event::PostureData>()->ecc_gpus, "0:GPU-0:on,1:GPU-1:on");

  src.set_ecc({g0, g1});  // the same sample again
  EXPECT_TRUE(poll_for(src, 1, 200).empty());

  g1.current = g1.pending = "off";
  src.set_ecc({g0, g1});
  auto next = poll_for(src, 1, 2000);
  ASSERT_EQ(next.size(), 1u);
  const auto* d = next[0].as<event::PostureData>();
  EXPECT_EQ(d->changed, "ecc");
  EXPECT_EQ(d->ecc, "mixed");
  EXPECT_EQ(d->ecc_gpus, "0:GPU-0:on,1:GPU-1:off");
  EXPECT_EQ(view->get()->ecc, "mixed");
  // Re-checks of the files (every 50 ms) keep the sample's ECC: no report.
  EXPECT_TRUE(poll_for(src, 1, 300).empty());
  EXPECT_EQ(view->get()->ecc, "mixed");

  src.set_ecc({});  // the plugin's NVML went away: unknown again
  next = poll_for(src, 1, 2000);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].as<event::PostureData>()->ecc, "");
}

TEST(PostureSource, ReportsEachPodContainerOnce) {
  ReadOptions o;
  o.host_root = "/nonexistent/vigil-posture-root";
  int scans = 0;
  auto scan = [&scans] {
    ++scans;
    return std::vector<PodFinding>{{"uid-1", "bench", "all"}, {"uid-2", "probe", "0,1"}};
  };
  PostureSource src(o, std::chrono::milliseconds(30), read_posture(o), std::make_shared<View>(), scan);
  auto evs = poll_for(src, 3, 2000);
  ASSERT_EQ(evs.size(), 3u);  // the node, then the two containers
  const auto* pod = evs[1].as<event::PostureData>();
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->kind, "pod");
  EXPECT_EQ(pod->pod_uid, "uid-1");
  EXPECT_EQ(pod->container, "bench");
  EXPECT_EQ(pod->visible_devices, "all");
  // Later scans find the same containers: nothing new.
  EXPECT_TRUE(poll_for(src, 1, 200).empty());
  EXPECT_GT(scans, 1);
}

}  // namespace
}  // namespace vigil::posture
