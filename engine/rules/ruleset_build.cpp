// Building a Ruleset: rule files read and collected (document.cpp), then
// each rule's condition (with its exceptions) and each sequence compiled,
// and the rules indexed by event type (RulesetBuilder, below, in named
// steps). Evaluation is in ruleset.cpp, alert rendering in alert_render.cpp.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/rules/append_output.h"
#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/document.h"
#include "engine/rules/fields.h"
#include "engine/rules/rule_files.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset_parts.h"

namespace vigil::rules {

namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// A list item or exception value as written: quotes around it are removed
// and its escapes decoded ('"sh -c x"' -> sh -c x, '"a\xffb"' -> a, 0xff, b).
// False, with `why`, for a bad escape.
bool list_item(const std::string& s, std::string& out, std::string& why) {
  ParseError e;
  if (literal_item(s, out, e)) return true;
  why = "item '" + printable_text(s) + "': " + e.message;
  return false;
}

std::string snippet(std::string_view cond, std::size_t off) {
  if (off == SIZE_MAX || off > cond.size()) return "";
  std::size_t from = off > 30 ? off - 30 : 0;
  std::string s(cond.substr(from, 60));
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return " (at offset " + std::to_string(off) + ": '" + s + "')";
}

bool op_from_text(std::string_view s, Op& op) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {{"=", Op::kEq}, {"==", Op::kEq}, {"!=", Op::kNe},
                                                             {"<", Op::kLt}, {"<=", Op::kLe}, {">", Op::kGt},
                                                             {">=", Op::kGe}};
  for (const auto& [n, o] : kOps) {
    if (n == s) {
      op = o;
      return true;
    }
  }
  return op_from_word(s, op);
}

// The right-hand side an exception value gives its check; false, with
// `why`, when a quoted value has a bad escape.
bool exception_rhs(const ExceptionValue& ev, Op op, Value& v, std::string& why) {
  if (ev.is_list) {
    v.kind = Value::Kind::kList;
    for (const auto& s : ev.items) {
      Value i;
      if (!list_item(s, i.text, why)) return false;
      i.bare = true;
      v.items.push_back(std::move(i));
    }
    return true;
  }
  // A transformer or val() on the right: a field-to-field comparison.
  std::string_view t = ev.text;
  auto paren = t.find('(');
  if (paren != std::string_view::npos && !t.empty() && t.back() == ')') {
    auto head = t.substr(0, paren);
    FieldExpr f;
    std::string err;
    if (head == "val" && parse_field_expr(t.substr(paren + 1, t.size() - paren - 2), f, err)) {
      v.kind = Value::Kind::kField;
      v.field = f;
      return true;
    }
    if ((head == "tolower" || head == "toupper" || head == "b64" || head == "basename" || head == "len") &&
        parse_field_expr(t, f, err)) {
      v.kind = Value::Kind::kField;
      v.field = f;
      return true;
    }
  }
  if (op_takes_list(op)) {
    v.kind = Value::Kind::kList;
    Value i;
    if (!list_item(ev.text, i.text, why)) return false;
    i.bare = true;
    v.items.push_back(std::move(i));
    return true;
  }
  return list_item(ev.text, v.text, why);
}

