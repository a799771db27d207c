// Filter: one compiled rule condition, without a rule around it. What
// `vigil capture --filter` and `vigil replay --filter` keep.
//
//   auto f = rules::Filter::compile("proc.name = xmrig and evt.type = execve");
//   if (!f) { log(f.error().message); }        // "column 17: ..." names the place
//   if ((*f)->accepts(ctx)) { ... }
//
// The condition language is the rules' (docs/rules.md) without macros or
// lists of a rules file. A field vigil does not know is an error naming the
// field (a filter that silently matched nothing would lose evidence).
//
// Thread-safety: immutable after compile(); accepts() is const and may run on
// several threads at once.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/rules/open_paths.h"
#include "engine/event/event.h"
#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::rules {

class Expr;
class FieldCatalog;

class Filter {
 public:
  // Error::bad_input naming the column (1-based, in `condition`) and the
  // problem: a syntax error, an unknown field, a type error.
  // `catalog`: the fields known (null: the built-in catalogue; plugins add theirs).
  static Result<std::unique_ptr<const Filter>> compile(std::string_view condition,
                                                       const FieldCatalog* catalog = nullptr);
  ~Filter();
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  bool accepts(const state::EvalContext& ctx) const noexcept;

  const std::string& condition() const { return condition_; }
  // The event types the condition can accept (for the sensor's hooks), with
  // dns added when a field reads the names DNS answers gave.
  std::set<event::Type> event_types() const;
  // Literal open paths the condition needs (for the sensor's in-kernel open
  // filter, OpenPaths in compiler.h). None with open among event_types():
  // every open.
  const OpenPaths& open_paths() const { return open_paths_; }

 private:
  Filter(std::string condition, std::unique_ptr<Expr> expr);
  std::string condition_;
  std::unique_ptr<Expr> expr_;
  OpenPaths open_paths_;
};

}  // namespace vigil::rules
