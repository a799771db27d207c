#include "engine/rules/document.h"

#include "engine/util/yaml_gate.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

namespace vigil::rules {

namespace {

constexpr std::size_t kMaxListItems = 100000;

Pos pos_of(const YAML::Node& n, const std::string& file) {
  auto m = n.Mark();
  if (m.line < 0) return Pos{file, 0, 0};
  return Pos{file, m.line + 1, m.column + 1};
}

std::string item_label(const ItemDoc& d) {
  switch (d.kind) {
    case ItemDoc::Kind::kRule: return "rule '" + d.name + "'";
    case ItemDoc::Kind::kMacro: return "macro '" + d.name + "'";
    case ItemDoc::Kind::kList: return "list '" + d.name + "'";
    case ItemDoc::Kind::kSequence: return "sequence '" + d.name + "'";
    default: return "";
  }
}

class Reader {
 public:
  Reader(const std::string& file, Diagnostics& d) : file_(file), d_(d) {}

  bool scalar(const YAML::Node& n, std::string& out, const ItemDoc& it, const char* key) {
    if (!n.IsScalar()) {
      if (n.IsNull()) {
        out.clear();
        return true;
      }
      d_.error(code::kYamlValidate, pos_of(n, file_), item_label(it), std::string("'") + key + "' must be a string");
      return false;
    }
    out = n.Scalar();
    return true;
  }
  bool boolean(const YAML::Node& n, bool& out, const ItemDoc& it, const char* key) {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "TRUE" || s == "yes") {
        out = true;
        return true;
      }
      if (s == "false" || s == "False" || s == "FALSE" || s == "no") {
        out = false;
        return true;
      }
    }
    d_.error(code::kYamlValidate, pos_of(n, file_), item_label(it), std::string("'") + key + "' must be true or false");
    return false;
  }
  bool string_list(const YAML::Node& n, std::vector<std::string>& out, const ItemDoc& it, const char* key) {
    if (n.IsNull()) return true;
    if (!n.IsSequence()) {
      d_.error(code::kYamlValidate, pos_of(n, file_), item_label(it), std::string("'") + key + "' must be a list");
      return false;
    }
    for (const auto& e : n) {
      if (out.size() >= kMaxListItems) {
        d_.error(code::kYamlValidate, pos_of(n, file_), item_label(it),
                 std::string("'") + key + "' has too many items");
        return false;
      }
      if (!e.IsScalar()) {
        d_.error(code::kYamlValidate, pos_of(e, file_), item_label(it),
                 std::string("items of '") + key + "' must be strings");
        return false;
      }
      out.push_back(e.Scalar());
    }
    return true;
  }

  bool exception_value(const YAML::Node& n, ExceptionValue& v, const ItemDoc& it) {
    if (n.IsScalar()) {
      v.text = n.Scalar();
      return true;
    }
    if (n.IsSequence()) {
      v.is_list = true;
      return string_list(n, v.items, it, "values");
    }
    d_.error(code::kException, pos_of(n, file_), item_label(it),
             "exception values must be strings or lists of strings");
    return false;
  }

