#include "engine/agent/heartbeat.h"

#include <gtest/gtest.h>

#include "engine/config/config.h"
#include "outputs/sink.h"

namespace vigil::agent {
namespace {

HeartbeatInfo info() {
  HeartbeatInfo h;
  h.now_ns = 1795671215000000000ull;
  h.hostname = "gpu-node-7";
  h.version = "0.1.0";
  h.uptime_s = 3600;
  h.events = 123456;
  h.alerts = 7;
  h.drops = 0;
  h.rules = 29;
  h.parts_off = "none";
  h.seq = 60;
  return h;
}

TEST(Heartbeat, CarriesTheAgentsStateForTheSiem) {
  event::Alert a = make_heartbeat(info());
  EXPECT_EQ(a.rule, "vigil heartbeat");
  EXPECT_EQ(a.priority, event::Priority::kInformational);
  EXPECT_EQ(a.source, "vigil");
  EXPECT_EQ(a.hostname, "gpu-node-7");
  EXPECT_EQ(a.tags, std::vector<std::string>{"heartbeat"});
  EXPECT_TRUE(a.heartbeat);
  EXPECT_EQ(a.output,
            "vigil heartbeat (version=0.1.0 uptime_s=3600 events=123456 alerts=7 drops=0 rules=29 parts_off=none)");
  ASSERT_EQ(a.output_fields.size(), 8u);
  EXPECT_EQ(a.output_fields[0].first, "vigil.version");
  EXPECT_EQ(std::get<std::uint64_t>(a.output_fields[2].second), 123456u);
  EXPECT_EQ(a.uuid.size(), 36u);
  HeartbeatInfo next = info();
  next.seq = 61;
  EXPECT_NE(make_heartbeat(next).uuid, a.uuid) << "each heartbeat is its own record";
}

TEST(Heartbeat, PassesEveryOutputFilter) {
  // An output for the SIEM that takes Critical alerts of one rule only, rate-limited:
  // the heartbeat still passes, or its absence would look like a dead agent.
  outputs::FilterOptions o;
  o.min_priority = event::Priority::kCritical;
  o.rules_include = {"Crypto miner command line"};
  o.tags_exclude = {"heartbeat"};
  o.rate_per_s = 0.001;
  o.burst = 1;
  outputs::Filter f(o);
  const auto now = std::chrono::steady_clock::now();
  const event::Alert hb = make_heartbeat(info());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.check(hb, now), outputs::Filter::Verdict::kPass);
  event::Alert other = hb;
  other.heartbeat = false;
  EXPECT_EQ(f.check(other, now), outputs::Filter::Verdict::kFiltered);
}

TEST(Heartbeat, IntervalIsOffByDefaultAndChecked) {
  YAML::Node none = YAML::Load("{}");
  auto off = heartbeat_interval(none);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->count(), 0);
  auto on = heartbeat_interval(YAML::Load("heartbeat: {interval_s: 60}"));
  ASSERT_TRUE(on);
  EXPECT_EQ(on->count(), 60);
  EXPECT_FALSE(heartbeat_interval(YAML::Load("heartbeat: {interval_s: -1}")));
  EXPECT_FALSE(heartbeat_interval(YAML::Load("heartbeat: {interval_s: 100000}")));
}

}  // namespace
}  // namespace vigil::agent
