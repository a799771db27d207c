#include "engine/rules/filter.h"

#include <algorithm>
#include <iterator>

#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"

namespace vigil::rules {
namespace {

// "column N: " for a byte offset in the condition (SIZE_MAX: unknown).
std::string at(std::size_t offset) {
  if (offset == SIZE_MAX) return "";
  return "column " + std::to_string(offset + 1) + ": ";
}

constexpr std::string_view kDnsNamed[] = {"fd.sip.name", "fd.rip.name", "fd.cip.name", "fd.lip.name"};

}  // namespace

Filter::Filter(std::string condition, std::unique_ptr<Expr> expr)
    : condition_(std::move(condition)), expr_(std::move(expr)) {}
Filter::~Filter() = default;

Result<std::unique_ptr<const Filter>> Filter::compile(std::string_view condition, const FieldCatalog* catalog) {
  if (condition.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Error::bad_input("empty condition");
  }
  ParseResult pr = parse_condition(condition);
  if (!pr.ok()) {
    return Error::bad_input(at(pr.error.offset) + pr.error.message);
  }
  CompileResult cr =
      compile_condition(std::move(pr.root), MacroMap{}, ListMap{}, catalog ? *catalog : FieldCatalog::builtin());
  if (!cr.errors.empty()) {
    std::string why;
    for (const CompileMessage& m : cr.errors) why += (why.empty() ? "" : "; ") + at(m.offset) + m.message;
    return Error::bad_input(why);
  }
  if (!cr.unknown_fields.empty()) {
    std::string names;
    for (const auto& f : cr.unknown_fields) names += (names.empty() ? "'" : ", '") + f + "'";
    return Error::bad_input("unknown field " + names + " (vigil fields lists the fields)");
  }
  if (!cr.unknown_evttypes.empty()) {
    return Error::bad_input("unknown event type '" + cr.unknown_evttypes.front() + "'");
  }
  if (!cr.expr) return Error::bad_input("the condition does not compile");
  std::unique_ptr<Filter> f(new Filter(std::string(condition), std::move(cr.expr)));
  std::vector<PathLiteral> paths;
  if (f->expr_->type_mask().test(event::Type::kOpen) && f->expr_->path_prefixes(paths))
    f->open_paths_ = open_paths_of(std::move(paths));
  return std::unique_ptr<const Filter>(std::move(f));
}

bool Filter::accepts(const state::EvalContext& ctx) const noexcept {
  if (!ctx.ev) return false;
  Arena arena;
  ExtractCtx x{&ctx, &arena, nullptr, nullptr};
  return expr_->eval(x);
}

std::set<event::Type> Filter::event_types() const {
  std::set<event::Type> out;
  const event::TypeMask mask = expr_->type_mask();
  for (std::size_t t = 1; t < static_cast<std::size_t>(event::Type::kCount); ++t) {
    if (mask.test(static_cast<event::Type>(t))) out.insert(static_cast<event::Type>(t));
  }
  if (expr_->reads_any(kDnsNamed)) out.insert(event::Type::kDns);
  return out;
}

}  // namespace vigil::rules
