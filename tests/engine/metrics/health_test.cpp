#include "engine/metrics/health.h"

#include <gtest/gtest.h>

namespace vigil::metrics {
namespace {

using namespace std::chrono_literals;
using Clock = HealthMonitor::Clock;
using runtime::LoopStatus;
using runtime::SourceStatus;
using source::Backlog;
using source::EventSource;

struct Rig {
  Clock::time_point t0 = Clock::now();
  Clock::time_point now = t0;
  LoopStatus loop;
  std::uint64_t evaluated = 0;
  HealthMonitor h{10s};

  Rig() {
    loop.running = true;
    SourceStatus s;
    s.name = "bpf";
    s.backlog = Backlog{0, 1 << 20, 0, 0, "bytes"};
    loop.sources.push_back(s);
  }
  // One second passes; the loop turns (unless stuck) and the ring moves.
  Verdict step(bool loop_turns, std::uint64_t produced, std::uint64_t consumed, std::uint64_t evaluated_add) {
    now += 1s;
    if (loop_turns) loop.last_turn = now;
    auto& b = *loop.sources[0].backlog;
    b.produced += produced;
    b.consumed += consumed;
    b.pending = b.produced - b.consumed;
    evaluated += evaluated_add;
    return h.observe(loop, evaluated, now);
  }
};

bool has(const Verdict& v, const std::string& text) {
  for (const auto& r : v.reasons)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

TEST(HealthMonitor, BusyAndIdlePipelinesAreHealthy) {
  Rig r;
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(r.step(true, 4096, 4096, 50).ok);
  // Nothing arrives: nothing to evaluate, still healthy.
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(r.step(true, 0, 0, 0).ok);
  EXPECT_TRUE(r.h.verdict().ok);
}

TEST(HealthMonitor, AStuckLoopFailsAfterTheWindowWithEveryReason) {
  Rig r;
  r.step(true, 100, 100, 1);
  Verdict v;
  for (int i = 0; i < 9; ++i) {
    v = r.step(false, 4096, 0, 0);
    EXPECT_TRUE(v.ok) << "within the window: " << i;
  }
  v = r.step(false, 4096, 0, 0);
  ASSERT_FALSE(v.ok);
  EXPECT_TRUE(has(v, "the event loop has not turned for 10 s")) << v.reasons[0];
  EXPECT_TRUE(has(v, "source bpf: 40960 bytes wait to be read and none was read for 10 s"));
  EXPECT_TRUE(has(v, "events arrive and the rule engine has evaluated none for 10 s"));
  EXPECT_FALSE(r.h.verdict().ok);
  // The loop comes back: healthy at the next observation.
  EXPECT_TRUE(r.step(true, 0, 40960, 10).ok);
}

TEST(HealthMonitor, ARingBufferNotDrainedFailsEvenWhileTheLoopTurns) {
  Rig r;
  Verdict v;
  for (int i = 0; i < 11; ++i) v = r.step(true, 1000, 0, 5);
  ASSERT_FALSE(v.ok);
  EXPECT_TRUE(has(v, "source bpf: 11000 bytes wait"));
  EXPECT_FALSE(has(v, "event loop"));
}

TEST(HealthMonitor, RulesNotAdvancingWhileEventsArriveFails) {
  Rig r;
  Verdict v;
  for (int i = 0; i < 11; ++i) v = r.step(true, 1000, 1000, 0);
  ASSERT_FALSE(v.ok);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_TRUE(has(v, "events arrive and the rule engine has evaluated none"));
}

TEST(HealthMonitor, AFailedSourceFailsAtOnce) {
  Rig r;
  SourceStatus p;
  p.name = "plugin:nvml";
  p.health = EventSource::Health::kFailed;
  p.failure = "next_batch returned FAILURE";
  r.loop.sources.push_back(p);
  Verdict v = r.step(true, 0, 0, 0);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.reasons[0], "source plugin:nvml failed: next_batch returned FAILURE");
}

TEST(HealthMonitor, NotRunningIsNotStuck) {
  Rig r;
  r.loop.running = false;
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(r.step(false, 0, 0, 0).ok);
}

}  // namespace
}  // namespace vigil::metrics