NodePtr make_node(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

// Builds `not (tuple1 or tuple2 ...)` for the rule's exceptions; null when none apply.
NodePtr exceptions_node(const RuleDef& r, Diagnostics& d, bool& ok) {
  const std::string lbl = "rule '" + r.name + "'";
  auto any = make_node(Node::Kind::kOr);
  for (const auto& e : r.exceptions) {
    if (e.fields.empty()) {
      d.error(code::kException, e.pos, lbl, "exception '" + e.name + "' has no fields");
      ok = false;
      continue;
    }
    std::vector<FieldExpr> fields;
    for (const auto& f : e.fields) {
      FieldExpr fe;
      std::string err;
      if (!parse_field_expr(f, fe, err)) {
        d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': bad field '" + f + "': " + err);
        ok = false;
        return nullptr;
      }
      fields.push_back(fe);
    }
    std::vector<Op> ops;
    if (e.fields_is_list) {
      if (e.has_comps && e.comps.size() != e.fields.size()) {
        d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': fields and comps differ in length");
        ok = false;
        continue;
      }
      for (std::size_t i = 0; i < e.fields.size(); ++i) {
        Op op = Op::kEq;
        if (e.has_comps && !op_from_text(e.comps[i], op)) {
          d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': unknown comparison '" + e.comps[i] + "'");
          ok = false;
          return nullptr;
        }
        ops.push_back(op);
      }
    } else {
      Op op = Op::kIn;
      if (e.has_comps && (e.comps.size() != 1 || !op_from_text(e.comps[0], op) || !op_takes_list(op))) {
        d.error(code::kException, e.pos, lbl,
                "exception '" + e.name + "': with a single field, comps must be in, pmatch or intersects");
        ok = false;
        continue;
      }
      ops.push_back(op);
    }
    if (!e.fields_is_list) {
      if (e.values.empty()) continue;
      auto chk = make_node(Node::Kind::kCheck);
      chk->field = fields[0];
      chk->op = ops[0];
      chk->value.kind = Value::Kind::kList;
      for (const auto& tuple : e.values) {
        for (const auto& v : tuple) {
          Value rhs;
          std::string why;
          if (!exception_rhs(v, ops[0], rhs, why)) {
            d.error(code::kConditionSyntax, e.pos, lbl, "exception '" + e.name + "': " + why);
            ok = false;
            return nullptr;
          }
          for (auto& i : rhs.items) chk->value.items.push_back(std::move(i));
        }
      }
      any->children.push_back(std::move(chk));
      continue;
    }
    for (const auto& tuple : e.values) {
      if (tuple.size() != fields.size()) {
        d.error(code::kException, e.pos, lbl,
                "exception '" + e.name + "': a value tuple has " + std::to_string(tuple.size()) +
                    " elements, fields has " + std::to_string(fields.size()));
        ok = false;
        continue;
      }
      auto all = make_node(Node::Kind::kAnd);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        auto chk = make_node(Node::Kind::kCheck);
        chk->field = fields[i];
        chk->op = ops[i];
        std::string why;
        if (!exception_rhs(tuple[i], ops[i], chk->value, why)) {
          d.error(code::kConditionSyntax, e.pos, lbl, "exception '" + e.name + "': " + why);
          ok = false;
          return nullptr;
        }
        if (!op_takes_list(ops[i]) && chk->value.kind == Value::Kind::kList) {
          d.error(code::kException, e.pos, lbl,
                  "exception '" + e.name + "': a list value needs in, pmatch or intersects");
          ok = false;
          return nullptr;
        }
        all->children.push_back(std::move(chk));
      }
      if (all->children.size() == 1) any->children.push_back(std::move(all->children[0]));
      else any->children.push_back(std::move(all));
    }
  }
  if (any->children.empty()) return nullptr;
  auto n = make_node(Node::Kind::kNot);
  if (any->children.size() == 1) n->children.push_back(std::move(any->children[0]));
  else n->children.push_back(std::move(any));
  return n;
}

// Whether a rule or sequence runs: as its file says, unless the load options
// disable it (by name, by tag, below the minimum priority) or enable it by name.
bool enabled_by_options(const LoadOptions& opts, bool enabled, const std::string& name,
                        const std::vector<std::string>& tags, event::Priority priority) {
  if (opts.disabled_rules.count(name)) enabled = false;
  for (const auto& t : tags) {
    if (opts.disabled_tags.count(t)) enabled = false;
  }
  if (static_cast<int>(priority) > static_cast<int>(opts.min_priority)) enabled = false;
  if (opts.enabled_rules.count(name)) enabled = true;
  return enabled;
}

// "a, b, c": the unknown fields of a compile.
std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& f : names) s += (s.empty() ? "" : ", ") + f;
  return s;
}

// The output tokens that are fields, the first occurrence of each name.
std::vector<std::size_t> first_fields(const OutputFormat& output) {
  std::vector<std::size_t> v;
  std::set<std::string> seen;
  const auto& toks = output.tokens();
  for (std::size_t k = 0; k < toks.size(); ++k) {
    if (toks[k].is_field && seen.insert(toks[k].name).second) v.push_back(k);
  }
  return v;
}

}  // namespace

