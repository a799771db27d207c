// Step "compile filter": capture's and replay's --filter, with the plugins'
// fields (bad input → 2).
#include "engine/agent/steps/steps.h"

#include "engine/plugin/host.h"
#include "engine/rules/filter.h"

namespace vigil::agent::steps {

Status compile_filter(Agent& a) {
  if (a.opts.filter.empty()) return {};
  auto f = rules::Filter::compile(a.opts.filter, &a.plugins->fields());
  if (!f) return Error::bad_input("--filter: " + f.error().message);
  a.filter = std::move(*f);
  return {};
}

}  // namespace vigil::agent::steps
