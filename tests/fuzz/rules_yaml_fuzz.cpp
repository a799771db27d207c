// libFuzzer target: the rules-file loader (YAML, items, append/override,
// exceptions, sequences, compile). Any input must load or report
// diagnostics, never crash; a rule set that loads must evaluate an event,
// with its sequences' partial matches kept.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vigil;
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = rules::load_rules_text({{"fuzz.yaml", text}}, rules::LoadOptions{});
  if ((r.ruleset != nullptr) != (r.errors == 0)) std::abort();
  for (const auto& d : r.diagnostics) (void)d.to_string();
  if (!r.ruleset) return 0;
  event::Event ev;
  ev.hdr.type = event::Type::kOpen;
  ev.hdr.pid = 7;
  ev.hdr.comm = "cat";
  event::OpenData o;
  o.path = "/etc/shadow";
  o.result = 3;
  ev.data = o;
  state::EvalContext ctx;
  ctx.ev = &ev;
  std::vector<event::Alert> out;
  rules::SequenceState seq(*r.ruleset, nullptr);
  r.ruleset->evaluate(ctx, out, &seq);
  ev.hdr.type = event::Type::kExec;
  event::ExecData e;
  e.filename = "/bin/sh";
  e.args = {"sh"};
  ev.data = e;
  ev.hdr.ts_ns = 1000;
  r.ruleset->evaluate(ctx, out, &seq);
  return 0;
}
