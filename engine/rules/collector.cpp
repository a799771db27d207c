// The collector: the items of the rules files, in order, into the lists,
// macros, rules and sequences they define (append and override included),
// and the engine versions they require. The items are read by document.cpp.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <string>

#include "engine/rules/document.h"
#include "engine/rules/prevention.h"

namespace vigil::rules {

// ---------------------------------------------------------------- versions

namespace {
bool parse_version(std::string_view s, int v[3]) {
  v[0] = v[1] = v[2] = 0;
  for (int i = 0; i < 3; ++i) {
    if (s.empty()) return i > 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v[i]);
    if (r.ec != std::errc()) return false;
    s.remove_prefix(static_cast<std::size_t>(r.ptr - s.data()));
    if (s.empty()) return true;
    if (s[0] != '.') return s[0] == '-' || s[0] == '+';
    s.remove_prefix(1);
  }
  return true;
}
}  // namespace

bool engine_version_satisfied(std::string_view required, std::string_view have) {
  int r[3], h[3];
  if (!parse_version(required, r) || !parse_version(have, h)) return false;
  // A bare integer is the legacy engine version (Falco's engine 0.N.0).
  if (required.find('.') == std::string_view::npos) {
    r[1] = r[0];
    r[0] = 0;
  }
  for (int i = 0; i < 3; ++i) {
    if (r[i] != h[i]) return h[i] > r[i];
  }
  return true;
}

// ---------------------------------------------------------------- collector

