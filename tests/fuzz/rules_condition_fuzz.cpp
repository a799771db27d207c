// libFuzzer target: the condition parser and compiler. Any input must parse or
// fail with an error (never crash, never hang); a parsed condition's canonical
// text must parse again to the same text; what compiles must evaluate.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vigil;
  if (size > 64 * 1024) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = rules::parse_condition(text);
  if (!r.ok()) {
    if (r.error.offset > size) std::abort();  // the error must point inside the input
    return 0;
  }
  std::string canon = r.root->to_string();
  auto again = rules::parse_condition(canon);
  if (!again.ok() || again.root->to_string() != canon) std::abort();

  rules::MacroMap macros;
  rules::ListMap lists{{"shells", {"bash", "sh"}}, {"nested", {"shells", "zsh"}}};
  auto c = rules::compile_condition(std::move(r.root), macros, lists, rules::FieldCatalog::builtin());
  if (!c.expr) return 0;
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = 42;
  ev.hdr.comm = "bash";
  event::ExecData d;
  d.filename = "/bin/bash";
  d.exe = "/bin/bash";
  d.args = {"bash", "-c", "id"};
  ev.data = d;
  state::Process p;
  p.pid = 42;
  p.comm = "bash";
  p.exepath = "/bin/bash";
  p.args = {"-c", "id"};
  state::EvalContext ctx;
  ctx.ev = &ev;
  ctx.proc = &p;
  auto arena = std::make_unique<rules::Arena>();
  rules::ExtractCtx x{&ctx, arena.get()};
  (void)c.expr->eval(x);
  (void)c.expr->type_mask();
  return 0;
}