// Builds a Ruleset from the collected documents, in this order:
//   1. lists and macros (read_lists, parse_macros);
//   2. the rules (compile_rule, each);
//   3. the sequences (compile_sequence, each, with its steps' conditions);
//   4. warnings for the macros and lists no one uses (warn_unused);
//   5. the per-event-type index of the enabled rules, with the open filter's
//      paths and whether DNS answers are needed (index_rules);
//   6. the guard index of each event type (build_guards).
// The time budget and the cancel flag are checked between rules and between
// event types (a rule's own compile is bounded by max_condition_nodes).
class RulesetBuilder {
 public:
  static LoadResult build(const Collector& col, Diagnostics& d, const LoadOptions& opts) {
    RulesetBuilder b(col, d, opts);
    b.read_lists();
    b.parse_macros();
    b.compile_rules();
    b.compile_sequences();
    b.warn_unused();
    b.index_rules();
    b.build_guards();
    b.res_.errors = d.error_count();
    if (b.res_.errors == 0) b.res_.ruleset = std::shared_ptr<const Ruleset>(b.rs_.release());
    return std::move(b.res_);
  }

 private:
  RulesetBuilder(const Collector& col, Diagnostics& d, const LoadOptions& opts)
      : col_(col),
        d_(d),
        opts_(opts),
        cat_(opts.fields ? *opts.fields : FieldCatalog::builtin()),
        rs_(std::make_unique<Ruleset>()),
        deadline_(std::chrono::steady_clock::now() + opts.compile_budget) {
    rs_->hostname_ = opts.hostname;
  }

  void read_lists() {
    for (const auto& l : col_.lists()) {
      std::vector<std::string> items;
      items.reserve(l.items.size());
      for (const auto& i : l.items) {
        std::string item, why;
        if (list_item(i, item, why)) items.push_back(std::move(item));
        else d_.error(code::kConditionSyntax, l.pos, "list '" + l.name + "'", why);
      }
      lists_[l.name] = std::move(items);
    }
  }

  void parse_macros() {
    for (const auto& m : col_.macros()) {
      auto pr = parse_condition(m.condition);
      MacroDef def;
      if (!pr.ok()) {
        d_.error(code::kConditionSyntax, m.condition_pos, "macro '" + m.name + "'",
                 pr.error.message + snippet(m.condition, pr.error.offset));
      } else {
        def.ast = std::move(pr.root);
      }
      macros_[m.name] = std::move(def);
    }
  }

  // Why the load stops here (the compile was cancelled or took too long); "" to go on.
  std::string stop_reason() const {
    if (opts_.cancel && opts_.cancel->load(std::memory_order_relaxed)) return "the compile was cancelled";
    if (opts_.compile_budget.count() > 0 && std::chrono::steady_clock::now() > deadline_) {
      return "the compile took longer than its budget of " + std::to_string(opts_.compile_budget.count()) + " ms";
    }
    return "";
  }

  void compile_rules() {
    rs_->prevention_mode_ = static_cast<PreventionMode>(std::min<std::uint8_t>(opts_.prevention_mode, 2));
    for (const auto& r : col_.rules()) {
      if (std::string why = stop_reason(); !why.empty()) {
        d_.error(code::kCompileBudget, r.pos, "rule '" + r.name + "'",
                 why + "; stopped here, this rule and those after it are not compiled");
        stopped_ = true;
        return;
      }
      if (auto rule = compile_rule(r)) {
        rs_->rules_.push_back(std::move(rule));
        ++res_.loaded;
      }
    }
  }

  // A condition parsed, the macros and lists it names noted as used; null,
  // with the error reported at pos, when it does not parse.
  NodePtr parse_noted(const std::string& condition, const Pos& pos, const std::string& lbl) {
    auto pr = parse_condition(condition);
    if (!pr.ok()) {
      d_.error(code::kConditionSyntax, pos, lbl, pr.error.message + snippet(condition, pr.error.offset));
      return nullptr;
    }
    collect_macro_refs(*pr.root, used_macros_);
    collect_list_refs(*pr.root, lists_, used_lists_);
    return std::move(pr.root);
  }