  bool exceptions(const YAML::Node& n, std::vector<ExceptionDoc>& out, const ItemDoc& it) {
    if (n.IsNull()) return true;
    if (!n.IsSequence()) {
      d_.error(code::kException, pos_of(n, file_), item_label(it), "'exceptions' must be a list");
      return false;
    }
    bool ok = true;
    for (const auto& e : n) {
      if (!e.IsMap()) {
        d_.error(code::kException, pos_of(e, file_), item_label(it), "an exception must be a map");
        ok = false;
        continue;
      }
      ExceptionDoc x;
      x.pos = pos_of(e, file_);
      for (auto kv = e.begin(); kv != e.end(); ++kv) {
        std::string k = kv->first.IsScalar() ? kv->first.Scalar() : "";
        const YAML::Node v = kv->second;
        if (k == "name") {
          ok = scalar(v, x.name, it, "name") && ok;
        } else if (k == "fields") {
          if (v.IsScalar()) {
            x.fields_is_list = false;
            x.fields.push_back(v.Scalar());
          } else {
            ok = string_list(v, x.fields, it, "fields") && ok;
          }
        } else if (k == "comps") {
          x.has_comps = true;
          if (v.IsScalar()) x.comps.push_back(v.Scalar());
          else ok = string_list(v, x.comps, it, "comps") && ok;
        } else if (k == "values") {
          x.has_values = true;
          if (v.IsNull()) continue;
          if (!v.IsSequence()) {
            d_.error(code::kException, pos_of(v, file_), item_label(it), "exception 'values' must be a list");
            ok = false;
            continue;
          }
          for (const auto& tuple : v) {
            if (x.values.size() >= kMaxListItems) break;
            std::vector<ExceptionValue> t;
            if (tuple.IsSequence()) {
              for (const auto& el : tuple) {
                ExceptionValue ev;
                if (!exception_value(el, ev, it)) {
                  ok = false;
                  break;
                }
                t.push_back(std::move(ev));
              }
            } else {
              ExceptionValue ev;
              if (!exception_value(tuple, ev, it)) {
                ok = false;
                continue;
              }
              t.push_back(std::move(ev));
            }
            x.values.push_back(std::move(t));
          }
        } else {
          d_.warning(code::kUnknownKey, pos_of(kv->first, file_), item_label(it),
                     "unknown exception key '" + k + "' ignored");
        }
      }
      if (x.name.empty()) {
        d_.error(code::kException, x.pos, item_label(it), "an exception needs a 'name'");
        ok = false;
        continue;
      }
      out.push_back(std::move(x));
    }
    return ok;
  }

  // A sequence's steps: a list of maps, each with a `condition`.
  bool steps(const YAML::Node& n, std::vector<StepDoc>& out, const ItemDoc& it) {
    if (!n.IsSequence()) {
      d_.error(code::kSequence, pos_of(n, file_), item_label(it), "'steps' must be a list of {condition: ...}");
      return false;
    }
    bool ok = true;
    for (const auto& e : n) {
      if (out.size() > kMaxSequenceSteps) break;  // reported by the collector
      if (!e.IsMap() || !e["condition"]) {
        d_.error(code::kSequence, pos_of(e, file_), item_label(it), "a step must be a map with a 'condition'");
        ok = false;
        continue;
      }
      StepDoc st;
      for (auto kv = e.begin(); kv != e.end(); ++kv) {
        std::string k = kv->first.IsScalar() ? kv->first.Scalar() : "";
        if (k == "condition") {
          st.pos = pos_of(kv->second, file_);
          ok = scalar(kv->second, st.condition, it, "condition") && ok;
        } else if (k == "by") {
          st.by_pos = pos_of(kv->second, file_);
          if (kv->second.IsScalar()) st.by.push_back(kv->second.Scalar());
          else ok = string_list(kv->second, st.by, it, "by") && ok;
        } else {
          d_.warning(code::kUnknownKey, pos_of(kv->first, file_), item_label(it),
                     "unknown step key '" + k + "' ignored");
        }
      }
      out.push_back(std::move(st));
    }
    return ok;
  }