namespace {

std::string label(const char* kind, const std::string& name) { return std::string(kind) + " '" + name + "'"; }

// Falco's name rules: lists [^()"'\s=,]+, macros [a-zA-Z]+[a-zA-Z0-9_]*.
bool valid_list_name(const std::string& n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c == '(' || c == ')' || c == '"' || c == '\'' || c == '=' || c == ',' ||
        std::isspace(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}
bool valid_macro_name(const std::string& n) {
  if (n.empty() || !std::isalpha(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Pos key_pos(const ItemDoc& it, const std::string& k) {
  auto i = it.key_pos.find(k);
  return i == it.key_pos.end() ? it.pos : i->second;
}

// Checks the override map against the keys present; `appendable`/`replaceable`
// are the keys each mode allows.
bool check_overrides(const ItemDoc& it, const std::set<std::string>& appendable,
                     const std::set<std::string>& replaceable, const std::string& lbl, Diagnostics& d) {
  bool ok = true;
  if (it.append && !it.overrides.empty()) {
    d.error(code::kOverride, key_pos(it, "override"), lbl, "'append' and 'override' cannot be used together");
    return false;
  }
  for (const auto& [k, mode] : it.overrides) {
    const auto& allowed = mode == OverrideMode::kAppend ? appendable : replaceable;
    if (!allowed.count(k)) {
      d.error(
          code::kOverride, key_pos(it, "override"), lbl,
          "key '" + k + "' cannot be overridden with '" + (mode == OverrideMode::kAppend ? "append" : "replace") + "'");
      ok = false;
    }
    if (!it.key_pos.count(k)) {
      d.error(code::kOverride, key_pos(it, "override"), lbl,
              "override of '" + k + "' but the item has no '" + k + "' key");
      ok = false;
    }
  }
  if (!it.overrides.empty()) {
    for (const auto& [k, p] : it.key_pos) {
      if ((appendable.count(k) || replaceable.count(k)) && !it.overrides.count(k)) {
        d.error(code::kOverride, p, lbl, "unexpected key '" + k + "': no corresponding entry under 'override'");
        ok = false;
      }
    }
  }
  return ok;
}

void merge_exceptions(std::vector<ExceptionDoc>& into, const std::vector<ExceptionDoc>& add, const std::string& lbl,
                      Diagnostics& d) {
  for (const auto& e : add) {
    auto it = std::find_if(into.begin(), into.end(), [&](const ExceptionDoc& x) { return x.name == e.name; });
    if (it == into.end()) {
      into.push_back(e);
      continue;
    }
    if (!e.fields.empty() || e.has_comps) {
      d.error(code::kOverride, e.pos, lbl,
              "exception '" + e.name + "': appending may add values only, not fields or comps");
      continue;
    }
    if (!e.has_values || e.values.empty()) {
      d.warning(code::kAppendNoValues, e.pos, lbl, "exception '" + e.name + "': append with no values");
      continue;
    }
    it->has_values = true;
    it->values.insert(it->values.end(), e.values.begin(), e.values.end());
  }
}

}  // namespace

void Collector::apply(const ItemDoc& item, Diagnostics& diags) {
  switch (item.kind) {
    case ItemDoc::Kind::kList: apply_list(item, diags); break;
    case ItemDoc::Kind::kMacro: apply_macro(item, diags); break;
    case ItemDoc::Kind::kRule: apply_rule(item, diags); break;
    case ItemDoc::Kind::kSequence: apply_sequence(item, diags); break;
    case ItemDoc::Kind::kEngineVersion:
      if (!engine_version_satisfied(item.version, kEngineVersion)) {
        diags.error(
            code::kEngineVersion, item.pos, "",
            "rules require engine version " + item.version + ", vigil implements " + std::string(kEngineVersion));
      }
      break;
    case ItemDoc::Kind::kPluginVersions:
      plugins_.insert(plugins_.end(), item.plugins.begin(), item.plugins.end());
      break;
  }
}

void Collector::apply_list(const ItemDoc& it, Diagnostics& d) {
  const std::string lbl = label("list", it.name);
  if (!valid_list_name(it.name)) d.warning(code::kInvalidName, it.pos, lbl, "list name Falco would reject");
  if (!check_overrides(it, {"items"}, {"items"}, lbl, d)) return;
  if (it.append)
    d.warning(code::kDeprecated, key_pos(it, "append"), lbl,
              "'append: true' is deprecated; use 'override: {items: append}'");
  auto found = list_index_.find(it.name);
  bool appending = it.append || (it.overrides.count("items") && it.overrides.at("items") == OverrideMode::kAppend);
  bool replacing = it.overrides.count("items") && it.overrides.at("items") == OverrideMode::kReplace;
  if (appending || replacing) {
    if (found == list_index_.end()) {
      d.error(code::kOverride, it.pos, lbl,
              std::string(appending ? "append" : "override") + " to a list that is not defined");
      return;
    }
    auto& l = lists_[found->second];
    if (replacing) l.items = it.items;
    else l.items.insert(l.items.end(), it.items.begin(), it.items.end());
    return;
  }
  if (!it.key_pos.count("items")) {
    d.error(code::kYamlValidate, it.pos, lbl, "a list needs 'items'");
    return;
  }
  ListDoc l{it.name, it.pos, it.items};
  if (found != list_index_.end()) lists_[found->second] = std::move(l);
  else {
    list_index_[it.name] = lists_.size();
    lists_.push_back(std::move(l));
  }
}

void Collector::apply_macro(const ItemDoc& it, Diagnostics& d) {
  const std::string lbl = label("macro", it.name);
  if (!valid_macro_name(it.name)) d.warning(code::kInvalidName, it.pos, lbl, "macro name Falco would reject");
  if (!check_overrides(it, {"condition"}, {"condition"}, lbl, d)) return;
  if (it.append)
    d.warning(code::kDeprecated, key_pos(it, "append"), lbl,
              "'append: true' is deprecated; use 'override: {condition: append}'");
  if (!it.condition) {
    d.error(code::kYamlValidate, it.pos, lbl, "a macro needs a 'condition'");
    return;
  }
  auto found = macro_index_.find(it.name);
  bool appending =
      it.append || (it.overrides.count("condition") && it.overrides.at("condition") == OverrideMode::kAppend);
  bool replacing = it.overrides.count("condition") && it.overrides.at("condition") == OverrideMode::kReplace;
  if (appending || replacing) {
    if (found == macro_index_.end()) {
      d.error(code::kOverride, it.pos, lbl,
              std::string(appending ? "append" : "override") + " to a macro that is not defined");
      return;
    }
    auto& m = macros_[found->second];
    if (replacing) {
      m.condition = *it.condition;
      m.condition_pos = key_pos(it, "condition");
    } else {
      m.condition += " " + *it.condition;
    }
    return;
  }
  MacroDoc m{it.name, it.pos, *it.condition, key_pos(it, "condition")};
  if (found != macro_index_.end()) macros_[found->second] = std::move(m);
  else {
    macro_index_[it.name] = macros_.size();
    macros_.push_back(std::move(m));
  }
}

namespace {

const std::set<std::string> kRuleAppendable = {"condition", "output", "desc", "tags", "exceptions", "aggregate"};
const std::set<std::string> kRuleReplaceable = {"condition",
                                                "output",
                                                "desc",
                                                "priority",
                                                "tags",
                                                "exceptions",
                                                "enabled",
                                                "warn_evttypes",
                                                "skip-if-unknown-filter",
                                                "capture",
                                                "capture_duration",
                                                "action",
                                                "action_mode",
                                                "aggregate"};

// The prevention keys (docs/prevention.md), checked: false with an error
// naming the value where it is not one vigil knows.
bool rule_action(const ItemDoc& it, RuleDef& r, const std::string& lbl, Diagnostics& d) {
  bool ok = true;
  if (it.action) {
    std::string why;
    if (auto a = canonical_action(*it.action, why)) {
      r.action = std::move(*a);
      r.action_pos = key_pos(it, "action");
    } else {
      d.error(code::kYamlValidate, key_pos(it, "action"), lbl, why);
      ok = false;
    }
  }
  if (it.action_mode) {
    if (*it.action_mode != "off" && *it.action_mode != "monitor" && *it.action_mode != "enforce") {
      d.error(code::kYamlValidate, key_pos(it, "action_mode"), lbl,
              "unknown action_mode '" + *it.action_mode + "' (off, monitor, enforce)");
      ok = false;
    } else {
      r.action_mode = *it.action_mode;
      r.action_mode_pos = key_pos(it, "action_mode");
    }
  }
  return ok;
}

bool rule_priority(const ItemDoc& it, const std::string& s, event::Priority& p, const std::string& lbl,
                   Diagnostics& d) {
  auto v = event::priority_from_name(s);
  if (!v) {
    d.error(code::kPriority, key_pos(it, "priority"), lbl,
            "unknown priority '" + s + "' (Emergency, Alert, Critical, Error, Warning, Notice, Informational, Debug)");
    return false;
  }
  p = *v;
  return true;
}

// An `override` (or deprecated `append: true`) item applied to rule `r`.
void change_rule(const ItemDoc& it, RuleDef& r, const std::string& lbl, Diagnostics& d) {
  if (it.source && *it.source != r.source) {
    d.error(code::kOverride, key_pos(it, "source"), lbl, "a rule cannot be changed under a different source");
    return;
  }
  auto mode = [&](const char* k) {
    if (it.append) return it.key_pos.count(k) ? OverrideMode::kAppend : OverrideMode::kNone;
    auto m = it.overrides.find(k);
    return m == it.overrides.end() ? OverrideMode::kNone : m->second;
  };
  if (it.append) {
    for (const auto& [k, p] : it.key_pos) {
      if (k != "rule" && k != "append" && !kRuleAppendable.count(k)) {
        d.error(code::kOverride, p, lbl, "'" + k + "' cannot be appended to");
        return;
      }
    }
  }
  if (auto m = mode("condition"); m != OverrideMode::kNone) {
    if (m == OverrideMode::kAppend) r.condition += " " + *it.condition;
    else {
      r.condition = *it.condition;
      r.condition_pos = key_pos(it, "condition");
    }
  }
  if (auto m = mode("output"); m != OverrideMode::kNone) {
    if (m == OverrideMode::kAppend) r.output += " " + *it.output;
    else {
      r.output = *it.output;
      r.output_pos = key_pos(it, "output");
    }
  }
  if (auto m = mode("desc"); m != OverrideMode::kNone)
    r.desc = m == OverrideMode::kAppend ? r.desc + " " + *it.desc : *it.desc;
  if (auto m = mode("tags"); m != OverrideMode::kNone) {
    if (m == OverrideMode::kReplace) r.tags.clear();
    for (const auto& t : *it.tags) {
      if (std::find(r.tags.begin(), r.tags.end(), t) == r.tags.end()) r.tags.push_back(t);
    }
  }
  if (auto m = mode("exceptions"); m != OverrideMode::kNone) {
    if (m == OverrideMode::kReplace) r.exceptions = *it.exceptions;
    else merge_exceptions(r.exceptions, *it.exceptions, lbl, d);
  }
  if (auto m = mode("aggregate"); m != OverrideMode::kNone) {
    // append: the rule's key gains the fields given, a window given replaces
    // the rule's; off, or a rule without one, takes the new value whole.
    if (m == OverrideMode::kReplace || !r.aggregate || r.aggregate->off || it.aggregate->off) {
      r.aggregate = *it.aggregate;
    } else {
      AggregateDoc& a = *r.aggregate;
      const AggregateDoc& add = *it.aggregate;
      for (const auto& f : add.by) {
        if (std::find(a.by.begin(), a.by.end(), f) == a.by.end()) a.by.push_back(f);
      }
      if (add.has_by && !a.has_by) a.by_pos = add.by_pos;
      a.has_by = a.has_by || add.has_by;
      if (!add.window.empty()) {
        a.window = add.window;
        a.window_pos = add.window_pos;
      }
    }
  }
  if (mode("priority") == OverrideMode::kReplace) rule_priority(it, *it.priority, r.priority, lbl, d);
  if (mode("enabled") == OverrideMode::kReplace) r.enabled = *it.enabled;
  if (mode("warn_evttypes") == OverrideMode::kReplace) r.warn_evttypes = *it.warn_evttypes;
  if (mode("skip-if-unknown-filter") == OverrideMode::kReplace) r.skip_if_unknown_filter = *it.skip_if_unknown_filter;
  if (mode("action") == OverrideMode::kReplace || mode("action_mode") == OverrideMode::kReplace) {
    ItemDoc only;
    only.key_pos = it.key_pos;
    if (mode("action") == OverrideMode::kReplace) only.action = it.action;
    if (mode("action_mode") == OverrideMode::kReplace) only.action_mode = it.action_mode;
    rule_action(only, r, lbl, d);
  }
}

// A rule defined by `it` (all of it); false when it lacks a key or has a bad priority.
bool rule_from(const ItemDoc& it, RuleDef& r, const std::string& lbl, Diagnostics& d) {
  bool ok = true;
  for (const char* k : {"condition", "output", "desc", "priority"}) {
    if (!it.key_pos.count(k)) {
      d.error(code::kYamlValidate, it.pos, lbl, std::string("a rule needs '") + k + "'");
      ok = false;
    }
  }
  if (!ok) return false;
  r.name = it.name;
  r.pos = it.pos;
  r.desc = *it.desc;
  r.condition = *it.condition;
  r.condition_pos = key_pos(it, "condition");
  r.output = *it.output;
  r.output_pos = key_pos(it, "output");
  if (!rule_priority(it, *it.priority, r.priority, lbl, d)) return false;
  if (it.tags) r.tags = *it.tags;
  if (it.source && !it.source->empty()) r.source = *it.source;
  if (it.enabled) r.enabled = *it.enabled;
  if (it.warn_evttypes) r.warn_evttypes = *it.warn_evttypes;
  if (it.skip_if_unknown_filter) r.skip_if_unknown_filter = *it.skip_if_unknown_filter;
  if (!rule_action(it, r, lbl, d)) return false;
  r.aggregate = it.aggregate;
  if (it.exceptions) {
    std::set<std::string> names;
    for (const auto& e : *it.exceptions) {
      if (!names.insert(e.name).second) {
        d.warning(code::kExceptionName, e.pos, lbl, "exception name '" + e.name + "' is not unique");
        continue;
      }
      r.exceptions.push_back(e);
    }
  }
  return true;
}

}  // namespace

void Collector::apply_rule(const ItemDoc& it, Diagnostics& d) {
  const std::string lbl = label("rule", it.name);
  if (!check_overrides(it, kRuleAppendable, kRuleReplaceable, lbl, d)) return;
  auto found = rule_index_.find(it.name);
  if (it.append || !it.overrides.empty()) {
    if (it.append)
      d.warning(code::kDeprecated, key_pos(it, "append"), lbl, "'append: true' is deprecated; use 'override'");
    if (found == rule_index_.end()) {
      d.error(code::kOverride, it.pos, lbl,
              std::string(it.append ? "append" : "override") + " to a rule that is not defined");
      return;
    }
    change_rule(it, rules_[found->second], lbl, d);
    return;
  }
  // `- rule: X` + `enabled: false` only: the deprecated way to toggle a rule.
  bool only_enabled = it.enabled && it.key_pos.size() == 2 && it.key_pos.count("enabled");
  if (only_enabled) {
    if (found == rule_index_.end()) {
      d.error(code::kOverride, it.pos, lbl, "enabling or disabling a rule that is not defined");
      return;
    }
    d.warning(code::kDeprecated, key_pos(it, "enabled"), lbl,
              "changing 'enabled' without 'override' is deprecated; use 'override: {enabled: replace}'");
    rules_[found->second].enabled = *it.enabled;
    return;
  }
  RuleDef r;
  if (!rule_from(it, r, lbl, d)) return;
  if (found != rule_index_.end()) {
    r.pos = rules_[found->second].pos;
    rules_[found->second] = std::move(r);
  } else {
    rule_index_[it.name] = rules_.size();
    rules_.push_back(std::move(r));
  }
}

bool parse_window(std::string_view text, std::uint64_t& ns, std::string& error) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  std::uint64_t n = 0;
  auto r = std::from_chars(text.data(), text.data() + i, n);
  if (i == 0 || r.ec != std::errc()) {
    error = "'within' must be a number and a unit (ms, s, m, h), e.g. 60s";
    return false;
  }
  const std::string_view unit = text.substr(i);
  std::uint64_t scale = 0;
  if (unit == "ms") scale = 1000000ull;
  else if (unit == "s") scale = 1000000000ull;
  else if (unit == "m") scale = 60ull * 1000000000ull;
  else if (unit == "h") scale = 3600ull * 1000000000ull;
  if (scale == 0) {
    error = "'within' has unit '" + std::string(unit) + "': use ms, s, m or h";
    return false;
  }
  if (n == 0 || n > kMaxSequenceWindowNs / scale) {
    error = "'within' must be more than 0 and at most 24h";
    return false;
  }
  ns = n * scale;
  return true;
}

void Collector::apply_sequence(const ItemDoc& it, Diagnostics& d) {
  const std::string lbl = label("sequence", it.name);
  bool ok = true;
  for (const char* k : {"by", "within", "steps", "output", "desc", "priority"}) {
    if (!it.key_pos.count(k)) {
      d.error(code::kSequence, it.pos, lbl, std::string("a sequence needs '") + k + "'");
      ok = false;
    }
  }
  if (!ok) return;
  SequenceDef s;
  s.name = it.name;
  s.pos = it.pos;
  s.desc = *it.desc;
  s.by_pos = key_pos(it, "by");
  if (!it.by || it.by->empty() || it.by->size() > kMaxSequenceKeyFields) {
    d.error(code::kSequence, s.by_pos, lbl,
            "'by' must name 1 to " + std::to_string(kMaxSequenceKeyFields) + " fields (e.g. [container.id])");
    ok = false;
  } else {
    s.by = *it.by;
  }
  if (it.distinct) {
    s.distinct_pos = key_pos(it, "distinct");
    if (it.distinct->empty() || it.distinct->size() > kMaxSequenceKeyFields) {
      d.error(code::kSequence, s.distinct_pos, lbl,
              "'distinct' must name 1 to " + std::to_string(kMaxSequenceKeyFields) + " fields (e.g. [container.id])");
      ok = false;
    } else {
      s.distinct = *it.distinct;
    }
  }
  std::string err;
  if (!parse_window(it.within ? *it.within : "", s.within_ns, err)) {
    d.error(code::kSequence, key_pos(it, "within"), lbl, err);
    ok = false;
  }
  const std::size_t n = it.steps ? it.steps->size() : 0;
  // One step is enough when it counts: N matches of it within the window.
  const bool one_counted = n == 1 && (*it.steps)[0].count > 1;
  if ((n < kMinSequenceSteps && !one_counted) || n > kMaxSequenceSteps) {
    d.error(code::kSequence, key_pos(it, "steps"), lbl,
            "a sequence has " + std::to_string(kMinSequenceSteps) + " to " + std::to_string(kMaxSequenceSteps) +
                " steps (or one with a 'count' of 2 or more), this one " +
                (n > kMaxSequenceSteps ? "more than " + std::to_string(kMaxSequenceSteps) : std::to_string(n)));
    ok = false;
  } else if (!s.distinct.empty() && (*it.steps)[0].count > 1) {
    // A counted first step gathers matches of one key before any later
    // step: which of them a later step's `distinct` values would compare
    // with is not defined.
    d.error(code::kSequence, s.distinct_pos, lbl, "'distinct' cannot go with a first step that has a 'count'");
    ok = false;
  } else {
    s.steps = *it.steps;
    for (const auto& st : s.steps) {
      if (!st.by.empty() && st.by.size() != s.by.size()) {
        d.error(code::kSequence, st.by_pos, lbl,
                "a step's 'by' names as many fields as the sequence's (" + std::to_string(s.by.size()) + ")");
        ok = false;
      }
    }
  }
  s.output = *it.output;
  s.output_pos = key_pos(it, "output");
  auto p = event::priority_from_name(*it.priority);
  if (!p) {
    d.error(code::kPriority, key_pos(it, "priority"), lbl,
            "unknown priority '" + *it.priority +
                "' (Emergency, Alert, Critical, Error, Warning, Notice, Informational, Debug)");
    ok = false;
  } else {
    s.priority = *p;
  }
  if (it.tags) s.tags = *it.tags;
  if (it.enabled) s.enabled = *it.enabled;
  if (!ok) return;
  // A later definition replaces an earlier one (sequences have no append/override).
  if (auto found = sequence_index_.find(it.name); found != sequence_index_.end()) {
    s.pos = sequences_[found->second].pos;
    sequences_[found->second] = std::move(s);
  } else {
    sequence_index_[it.name] = sequences_.size();
    sequences_.push_back(std::move(s));
  }
}

}  // namespace vigil::rules