  // One rule: its condition with its exceptions, its event types, its
  // output; null when it has errors or is skipped.
  std::unique_ptr<Ruleset::Rule> compile_rule(const RuleDef& r) {
    const std::string lbl = "rule '" + r.name + "'";
    NodePtr root = parse_noted(r.condition, r.condition_pos, lbl);
    if (!root) return nullptr;
    if (r.source != "syscall" && !opts_.plugin_sources.count(r.source)) {
      d_.warning(code::kUnknownSource, r.pos, lbl,
                 "source '" + r.source + "' is not one vigil has (no loaded plugin gives it); rule skipped");
      skip(r.name, "unknown_source");
      return nullptr;
    }
    bool ok = true;
    NodePtr exc = exceptions_node(r, d_, ok);
    if (!ok) return nullptr;
    if (exc) {
      collect_list_refs(*exc, lists_, used_lists_);
      auto both = make_node(Node::Kind::kAnd);
      both->children.push_back(std::move(root));
      both->children.push_back(std::move(exc));
      root = std::move(both);
    }
    NodePtr for_prevention = r.action.empty() ? nullptr : root->clone();
    CompileResult cr =
        compile_condition(std::move(root), macros_, lists_, cat_, &slots_, opts_.optimise, opts_.max_condition_nodes);
    for (std::size_t i = 0; i < cr.errors.size(); ++i) {
      d_.error(cr.error_codes[i], r.condition_pos, lbl, cr.errors[i].message);
    }
    if (!cr.errors.empty()) return nullptr;
    if (for_prevention && cr.unknown_fields.empty()) {
      rs_->prevention_.push_back(analyse_prevention(r, *for_prevention, macros_, lists_, cat_));
      PreventionRule& p = rs_->prevention_.back();
      p.enabled = enabled_by_options(opts_, r.enabled, r.name, r.tags, r.priority);
      p.effective = p.mode(static_cast<PreventionMode>(std::min<std::uint8_t>(opts_.prevention_mode, 2)));
      // In enforce mode an action the kernel cannot take is an error, never
      // a silent alert-only rule.
      if (p.action == "deny" && !p.enforceable && p.enabled && p.effective == PreventionMode::kEnforce) {
        d_.error(code::kYamlValidate, r.action_mode_pos.line ? r.action_mode_pos : r.action_pos, lbl,
                 "action deny cannot be enforced in the kernel: " + p.why_not);
        rs_->prevention_.pop_back();
        return nullptr;
      }
    }
    if (!cr.unknown_fields.empty()) {
      d_.warning(code::kUnknownField, r.condition_pos, lbl,
                 "unknown field " + joined(cr.unknown_fields) +
                     (r.skip_if_unknown_filter ? " (skip-if-unknown-filter)" : "") +
                     ": vigil does not collect it; rule skipped");
      skip(r.name, "unknown_field");
      return nullptr;
    }
    for (const auto& t : cr.unknown_evttypes) {
      d_.warning(code::kUnknownEvtType, r.condition_pos, lbl, "unknown event type '" + t + "' never matches");
    }
    event::TypeMask mask = cr.expr->type_mask();
    const bool every_type = mask == event::TypeMask::all();
    // The kernel's rules never see a plugin's events, and a plugin source's
    // rules see only its events.
    if (r.source == "syscall") mask.reset(event::Type::kPlugin);
    else mask &= event::TypeMask(event::Type::kPlugin);
    if (mask.none()) {
      d_.warning(code::kNeverMatches, r.condition_pos, lbl,
                 "the condition only matches event types vigil does not collect: the rule loads but never fires");
    }
    if (every_type && r.warn_evttypes && r.source == "syscall") {  // a plugin source has one event type
      d_.warning(code::kNoEvttype, r.condition_pos, lbl,
                 "the condition does not restrict evt.type: it runs for every event");
    }
    std::vector<std::string> unknown_out;
    std::string oerr;
    OutputFormat of = OutputFormat::parse(trim(r.output), cat_, unknown_out, oerr);
    if (!oerr.empty()) {
      d_.error(code::kOutputSyntax, r.output_pos, lbl, oerr);
      return nullptr;
    }
    for (const auto& f : unknown_out) {
      d_.warning(code::kOutputField, r.output_pos, lbl, "unknown field '" + f + "' in output prints <NA>");
    }
    auto rule = std::make_unique<Ruleset::Rule>();
    rule->name = r.name;
    rule->desc = trim(r.desc);
    rule->priority = r.priority;
    rule->tags = r.tags;
    rule->source = r.source;
    rule->enabled = enabled_by_options(opts_, r.enabled, r.name, r.tags, r.priority);
    rule->expr = std::move(cr.expr);
    if (opts_.append_output) opts_.append_output->apply(r.name, r.source, r.tags, of, rule->extra_fields);
    rule->output = std::move(of);
    rule->output_fields = first_fields(rule->output);
    if (!aggregate(r, *rule)) return nullptr;
    rule->mask = mask;
    rule->file = r.pos.file;
    rule->line = r.pos.line;
    return rule;
  }