  bool overrides(const YAML::Node& n, ItemDoc& it) {
    if (!n.IsMap()) {
      d_.error(code::kOverride, pos_of(n, file_), item_label(it), "'override' must be a map of key: append|replace");
      return false;
    }
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      std::string k = kv->first.IsScalar() ? kv->first.Scalar() : "";
      std::string v = kv->second.IsScalar() ? kv->second.Scalar() : "";
      if (v == "append") it.overrides[k] = OverrideMode::kAppend;
      else if (v == "replace") it.overrides[k] = OverrideMode::kReplace;
      else {
        d_.error(code::kOverride, pos_of(kv->second, file_), item_label(it),
                 "override of '" + k + "' must be 'append' or 'replace'");
        return false;
      }
    }
    return true;
  }

  // One top-level item: its kind, then the version items whole, or the
  // named items (rule, macro, list, sequence) key by key.
  void item(const YAML::Node& n, std::vector<ItemDoc>& out) {
    if (!n.IsMap()) {
      d_.error(code::kYamlValidate, pos_of(n, file_), "", "each item of a rules file must be a map");
      return;
    }
    ItemDoc it;
    it.pos = pos_of(n, file_);
    const char* kind_key = kind_of(n, it);
    if (!kind_key) {
      std::string first = n.begin() != n.end() && n.begin()->first.IsScalar() ? n.begin()->first.Scalar() : "?";
      d_.warning(code::kUnknownItem, it.pos, "", "unknown top-level item '" + first + "' ignored");
      return;
    }
    const YAML::Node head = n[kind_key];
    if (it.kind == ItemDoc::Kind::kEngineVersion) {
      if (engine_version(head, it)) out.push_back(std::move(it));
      return;
    }
    if (it.kind == ItemDoc::Kind::kPluginVersions) {
      if (plugin_versions(head, it)) out.push_back(std::move(it));
      return;
    }
    if (!head.IsScalar() || head.Scalar().empty()) {
      d_.error(code::kYamlValidate, pos_of(head, file_), "", std::string("'") + kind_key + "' must name the item");
      return;
    }
    it.name = head.Scalar();
    bool ok = true;
    const auto& allowed = allowed_keys(it.kind);
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      if (!kv->first.IsScalar()) continue;
      const std::string k = kv->first.Scalar();
      const YAML::Node v = kv->second;
      if (!allowed.count(k)) {
        d_.warning(code::kUnknownKey, pos_of(kv->first, file_), item_label(it), "unknown key '" + k + "' ignored");
        continue;
      }
      it.key_pos[k] = pos_of(v, file_);
      if (k == "rule" || k == "macro" || k == "list" || k == "sequence") continue;
      ok = key(k, v, it) && ok;
    }
    if (ok) out.push_back(std::move(it));
  }

  // The item's kind, by its first key that names one; null when none does.
  static const char* kind_of(const YAML::Node& n, ItemDoc& it) {
    static const std::pair<const char*, ItemDoc::Kind> kKinds[] = {
        {"rule", ItemDoc::Kind::kRule},
        {"macro", ItemDoc::Kind::kMacro},
        {"list", ItemDoc::Kind::kList},
        {"sequence", ItemDoc::Kind::kSequence},
        {"required_engine_version", ItemDoc::Kind::kEngineVersion},
        {"required_plugin_versions", ItemDoc::Kind::kPluginVersions}};
    for (const auto& [k, kind] : kKinds) {
      if (n[k]) {
        it.kind = kind;
        return k;
      }
    }
    return nullptr;
  }

  bool engine_version(const YAML::Node& head, ItemDoc& it) {
    if (!head.IsScalar()) {
      d_.error(code::kYamlValidate, pos_of(head, file_), "", "required_engine_version must be a version");
      return false;
    }
    it.version = head.Scalar();
    return true;
  }

  bool plugin_versions(const YAML::Node& head, ItemDoc& it) {
    if (!head.IsSequence()) {
      d_.error(code::kYamlValidate, pos_of(head, file_), "", "required_plugin_versions must be a list");
      return false;
    }
    for (const auto& p : head) {
      if (!p.IsMap() || !p["name"] || !p["name"].IsScalar()) {
        d_.error(code::kYamlValidate, pos_of(p, file_), "", "a required plugin needs a 'name' and a 'version'");
        continue;
      }
      PluginRequirement r;
      r.name = p["name"].Scalar();
      if (p["version"] && p["version"].IsScalar()) r.version = p["version"].Scalar();
      if (p["alternatives"] && p["alternatives"].IsSequence()) {
        for (const auto& a : p["alternatives"]) {
          if (a.IsMap() && a["name"] && a["name"].IsScalar()) {
            r.alternatives.emplace_back(a["name"].Scalar(),
                                        a["version"] && a["version"].IsScalar() ? a["version"].Scalar() : "");
          }
        }
      }
      it.plugins.push_back(std::move(r));
    }
    return true;
  }

  static const std::set<std::string>& allowed_keys(ItemDoc::Kind kind) {
    static const std::set<std::string> kRuleKeys = {"rule",
                                                    "desc",
                                                    "condition",
                                                    "output",
                                                    "priority",
                                                    "tags",
                                                    "enabled",
                                                    "source",
                                                    "exceptions",
                                                    "warn_evttypes",
                                                    "skip-if-unknown-filter",
                                                    "append",
                                                    "override",
                                                    "capture",
                                                    "capture_duration"};
    static const std::set<std::string> kMacroKeys = {"macro", "condition", "append", "override"};
    static const std::set<std::string> kListKeys = {"list", "items", "append", "override"};
    static const std::set<std::string> kSequenceKeys = {"sequence", "desc",     "by",   "within", "steps",
                                                        "output",   "priority", "tags", "enabled"};
    return kind == ItemDoc::Kind::kRule       ? kRuleKeys
           : kind == ItemDoc::Kind::kMacro    ? kMacroKeys
           : kind == ItemDoc::Kind::kSequence ? kSequenceKeys
                                              : kListKeys;
  }

  // One key of a named item into `it`; false when its value is not valid.
  bool key(const std::string& k, const YAML::Node& v, ItemDoc& it) {
    std::string s;
    bool b = false;
    if (k == "condition") {
      if (!scalar(v, s, it, "condition")) return false;
      it.condition = s;
    } else if (k == "desc") {
      if (!scalar(v, s, it, "desc")) return false;
      it.desc = s;
    } else if (k == "output") {
      if (!scalar(v, s, it, "output")) return false;
      it.output = s;
    } else if (k == "priority") {
      if (!scalar(v, s, it, "priority")) return false;
      it.priority = s;
    } else if (k == "source") {
      if (!scalar(v, s, it, "source")) return false;
      it.source = s;
    } else if (k == "enabled") {
      if (!boolean(v, b, it, "enabled")) return false;
      it.enabled = b;
    } else if (k == "warn_evttypes") {
      if (!boolean(v, b, it, "warn_evttypes")) return false;
      it.warn_evttypes = b;
    } else if (k == "skip-if-unknown-filter") {
      if (!boolean(v, b, it, "skip-if-unknown-filter")) return false;
      it.skip_if_unknown_filter = b;
    } else if (k == "append") {
      if (!boolean(v, b, it, "append")) return false;
      it.append = b;
    } else if (k == "capture") {
      return boolean(v, b, it, "capture");
    } else if (k == "capture_duration") {
      return scalar(v, s, it, "capture_duration");
    } else if (k == "tags") {
      std::vector<std::string> t;
      if (!string_list(v, t, it, "tags")) return false;
      it.tags = std::move(t);
    } else if (k == "items") {
      return string_list(v, it.items, it, "items");
    } else if (k == "exceptions") {
      std::vector<ExceptionDoc> ex;
      if (!exceptions(v, ex, it)) return false;
      it.exceptions = std::move(ex);
    } else if (k == "override") {
      return overrides(v, it);
    } else if (k == "by") {
      std::vector<std::string> f;
      if (v.IsScalar()) f.push_back(v.Scalar());
      else if (!string_list(v, f, it, "by")) return false;
      it.by = std::move(f);
    } else if (k == "within") {
      if (!scalar(v, s, it, "within")) return false;
      it.within = s;
    } else if (k == "steps") {
      std::vector<StepDoc> st;
      if (!steps(v, st, it)) return false;
      it.steps = std::move(st);
    }
    return true;
  }

 private:
  const std::string& file_;
  Diagnostics& d_;
};

}  // namespace

