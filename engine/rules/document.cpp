// The reader: a rules file's YAML into items (ItemDoc), each key checked
// and located (file:line:col); collector.cpp merges the items into the lists,
// macros, rules and sequences they define.
#include "engine/rules/document.h"

#include "engine/util/parse_number.h"
#include "engine/util/yaml_gate.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

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
        } else if (k == "count") {
          std::string v;
          if (!scalar(kv->second, v, it, "count")) {
            ok = false;
            continue;
          }
          std::uint32_t c = 0;
          if (!util::parse_whole(std::string_view(v), &c) || c < 1 || c > kMaxStepCount) {
            d_.error(code::kSequence, pos_of(kv->second, file_), item_label(it),
                     "a step's 'count' must be a whole number from 1 to " + std::to_string(kMaxStepCount));
            ok = false;
            continue;
          }
          st.count = c;
        } else {
          d_.warning(code::kUnknownKey, pos_of(kv->first, file_), item_label(it),
                     "unknown step key '" + k + "' ignored");
        }
      }
      out.push_back(std::move(st));
    }
    return ok;
  }

  // A rule's `aggregate`: off/false, on/true (the defaults), or a map of
  // `by` (a field or a list of fields) and `window` ("60s").
  bool aggregate(const YAML::Node& n, AggregateDoc& a, const ItemDoc& it) {
    a.pos = pos_of(n, file_);
    if (n.IsScalar()) {
      const std::string& v = n.Scalar();
      if (v == "off" || v == "false") a.off = true;
      else if (v != "on" && v != "true") {
        d_.error(code::kAggregate, a.pos, item_label(it),
                 "'aggregate' must be off, on or a map of 'by' and 'window', got '" + v.substr(0, 40) + "'");
        return false;
      }
      return true;
    }
    if (!n.IsMap()) {
      d_.error(code::kAggregate, a.pos, item_label(it), "'aggregate' must be off, on or a map of 'by' and 'window'");
      return false;
    }
    bool ok = true;
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      const std::string k = kv->first.IsScalar() ? kv->first.Scalar() : "";
      if (k == "by") {
        a.has_by = true;
        a.by_pos = pos_of(kv->second, file_);
        if (kv->second.IsScalar()) a.by.push_back(kv->second.Scalar());
        else ok = string_list(kv->second, a.by, it, "aggregate.by") && ok;
      } else if (k == "window") {
        a.window_pos = pos_of(kv->second, file_);
        ok = scalar(kv->second, a.window, it, "aggregate.window") && ok;
        if (ok && a.window.empty()) {
          d_.error(code::kAggregate, a.window_pos, item_label(it), "'aggregate.window' must not be empty");
          ok = false;
        }
      } else {
        // A typo must not quietly change what is sent.
        d_.error(code::kAggregate, pos_of(kv->first, file_), item_label(it),
                 "unknown key '" + k.substr(0, 40) + "' in 'aggregate' (by, window)");
        ok = false;
      }
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
                                                    "capture_duration",
                                                    "action",
                                                    "action_mode",
                                                    "aggregate"};
    static const std::set<std::string> kMacroKeys = {"macro", "condition", "append", "override"};
    static const std::set<std::string> kListKeys = {"list", "items", "append", "override"};
    static const std::set<std::string> kSequenceKeys = {"sequence", "desc",   "by",       "distinct", "within",
                                                        "steps",    "output", "priority", "tags",     "enabled"};
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
    } else if (k == "action") {
      // One response or a list of them ([kill, freeze]).
      std::vector<std::string> a;
      if (v.IsScalar()) a.push_back(v.Scalar());
      else if (!string_list(v, a, it, "action")) return false;
      it.action = std::move(a);
    } else if (k == "action_mode") {
      if (!scalar(v, s, it, "action_mode")) return false;
      it.action_mode = s;
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
    } else if (k == "distinct") {
      std::vector<std::string> f;
      if (v.IsScalar()) f.push_back(v.Scalar());
      else if (!string_list(v, f, it, "distinct")) return false;
      it.distinct = std::move(f);
    } else if (k == "within") {
      if (!scalar(v, s, it, "within")) return false;
      it.within = s;
    } else if (k == "aggregate") {
      AggregateDoc a;
      if (!aggregate(v, a, it)) return false;
      it.aggregate = std::move(a);
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

}  // namespace vigil::rules
