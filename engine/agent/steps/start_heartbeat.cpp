// Step "start heartbeat": every heartbeat.interval_s (0: none), a "vigil
// heartbeat" record to every output, from the loop itself, so that a stuck
// or blinded agent stops sending them (heartbeat.h).
#include "engine/agent/steps/steps.h"

#include <chrono>

#include "engine/agent/heartbeat.h"
#include "engine/agent/parts.h"
#include "engine/pipeline/pipeline.h"
#include "engine/util/version.h"
#include "outputs/router.h"

namespace vigil::agent::steps {
namespace {

HeartbeatInfo heartbeat_now(Agent& a, std::chrono::steady_clock::time_point started) {
  HeartbeatInfo h;
  h.now_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  h.hostname = a.hostname;
  h.version = kVersion;
  h.uptime_s = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
  const auto ps = a.pipe->stats();
  h.events = ps.events;
  h.alerts = ps.alerts;
  h.drops = a.router->drops_total();
  for (const auto& s : a.runner->status().sources) h.drops += s.drops.total();
  h.rules = a.rules_in_force.get().loaded;
  const std::string off = parts_off(a.parts.snapshot());
  h.parts_off = off.empty() ? "none" : off;
  return h;
}

}  // namespace

Status start_heartbeat(Agent& a) {
  if (a.heartbeat_every.count() <= 0) return {};
  const auto started = std::chrono::steady_clock::now();
  a.runner->add_tick("heartbeat", a.heartbeat_every, [&a, started, seq = std::uint64_t{0}](std::uint64_t) mutable {
    HeartbeatInfo h = heartbeat_now(a, started);
    h.seq = ++seq;
    a.router->publish(std::make_shared<const event::Alert>(make_heartbeat(h)));
  });
  return {};
}

}  // namespace vigil::agent::steps
