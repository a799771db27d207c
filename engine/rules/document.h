// Rule documents: the items of rules files (rule, macro, list, sequence,
// required_engine_version, required_plugin_versions) read from YAML with the
// position of every key, and the collector that applies redefinitions, the
// legacy `append: true` and `override: {key: append|replace}` in load order.
//
// Thread-safety: values; functions are pure apart from the Diagnostics they fill.
#pragma once

#include <cstdint>
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
  bool fields_is_list = true;  // `fields: [a, b]` vs `fields: a`
  std::vector<std::string> fields;
  bool has_comps = false;
  std::vector<std::string> comps;  // one per field (or one for a scalar field)
  bool has_values = false;
  std::vector<std::vector<ExceptionValue>> values;  // tuples; scalar fields: 1-tuples
};

enum class OverrideMode { kNone, kAppend, kReplace };

struct PluginRequirement {
  std::string name;
  std::string version;
  std::vector<std::pair<std::string, std::string>> alternatives;
};

// One step of a sequence: a condition, as a rule's.
struct StepDoc {
  std::string condition;
  Pos pos;  // of the condition's value
  // The step's own correlation fields (as many as the sequence's `by`), when
  // the key is named differently in this step's events: the path written
  // (fd.name) is the path later run (proc.exepath). Empty: the sequence's.
  std::vector<std::string> by;
  Pos by_pos;
  // How many events must match this step (sharing the key) before it is
  // done: 1 to kMaxStepCount. On the first step the window slides: the
  // matches kept are those within `within` of the newest.
  std::uint32_t count = 1;
};

// A rule's `aggregate` (vigil's extension, docs/rules-language.md): repeats
// of the rule's alert with the same values of the `by` fields within
// `window` of event time are counted into one summary.
//
//   aggregate: {by: [container.id, proc.exepath], window: 10m}
//   aggregate: off        # never, whatever the configuration's default
struct AggregateDoc {
  bool off = false;
  bool has_by = false;
  std::vector<std::string> by;  // empty with has_by: the key is every output field
  Pos by_pos;
  std::string window;  // "" not given
  Pos window_pos;
  Pos pos;
};

struct ItemDoc {
  enum class Kind { kRule, kMacro, kList, kSequence, kEngineVersion, kPluginVersions };
  Kind kind = Kind::kRule;
  std::string name;
  Pos pos;
  std::map<std::string, Pos> key_pos;  // every key present, with its value's position
  std::map<std::string, OverrideMode> overrides;
  bool append = false;  // legacy `append: true`

  std::vector<std::string> items;        // list
  std::optional<std::string> condition;  // macro, rule
  std::optional<std::string> desc, output, priority, source;
  // Prevention (vigil): `action` is one word or a list of them (deny, kill,
  // freeze, label, delete_pod, none); `action_mode` off|monitor|enforce.
  std::optional<std::vector<std::string>> action;
  std::optional<std::string> action_mode;
  std::optional<bool> enabled, warn_evttypes, skip_if_unknown_filter;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::vector<ExceptionDoc>> exceptions;
  std::optional<AggregateDoc> aggregate;  // rule

  std::optional<std::vector<std::string>> by;        // sequence: correlation key fields
  std::optional<std::vector<std::string>> distinct;  // sequence: fields each step's event must not repeat
  std::optional<std::string> within;                 // sequence: window, "60s"
  std::optional<std::vector<StepDoc>> steps;         // sequence

  std::string version;                     // required_engine_version
  std::vector<PluginRequirement> plugins;  // required_plugin_versions
};

// Reads one rules file's text. Reports E002/E003/W001/W002 diagnostics and
// returns the well-formed items (a malformed item is dropped).
std::vector<ItemDoc> read_rules_yaml(std::string_view text, const std::string& file, Diagnostics& diags);

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
  // Prevention (docs/prevention.md): what vigil does when the rule matches,
  // beyond the alert ("" none, "deny", or the responses in the order
  // kill,freeze,label,delete_pod joined by commas, e.g. "kill,freeze"; see
  // rules::responses_of), and the rule's own mode
  // ("" the configuration's prevention.mode, "off", "monitor", "enforce").
  std::string action;
  Pos action_pos;
  std::string action_mode;
  Pos action_mode_pos;
  std::optional<AggregateDoc> aggregate;  // none: the configuration's default
};
// A sequence: ordered steps whose events share the values of the `by`
// fields and fall within `within` of the first step (docs/rules-language.md).
struct SequenceDef {
  std::string name;
  Pos pos;
  std::string desc;
  std::vector<std::string> by;
  Pos by_pos;
  // Fields whose values each step's event must not share with an earlier
  // step's (the same program in several pods: distinct container.id); empty:
  // none.
  std::vector<std::string> distinct;
  Pos distinct_pos;
  std::uint64_t within_ns = 0;
  std::vector<StepDoc> steps;
  std::string output;
  Pos output_pos;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  bool enabled = true;
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
  const std::vector<SequenceDef>& sequences() const { return sequences_; }
  const std::vector<MacroDoc>& macros() const { return macros_; }
  const std::vector<ListDoc>& lists() const { return lists_; }
  const std::vector<PluginRequirement>& plugins() const { return plugins_; }

 private:
  void apply_list(const ItemDoc& item, Diagnostics& diags);
  void apply_macro(const ItemDoc& item, Diagnostics& diags);
  void apply_rule(const ItemDoc& item, Diagnostics& diags);
  void apply_sequence(const ItemDoc& item, Diagnostics& diags);

  std::vector<RuleDef> rules_;
  std::vector<SequenceDef> sequences_;
  std::vector<MacroDoc> macros_;
  std::vector<ListDoc> lists_;
  std::map<std::string, std::size_t> rule_index_, sequence_index_, macro_index_, list_index_;
  std::vector<PluginRequirement> plugins_;
};

// Sequence bounds: steps per sequence and the longest window.
inline constexpr std::size_t kMinSequenceSteps = 2;
inline constexpr std::size_t kMaxSequenceSteps = 8;
// A step's `count` (one partial match keeps the time of each match of a
// counted first step: at most this many).
inline constexpr std::uint32_t kMaxStepCount = 100;
inline constexpr std::size_t kMaxSequenceKeyFields = 4;
inline constexpr std::uint64_t kMaxSequenceWindowNs = 24ull * 3600 * 1000000000ull;

// Parses a sequence window: a positive integer and a unit (ms, s, m, h), e.g.
// "60s", "500ms", "5m"; false (and `error` says why) when malformed, zero or
// longer than kMaxSequenceWindowNs.
bool parse_window(std::string_view text, std::uint64_t& ns, std::string& error);

// True when `required` ("0.57.0" or a legacy integer) is satisfied by `have`.
bool engine_version_satisfied(std::string_view required, std::string_view have);

}  // namespace vigil::rules