  // The rule's aggregation (its own `aggregate`, else the configuration's
  // default): noted in the Ruleset, and each `by` field the output does not
  // carry yet added to its output_fields, so that every alert holds its key
  // (the aggregation reads nothing but the alert). False on an error.
  bool aggregate(const RuleDef& r, Ruleset::Rule& rule) {
    const std::string lbl = "rule '" + r.name + "'";
    AggregateSpec spec;
    Pos by_pos = r.pos;
    if (r.aggregate) {
      const AggregateDoc& a = *r.aggregate;
      if (a.off) return true;
      spec.by = a.by;
      by_pos = a.by_pos;
      spec.window_ns = kDefaultAggregateWindowNs;
      if (!a.window.empty()) {
        std::string err;
        if (!parse_window(a.window, spec.window_ns, err)) {
          d_.error(code::kAggregate, a.window_pos, lbl, "'aggregate.window': " + err);
          return false;
        }
      }
    } else if (opts_.aggregate_default) {
      spec = *opts_.aggregate_default;
      by_pos = Pos{"aggregation.by", 0, 0};
    } else {
      return true;
    }
    if (spec.by.size() > kMaxAggregateKeyFields) {
      d_.error(code::kAggregate, by_pos, lbl,
               "'aggregate.by' has more than " + std::to_string(kMaxAggregateKeyFields) + " fields");
      return false;
    }
    const auto& toks = rule.output.tokens();
    for (const auto& f : spec.by) {
      std::vector<std::string> unknown;
      std::string err;
      OutputFormat one = OutputFormat::parse("%" + f, cat_, unknown, err);
      if (err.empty() && !unknown.empty()) err = "unknown field";
      if (err.empty() && (one.tokens().size() != 1 || !one.tokens()[0].is_field)) err = "not one field";
      if (!err.empty()) {
        d_.error(code::kAggregate, by_pos, lbl, "'aggregate.by' field '" + f.substr(0, 80) + "': " + err);
        return false;
      }
      const bool printed = std::any_of(rule.output_fields.begin(), rule.output_fields.end(),
                                       [&](std::size_t k) { return toks[k].name == f; });
      const bool extra = std::any_of(rule.extra_fields.begin(), rule.extra_fields.end(),
                                     [&](const ExtraField& e) { return e.key == f; });
      if (!printed && !extra) rule.extra_fields.push_back(ExtraField{f, std::move(one), true});
    }
    rs_->aggregates_[r.name] = std::move(spec);
    return true;
  }

  void skip(const std::string& name, const char* why) {
    ++res_.skipped;
    res_.skipped_rules.emplace_back(name, why);
  }

  // Sequences: each step compiles like a rule's condition and becomes a step
  // rule, indexed with the rules (after them).
  void compile_sequences() {
    std::set<std::string> rule_names;
    for (const auto& r : col_.rules()) rule_names.insert(r.name);
    std::vector<std::unique_ptr<Ruleset::Rule>> step_rules;
    for (const auto& sd : col_.sequences()) {
      if (stopped_) break;
      const std::string lbl = "sequence '" + sd.name + "'";
      if (std::string why = stop_reason(); !why.empty()) {
        d_.error(code::kCompileBudget, sd.pos, lbl,
                 why + "; stopped here, this sequence and those after it are not compiled");
        stopped_ = true;
        break;
      }
      if (rule_names.count(sd.name)) {
        d_.error(code::kSequence, sd.pos, lbl, "a rule has this name already: alerts would not say which fired");
        continue;
      }
      compile_sequence(sd, lbl, step_rules);
    }
    rs_->steps_ = step_rules.size();
    for (auto& st : step_rules) rs_->rules_.push_back(std::move(st));
    rs_->sequence_capacity_ = opts_.max_sequence_matches;
  }

