// Step "load configuration" (bad input → 2), and run's sections that must be
// right before anything starts.
#include "engine/agent/steps/steps.h"

#include "engine/agent/config.h"
#include "engine/agent/heartbeat.h"

namespace vigil::agent::steps {

Status load_config(Agent& a) {
  auto cfg = config_of(a.opts);
  if (!cfg) return cfg.error();
  a.cfg = *cfg;
  a.cfg_in_force = YAML::Clone(a.cfg);
  return {};
}

Status read_agent_settings(Agent& a) {
  auto web = webserver_config(a.cfg);
  if (!web) return web.error();
  a.web = *web;
  auto every = heartbeat_interval(a.cfg);
  if (!every) return every.error();
  a.heartbeat_every = *every;
  return {};
}

}  // namespace vigil::agent::steps
