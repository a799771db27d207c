#include "engine/metrics/event_counters.h"

#include <gtest/gtest.h>

#include "engine/event/alert.h"
#include "engine/event/event.h"
#include "engine/event/schema.h"
#include "engine/state/model.h"

namespace vigil::metrics {
namespace {

event::Event of_type(event::Type t) {
  event::Event ev;
  ev.hdr.type = t;
  ev.data = event::make_payload(t);
  return ev;
}

TEST(EventCounters, CountsEventsByTypeAndAlertsByRuleAndPriority) {
  EventCounters c;
  state::EvalContext ctx;
  auto exec = of_type(event::Type::kExec);
  auto open = of_type(event::Type::kOpen);
  c.on_event(exec, ctx);
  c.on_event(exec, ctx);
  c.on_event(open, ctx);
  event::Alert a;
  a.rule = "Crypto miner started";
  a.priority = event::Priority::kCritical;
  c.on_alert(exec, ctx, a);
  c.on_alert(exec, ctx, a);
  EXPECT_EQ(c.events(), 3u);
  EXPECT_EQ(c.events_of(event::Type::kExec), 2u);
  Exposition out;
  c.collect(out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_events_total{type=\"execve\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_events_total{type=\"openat\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alerts_total{rule=\"Crypto miner started\",priority=\"Critical\"} 2\n"), std::string::npos)
      << t;
}

TEST(EventCounters, AlertSeriesAreCappedUnderOther) {
  EventCounters c;
  state::EvalContext ctx;
  auto ev = of_type(event::Type::kExec);
  event::Alert a;
  for (std::size_t i = 0; i < EventCounters::kMaxAlertSeries + 50; ++i) {
    a.rule = "rule " + std::to_string(i);
    c.on_alert(ev, ctx, a);
  }
  Exposition out;
  c.collect(out);
  const std::string t = out.text();
  std::size_t lines = 0;
  for (std::size_t p = 0; (p = t.find("vigil_alerts_total{", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, EventCounters::kMaxAlertSeries + 1);
  EXPECT_NE(t.find("vigil_alerts_total{rule=\"_other\",priority=\"Warning\"} 50\n"), std::string::npos);
}

TEST(EventCounters, GpuUseIsCountedPerPod) {
  EventCounters c;
  state::Pod pod;
  pod.ns = "ml";
  pod.name = "trainer-0";
  state::EvalContext ctx;
  ctx.pod = &pod;
  auto usage = of_type(event::Type::kGpuUsage);
  usage.as<event::GpuUsageData>()->entries = {{195, 0, 0x2a, 100}, {195, 255, 0x2b, 5}};
  c.on_event(usage, ctx);
  auto open = of_type(event::Type::kOpen);
  auto* o = open.as<event::OpenData>();
  o->is_device = true;
  o->dev_major = 195;
  o->result = 3;
  c.on_event(open, ctx);
  o->result = -13;  // refused: not a use
  c.on_event(open, ctx);
  state::EvalContext host;  // host processes have no pod
  c.on_event(usage, host);
  Exposition out;
  c.collect(out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_pod_gpu_ioctls_total{namespace=\"ml\",pod=\"trainer-0\"} 105\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_pod_gpu_device_opens_total{namespace=\"ml\",pod=\"trainer-0\"} 1\n"), std::string::npos) << t;
}

}  // namespace
}  // namespace vigil::metrics
