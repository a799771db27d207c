// Rule documents: the items of rules files (rule, macro, list,
// required_engine_version, required_plugin_versions) read from YAML with the
// position of every key, and the collector that applies redefinitions, the
// legacy `append: true` and `override: {key: append|replace}` in load order.
//
// Thread-safety: values; functions are pure apart from the Diagnostics they fill.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/alert.h"
#include "engine/rules/diagnostic.h"

namespace vigil::rules {

// One element of an exception value tuple: a scalar or a list of scalars.
struct ExceptionValue {
  bool is_list = false;
  std::string text;
  std::vector<std::string> items;
};

struct ExceptionDoc {
  std::string name;
  Pos pos;
  bool fields_is_list = true;       // `fields: [a, b]` vs `fields: a`
  std::vector<std::string> fields;
  bool has_comps = false;
  std::vector<std::string> comps;   // one per field (or one for a scalar field)
  bool has_values = false;
  std::vector<std::vector<ExceptionValue>> values;  // tuples; scalar fields: 1-tuples
};

enum class OverrideMode { kNone, kAppend, kReplace };

struct PluginRequirement {
  std::string name;
  std::string version;
  std::vector<std::pair<std::string, std::string>> alternatives;
};

struct ItemDoc {
  enum class Kind { kRule, kMacro, kList, kEngineVersion, kPluginVersions };
  Kind kind = Kind::kRule;
  std::string name;
  Pos pos;
  std::map<std::string, Pos> key_pos;           // every key present, with its value's position
  std::map<std::string, OverrideMode> overrides;
  bool append = false;                          // legacy `append: true`

  std::vector<std::string> items;               // list
  std::optional<std::string> condition;         // macro, rule
  std::optional<std::string> desc, output, priority, source;
  std::optional<bool> enabled, warn_evttypes, skip_if_unknown_filter;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::vector<ExceptionDoc>> exceptions;

  std::string version;                          // required_engine_version
  std::vector<PluginRequirement> plugins;       // required_plugin_versions
};

// Reads one rules file's text. Reports E002/E003/W001/W002 diagnostics and
// returns the well-formed items (a malformed item is dropped).
std::vector<ItemDoc> read_rules_yaml(std::string_view text, const std::string& file,
                                     Diagnostics& diags);

// The definitions after every file was applied, in first-definition order.
struct RuleDef {
  std::string name;
  Pos pos;
  std::string desc;
  std::string condition;
  Pos condition_pos;
  std::string output;
  Pos output_pos;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  std::string source = "syscall";
  bool enabled = true;
  bool warn_evttypes = true;
  bool skip_if_unknown_filter = false;
  std::vector<ExceptionDoc> exceptions;
};
struct MacroDoc {
  std::string name;
  Pos pos;
  std::string condition;
  Pos condition_pos;
};
struct ListDoc {
  std::string name;
  Pos pos;
  std::vector<std::string> items;
};

class Collector {
 public:
  // The engine version vigil implements, compared with required_engine_version.
  static constexpr std::string_view kEngineVersion = "0.63.0";

  void apply(const ItemDoc& item, Diagnostics& diags);

  const std::vector<RuleDef>& rules() const { return rules_; }
  const std::vector<MacroDoc>& macros() const { return macros_; }
  const std::vector<ListDoc>& lists() const { return lists_; }
  const std::vector<PluginRequirement>& plugins() const { return plugins_; }

 private:
  void apply_list(const ItemDoc& item, Diagnostics& diags);
  void apply_macro(const ItemDoc& item, Diagnostics& diags);
  void apply_rule(const ItemDoc& item, Diagnostics& diags);

  std::vector<RuleDef> rules_;
  std::vector<MacroDoc> macros_;
  std::vector<ListDoc> lists_;
  std::map<std::string, std::size_t> rule_index_, macro_index_, list_index_;
  std::vector<PluginRequirement> plugins_;
};

// True when `required` ("0.57.0" or a legacy integer) is satisfied by `have`.
bool engine_version_satisfied(std::string_view required, std::string_view have);

}  // namespace vigil::rules