  // One sequence: its correlation keys, its steps (appended to step_rules)
  // and its output; nothing when it has errors.
  void compile_sequence(const SequenceDef& sd, const std::string& lbl,
                        std::vector<std::unique_ptr<Ruleset::Rule>>& step_rules) {
    auto seq = std::make_unique<Ruleset::Sequence>();
    bool ok = true;
    seq->keys.push_back(resolve_key(sd.by, sd.by_pos, lbl, ok));
    for (const auto& st : sd.steps) {
      if (st.by.empty()) {
        seq->step_key.push_back(0);
      } else {
        seq->step_key.push_back(static_cast<std::uint8_t>(seq->keys.size()));
        seq->keys.push_back(resolve_key(st.by, st.by_pos, lbl, ok));
      }
    }
    if (!sd.distinct.empty()) seq->distinct = resolve_key(sd.distinct, sd.distinct_pos, lbl, ok);
    const auto seq_index = static_cast<std::int32_t>(rs_->sequences_.size());
    std::vector<std::unique_ptr<Ruleset::Rule>> steps;
    for (std::size_t i = 0; i < sd.steps.size(); ++i) {
      auto step = compile_step(sd, i, lbl + " step " + std::to_string(i + 1));
      if (!step) {
        ok = false;
        continue;
      }
      step->sequence = seq_index;
      steps.push_back(std::move(step));
    }
    std::vector<std::string> unknown_out;
    std::string oerr;
    OutputFormat of = OutputFormat::parse(trim(sd.output), cat_, unknown_out, oerr, sd.steps.size());
    if (!oerr.empty()) {
      d_.error(code::kOutputSyntax, sd.output_pos, lbl, oerr);
      ok = false;
    }
    for (const auto& f : unknown_out) {
      d_.warning(code::kOutputField, sd.output_pos, lbl, "unknown field '" + f + "' in output prints <NA>");
    }
    if (!ok) return;
    seq->name = sd.name;
    seq->desc = trim(sd.desc);
    seq->priority = sd.priority;
    seq->tags = sd.tags;
    seq->by = sd.by;
    seq->distinct_fields = sd.distinct;
    seq->within_ns = sd.within_ns;
    seq->steps = static_cast<std::uint32_t>(sd.steps.size());
    for (const auto& st : sd.steps) seq->step_count.push_back(st.count);
    seq->enabled = enabled_by_options(opts_, sd.enabled, sd.name, sd.tags, sd.priority);
    // A sequence's steps are kernel events: its source is syscall.
    if (opts_.append_output) opts_.append_output->apply(sd.name, "syscall", sd.tags, of, seq->extra_fields);
    seq->output = std::move(of);
    seq->output_fields = first_fields(seq->output);
    // The fields an earlier step (not the last) gives keep a slot in the partial match.
    const auto& toks = seq->output.tokens();
    seq->slot.assign(toks.size(), -1);
    for (std::size_t k = 0; k < toks.size(); ++k) {
      if (toks[k].is_field && toks[k].step >= 0 && static_cast<std::uint32_t>(toks[k].step) + 1 < seq->steps) {
        seq->slot[k] = static_cast<std::int32_t>(seq->slots++);
      }
    }
    seq->file = sd.pos.file;
    seq->line = sd.pos.line;
    for (auto& st : steps) {
      st->enabled = seq->enabled;
      seq->step_rules.push_back(static_cast<std::uint32_t>(rs_->rules_.size() + step_rules.size()));
      step_rules.push_back(std::move(st));
    }
    rs_->sequences_.push_back(std::move(seq));
    ++res_.sequences;
  }

  // A sequence's (or a step's) `by` fields, resolved; ok = false on an error.
  std::vector<OutputFormat::Token> resolve_key(const std::vector<std::string>& fields, const Pos& pos,
                                               const std::string& lbl, bool& ok) {
    std::vector<OutputFormat::Token> key;
    for (const auto& f : fields) {
      FieldExpr fe;
      std::string err;
      bool unknown = false;
      OutputFormat::Token tok;
      if (!parse_field_expr(f, fe, err) || !cat_.resolve(fe.name, fe.has_arg, fe.arg, tok.field, err, unknown)) {
        d_.error(code::kSequence, pos, lbl, "'by' field '" + f + "': " + err);
        ok = false;
        continue;
      }
      tok.is_field = true;
      tok.name = f;
      tok.transformers = fe.transformers;
      key.push_back(std::move(tok));
    }
    return key;
  }

