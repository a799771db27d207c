// Step "say ready": the line operators and tests wait for, once everything
// before the loop is in place.
#include "engine/agent/steps/steps.h"

#include "engine/agent/parts.h"

namespace vigil::agent::steps {

Status say_ready(Agent& a) {
  std::string hooks;
  for (const std::string& h : a.runner->attached()) hooks += (hooks.empty() ? "" : ",") + h;
  const std::string off = parts_off(a.parts.snapshot());
  a.log->info("ready: {} rules loaded from {} path(s), probes attached: {}; parts off: {}{}{}", a.ruleset->size(),
              a.rule_paths.size(), hooks, off.empty() ? "none" : off, a.posture ? "; posture: " : "",
              a.posture ? a.posture_summary : "");
  return {};
}

Status say_capture_ready(Agent& a) {
  a.log->info("ready: recording to {}", a.opts.write);
  return {};
}

}  // namespace vigil::agent::steps
