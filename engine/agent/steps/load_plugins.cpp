// Step "load plugins" (bad input → 2, a failed init → 1): their fields and
// sources are known before the rules or a --filter compile.
#include "engine/agent/steps/steps.h"

#include "engine/agent/plugins.h"

namespace vigil::agent::steps {

Status load_plugins(Agent& a) {
  auto host = agent::load_plugins(a.cfg, a.opts.config, a.log, /*init=*/true);
  if (!host) return host.error();
  a.plugins = std::move(*host);
  a.plugins->configure(a.load_opts);
  return {};
}

}  // namespace vigil::agent::steps
