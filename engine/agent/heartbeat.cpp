#include "engine/agent/heartbeat.h"

#include <unistd.h>

#include <fmt/format.h>

#include "engine/config/config.h"
#include "engine/event/event.h"
#include "engine/rules/ruleset.h"

namespace vigil::agent {
using config::get_or;

Result<std::chrono::seconds> heartbeat_interval(const YAML::Node& cfg) {
  auto s = get_or<std::uint64_t>(cfg, "heartbeat.interval_s", 0);
  if (!s) return s.error();
  return std::chrono::seconds(*s);
}

event::Alert make_heartbeat(const HeartbeatInfo& h) {
  event::Alert a;
  a.time_ns = h.now_ns;
  a.rule = kHeartbeatRule;
  a.priority = event::Priority::kInformational;
  a.source = "vigil";
  a.hostname = h.hostname;
  a.tags = {"heartbeat"};
  a.heartbeat = true;
  a.output = fmt::format("vigil heartbeat (version={} uptime_s={} events={} alerts={} drops={} rules={} parts_off={})",
                         h.version, h.uptime_s, h.events, h.alerts, h.drops, h.rules, h.parts_off);
  a.output_fields = {
      {"vigil.version", h.version},     {"vigil.uptime_s", h.uptime_s}, {"vigil.events", h.events},
      {"vigil.alerts", h.alerts},       {"vigil.drops", h.drops},       {"vigil.rules", h.rules},
      {"vigil.parts_off", h.parts_off}, {"vigil.heartbeat_seq", h.seq},
  };
  // A uuid like every alert's: from the time, vigil's pid and the sequence.
  event::Event ev;
  ev.hdr.ts_ns = h.now_ns;
  ev.hdr.pid = static_cast<std::uint32_t>(::getpid());
  ev.hdr.tid = static_cast<std::uint32_t>(h.seq);
  a.uuid = rules::alert_uuid(ev, kHeartbeatRule);
  return a;
}

}  // namespace vigil::agent