  // Step i of a sequence as a step rule; null when it has errors.
  std::unique_ptr<Ruleset::Rule> compile_step(const SequenceDef& sd, std::size_t i, const std::string& slbl) {
    const StepDoc& st = sd.steps[i];
    NodePtr root = parse_noted(st.condition, st.pos, slbl);
    if (!root) return nullptr;
    CompileResult cr =
        compile_condition(std::move(root), macros_, lists_, cat_, &slots_, opts_.optimise, opts_.max_condition_nodes);
    for (std::size_t e = 0; e < cr.errors.size(); ++e) d_.error(cr.error_codes[e], st.pos, slbl, cr.errors[e].message);
    if (!cr.errors.empty()) return nullptr;
    // A sequence is vigil's own: no Falco rule file carries one, so a
    // field vigil does not know is an error, not a skip.
    if (!cr.unknown_fields.empty()) {
      d_.error(code::kSequence, st.pos, slbl, "unknown field " + joined(cr.unknown_fields));
      return nullptr;
    }
    for (const auto& t : cr.unknown_evttypes) {
      d_.warning(code::kUnknownEvtType, st.pos, slbl, "unknown event type '" + t + "' never matches");
    }
    event::TypeMask mask = cr.expr->type_mask();
    mask.reset(event::Type::kPlugin);
    if (mask.none()) {
      d_.warning(code::kNeverMatches, st.pos, slbl,
                 "the condition only matches event types vigil does not collect: the sequence never completes");
    } else if (cr.expr->type_mask() == event::TypeMask::all()) {
      d_.warning(code::kNoEvttype, st.pos, slbl, "the condition does not restrict evt.type: it runs for every event");
    }
    auto step = std::make_unique<Ruleset::Rule>();
    step->name = sd.name;
    step->source = "syscall";
    step->expr = std::move(cr.expr);
    step->mask = mask;
    step->file = st.pos.file;
    step->line = st.pos.line;
    step->step = static_cast<std::uint32_t>(i);
    return step;
  }

  void warn_unused() {
    for (const auto& m : col_.macros()) {
      if (macros_[m.name].ast) {
        collect_macro_refs(*macros_[m.name].ast, used_macros_);
        collect_list_refs(*macros_[m.name].ast, lists_, used_lists_);
      }
    }
    for (const auto& l : col_.lists()) {
      for (const auto& i : lists_[l.name]) {
        if (i != l.name && lists_.count(i)) used_lists_.insert(i);
      }
    }
    for (const auto& m : col_.macros()) {
      if (!used_macros_.count(m.name))
        d_.warning(code::kUnusedMacro, m.pos, "macro '" + m.name + "'", "macro is not used");
    }
    for (const auto& l : col_.lists()) {
      if (!used_lists_.count(l.name)) d_.warning(code::kUnusedList, l.pos, "list '" + l.name + "'", "list is not used");
    }
  }

