// Step "start outputs": the output router of the outputs: section (stdout by
// default). vigil run's spools live under <state_dir>/spool; vigil replay
// names alerts after its configuration's hostname, else the captured host's,
// and has no outputs when it prints events.
#include "engine/agent/steps/steps.h"

#include "engine/agent/host_name.h"
#include "engine/capture/reader.h"
#include "engine/config/config.h"
#include "outputs/router.h"

namespace vigil::agent::steps {

Status start_outputs(Agent& a) {
  a.hostname = host_name(a.cfg);
  auto state_dir = config::get_or<std::string>(a.cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return state_dir.error();
  a.state_dir = *state_dir;
  outputs::RouterOptions routeropts;
  routeropts.hostname = a.hostname;
  routeropts.log = a.log;
  routeropts.state_dir = a.state_dir;
  auto router = outputs::Router::from_config(a.cfg["outputs"], routeropts);
  if (!router) return router.error();
  a.router = std::move(*router);
  return {};
}

Status start_replay_outputs(Agent& a) {
  a.hostname = a.cfg["hostname"] ? host_name(a.cfg) : a.reader->info().hostname;
  if (a.opts.print_events) return {};
  outputs::RouterOptions routeropts;
  routeropts.hostname = a.hostname;
  routeropts.log = a.log;
  auto router = outputs::Router::from_config(a.cfg["outputs"], routeropts);
  if (!router) return router.error();
  a.router = std::move(*router);
  return {};
}

}  // namespace vigil::agent::steps
