// Step "start web server": the pod count for /metrics (a tick: the loop
// thread owns the state), then, when webserver.enabled, the metrics and
// health endpoint over the agent's objects.
#include "engine/agent/steps/steps.h"

#include "engine/agent/webserver.h"
#include "engine/metrics/health.h"
#include "engine/metrics/server.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::agent::steps {

Status start_webserver(Agent& a) {
  a.runner->add_tick("pod count", std::chrono::seconds(1), [&a](std::uint64_t) {
    a.pods_known.store(a.state->pod_count(), std::memory_order_relaxed);
    const state::StateStats st = a.state->stats();
    a.exited_kept.store(st.exited_kept, std::memory_order_relaxed);
    a.exited_expired.store(st.exited_expired, std::memory_order_relaxed);
    a.exited_evicted.store(st.exited_evicted, std::memory_order_relaxed);
    a.late_events.store(st.late_events, std::memory_order_relaxed);
  });
  a.health = std::make_unique<metrics::HealthMonitor>(a.web.stall_after);
  if (!a.web.enabled) return {};
  auto server = agent::start_webserver(a.web, a, *a.health, a.log);
  if (!server) return server.error();
  a.webserver = std::move(*server);
  return {};
}

}  // namespace vigil::agent::steps