  // Index by event type; gather the open filter's literal paths.
  void index_rules() {
    Ruleset& rs = *rs_;
    std::vector<PathLiteral> literals;
    for (std::uint32_t i = 0; i < rs.rules_.size(); ++i) {
      const auto& r = *rs.rules_[i];
      if (!r.enabled) continue;
      rs.type_bits_ |= r.mask;
      const event::TypeMask eval_mask = r.expr->eval_mask();
      for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
        if (!eval_mask.test(static_cast<event::Type>(t))) continue;
        auto& prog = rs.programs_[t];
        rs.index_[t].push_back({i, static_cast<std::uint32_t>(prog.size()), r.sequence, r.step});
        const std::size_t from = prog.size();
        r.expr->append_program(static_cast<event::Type>(t), prog);
        for (std::size_t k = from; k < prog.size(); ++k) {
          if (prog[k].id >= 0) {
            rs.check_words_[t] = std::max(rs.check_words_[t], static_cast<std::size_t>(prog[k].id) / 64 + 1);
          }
        }
      }
      if (!rs.needs_dns_) rs.needs_dns_ = reads_dns_names(r);
      if (r.mask.test(event::Type::kOpen)) {
        if (!r.expr->path_prefixes(literals)) {
          rs.open_unfiltered_.push_back(r.name);
        }
      }
    }
    // The kernel's tables take any number of these; a path that a
    // shorter prefix already covers takes none ("/tmp/" covers "/tmp/x/" and
    // the whole path "/tmp/a"); the rules still judge the exact path.
    rs.open_paths_ = open_paths_of(std::move(literals));
  }

  // fd.sip.name & co come from the DNS answers the state remembers: a rule
  // that reads one (in its condition, its output or append_output's extra
  // fields) needs the dns events even when no rule is on them.
  bool reads_dns_names(const Ruleset::Rule& r) const {
    static constexpr std::string_view kDnsNamed[] = {"fd.sip.name", "fd.rip.name", "fd.cip.name", "fd.lip.name"};
    bool reads = r.expr->reads_any(kDnsNamed);
    auto reads_in = [&](const OutputFormat& f) {
      for (const auto& tok : f.tokens()) {
        if (tok.field.def &&
            std::find(std::begin(kDnsNamed), std::end(kDnsNamed), tok.field.def->name) != std::end(kDnsNamed))
          reads = true;
      }
    };
    const bool step = r.sequence >= 0;
    reads_in(step ? rs_->sequences_[r.sequence]->output : r.output);
    for (const ExtraField& f : step ? rs_->sequences_[r.sequence]->extra_fields : r.extra_fields) reads_in(f.format);
    return reads;
  }

  void build_guards() {
    if (!opts_.optimise || stopped_) return;
    for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
      if (std::string why = stop_reason(); !why.empty()) {
        d_.error(code::kCompileBudget, Pos{}, "",
                 why + "; stopped while indexing the rules for event type " +
                     std::string(event::info(static_cast<event::Type>(t)).name));
        break;
      }
      std::vector<const Expr*> exprs;
      for (const auto& e : rs_->index_[t]) exprs.push_back(rs_->rules_[e.rule]->expr.get());
      auto g = std::make_unique<GuardIndex>();
      g->build(exprs, static_cast<event::Type>(t));
      if (g->active()) rs_->guards_[t] = std::move(g);
    }
  }

  const Collector& col_;
  Diagnostics& d_;
  const LoadOptions& opts_;
  const FieldCatalog& cat_;
  LoadResult res_;
  std::unique_ptr<Ruleset> rs_;
  ListMap lists_;
  MacroMap macros_;
  FieldSlots slots_;
  // Unused macros and lists (syntactic references from rules, macros and lists).
  std::set<std::string> used_macros_, used_lists_;
  const std::chrono::steady_clock::time_point deadline_;
  bool stopped_ = false;
};

LoadResult load_rules_text(const std::vector<std::pair<std::string, std::string>>& files, const LoadOptions& opts) {
  Diagnostics d;
  Collector col;
  for (const auto& [name, text] : files) {
    for (const auto& item : read_rules_yaml(text, name, d)) col.apply(item, d);
  }
  LoadResult r = RulesetBuilder::build(col, d, opts);
  r.diagnostics = d.take();
  return r;
}

LoadResult load_rules(const std::vector<std::string>& paths, const LoadOptions& opts) {
  Diagnostics d;
  std::vector<std::pair<std::string, std::string>> files;
  namespace fs = std::filesystem;
  auto read_file = [&](const fs::path& p) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "", "cannot read: " + ec.message());
      return;
    }
    if (size > opts.max_file_bytes) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "",
              "file is larger than " + std::to_string(opts.max_file_bytes) + " bytes");
      return;
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "", "cannot open file");
      return;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    files.emplace_back(p.string(), ss.str());
  };
  for (const auto& f : expand_yaml_paths(paths, d).files) read_file(f);
  Collector col;
  for (const auto& [name, text] : files) {
    for (const auto& item : read_rules_yaml(text, name, d)) col.apply(item, d);
  }
  LoadResult r = RulesetBuilder::build(col, d, opts);
  r.diagnostics = d.take();
  return r;
}

std::string summary_line(const LoadResult& r) {
  return "rules: " + std::to_string(r.loaded) + " loaded, " + std::to_string(r.skipped) + " skipped, " +
         std::to_string(r.errors) + " errors" + (r.sequences ? ", " + std::to_string(r.sequences) + " sequences" : "");
}

}  // namespace vigil::rules