namespace {

// Counts parse events and stops the parse past a budget. yaml-cpp 0.7 can
// loop forever on some malformed inputs (found by fuzzing: a flow entry at
// the start of a document); a dry run with this handler bounds it.
class BudgetHandler : public YAML::EventHandler {
 public:
  explicit BudgetHandler(std::size_t budget) : left_(budget) {}
  struct Exhausted {};
  void OnDocumentStart(const YAML::Mark&) override { tick(); }
  void OnDocumentEnd() override { tick(); }
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { tick(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { tick(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { tick(); }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    tick();
  }
  void OnSequenceEnd() override { tick(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { tick(); }
  void OnMapEnd() override { tick(); }

 private:
  void tick() {
    if (left_ == 0) throw Exhausted{};
    --left_;
  }
  std::size_t left_;
};

}  // namespace

std::vector<ItemDoc> read_rules_yaml(std::string_view text, const std::string& file, Diagnostics& diags) {
  std::vector<ItemDoc> out;
  std::vector<YAML::Node> docs;
  // libyaml first: yaml-cpp 0.7 can loop without bound on some malformed input.
  if (YamlSyntaxError se; !yaml_syntax_ok(text, &se)) {
    diags.error(code::kYamlParse, Pos{file, se.line, se.column}, "", "invalid YAML: " + se.message);
    return out;
  }
  try {
    // A YAML event needs at least one byte of input, give or take the
    // implicit ones; anything far beyond that is the parser looping.
    std::istringstream in{std::string(text)};
    YAML::Parser dry(in);
    BudgetHandler budget(4 * text.size() + 1024);
    std::size_t documents = 0;
    while (dry.HandleNextDocument(budget)) {
      if (++documents > 100000) throw BudgetHandler::Exhausted{};
    }
  } catch (const BudgetHandler::Exhausted&) {
    diags.error(code::kYamlParse, Pos{file, 0, 0}, "", "invalid YAML: the parser does not terminate on this input");
    return out;
  } catch (const YAML::Exception&) {
    // Reported with its position by the real parse below.
  }
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    Pos p{file, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    diags.error(code::kYamlParse, p, "", "invalid YAML: " + e.msg);
    return out;
  } catch (const std::exception& e) {
    diags.error(code::kYamlParse, Pos{file, 0, 0}, "", std::string("invalid YAML: ") + e.what());
    return out;
  }
  Reader r(file, diags);
  try {
    for (const auto& doc : docs) {
      if (doc.IsNull()) continue;
      if (!doc.IsSequence()) {
        diags.error(code::kYamlValidate, pos_of(doc, file), "",
                    "a rules file must be a list of items (rule, macro, list, ...)");
        continue;
      }
      for (const auto& n : doc) r.item(n, out);
    }
  } catch (const YAML::Exception& e) {
    Pos p{file, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    diags.error(code::kYamlValidate, p, "", "invalid rules file: " + e.msg);
  }
  return out;
}

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

const std::set<std::string> kRuleAppendable = {"condition", "output", "desc", "tags", "exceptions"};
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
                                                "capture_duration"};

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
  if (mode("priority") == OverrideMode::kReplace) rule_priority(it, *it.priority, r.priority, lbl, d);
  if (mode("enabled") == OverrideMode::kReplace) r.enabled = *it.enabled;
  if (mode("warn_evttypes") == OverrideMode::kReplace) r.warn_evttypes = *it.warn_evttypes;
  if (mode("skip-if-unknown-filter") == OverrideMode::kReplace) r.skip_if_unknown_filter = *it.skip_if_unknown_filter;
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
  std::string err;
  if (!parse_window(it.within ? *it.within : "", s.within_ns, err)) {
    d.error(code::kSequence, key_pos(it, "within"), lbl, err);
    ok = false;
  }
  const std::size_t n = it.steps ? it.steps->size() : 0;
  if (n < kMinSequenceSteps || n > kMaxSequenceSteps) {
    d.error(code::kSequence, key_pos(it, "steps"), lbl,
            "a sequence has " + std::to_string(kMinSequenceSteps) + " to " + std::to_string(kMaxSequenceSteps) +
                " steps, this one " +
                (n > kMaxSequenceSteps ? "more than " + std::to_string(kMaxSequenceSteps) : std::to_string(n)));
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
