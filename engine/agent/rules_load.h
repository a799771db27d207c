// Finding and loading the rules of the agent: where they come from (-r, the
// configuration's rules:, the bundled directory), the load with every
// diagnostic logged, and the rule-count policy that decides whether a loaded
// set may be used (at start and on a reload).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/rules/ruleset.h"
#include "engine/util/config_origin.h"
#include "engine/util/result.h"

namespace vigil::plugin {
class Host;
}

namespace vigil::agent {

// The bundled rules directory: next to the binary (../rules from build/),
// the installed copy (/usr/share/vigil/rules, /usr/local/share/vigil/rules),
// or ./rules. "" when none exists.
std::string find_bundled_rules();

// `rules:` in the configuration: a string or a list of strings.
Result<std::vector<std::string>> config_rule_paths(const YAML::Node& cfg);

// How many rules a load must leave for vigil run to use it. A run with no
// enabled rule detects nothing, so it is refused unless asked for.
struct RuleCountPolicy {
  bool allow_empty = false;        // --allow-no-rules
  double max_skipped_share = 0.5;  // --max-skipped-rules PERCENT / 100
};

// The counts of one load of the rules, and of the set in force (a reload).
struct RuleCounts {
  std::size_t enabled = 0;  // enabled rules in the new set
  std::size_t skipped = 0;  // rules the load skipped (unknown field or source: warnings)
  std::vector<std::pair<std::string, std::string>> skipped_rules;  // (name, why), for metrics
  std::size_t enabled_in_force = 0;                                // enabled rules of the set in force; 0 at start
};

// Why a loaded set must not be used (bad input, naming the counts), or OK:
// - no enabled rule, unless policy.allow_empty;
// - a reload (enabled_in_force > 0) that skipped rules and would leave more
//   than policy.max_skipped_share of the enabled rules in force out
//   (enabled_in_force - enabled > share * enabled_in_force).
Status check_rule_counts(const RuleCounts& c, const RuleCountPolicy& policy);

// The configuration's `aggregation.window_s` and `aggregation.by` (the
// default aggregation of the rules without an `aggregate` key; window_s 0,
// the default, leaves them alone) into opts.aggregate_default. Bad input
// names the key. set_append_output() calls it: the two are what the
// configuration adds to every rule.
Status set_aggregation(const YAML::Node& cfg, rules::LoadOptions& opts);

// The configuration's `append_output:` (Falco's default, suggested_output on,
// when the key is absent) compiled into opts.append_output, against the
// rules' field catalogue (opts.fields: set it first) with vigil's suggested
// fields (container and pod) and those of `plugins` (may be null). Bad input
// names where the value came from (`origin`) and its key:
//   "vigil.yaml:9:11: append_output[0].extra_fields[0]: unknown field 'container.idd' ..."
Status set_append_output(const YAML::Node& cfg, const ConfigOrigin& origin, const plugin::Host* plugins,
                         rules::LoadOptions& opts);

// The configuration's prevention.mode (off, monitor, enforce; absent: off)
// into opts.prevention_mode. Bad input names the value.
Status set_prevention_mode(const YAML::Node& cfg, rules::LoadOptions& opts);

// Loads rules, logging every diagnostic (skipped rules are warnings that name
// them); an error when any rule file has errors. `counts`, when given, gets
// the load's enabled and skipped counts.
Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log,
                                                                const rules::LoadOptions& opts = {},
                                                                RuleCounts* counts = nullptr);

}  // namespace vigil::agent
