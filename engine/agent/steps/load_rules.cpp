// Step "load rules" (bad input → 2): vigil run's, with the rule-count policy,
// and vigil replay's.
#include "engine/agent/steps/steps.h"

#include <chrono>

#include "engine/agent/config.h"
#include "engine/agent/rules_load.h"
#include "engine/config/config.h"

namespace vigil::agent::steps {

// The longest a load of the rules may take, at start and on SIGHUP
// (docs/rules.md, "Limits").
constexpr std::chrono::seconds kRulesCompileBudget{60};

Status load_rules(Agent& a) {
  a.load_opts.compile_budget = kRulesCompileBudget;
  a.count_policy = {a.opts.allow_no_rules, a.opts.max_skipped_percent / 100.0};
  auto paths = run_rule_paths(a.opts, a.cfg);
  if (!paths) return paths.error();
  a.rule_paths = *paths;
  if (Status s = set_append_output(a.cfg, config::config_origin(a.opts.config, a.opts.overrides), a.plugins.get(),
                                   a.load_opts);
      !s) {
    return s;
  }
  if (Status s = set_prevention_mode(a.cfg, a.load_opts); !s) return s;
  RuleCounts counts;
  auto loaded = load_rules_logged(a.rule_paths, *a.log, a.load_opts, &counts);
  if (!loaded) return loaded.error();
  if (Status ok = check_rule_counts(counts, a.count_policy); !ok) {
    std::string from;
    for (const auto& p : a.rule_paths) from += (from.empty() ? "" : ", ") + p;
    return Error::bad_input("rules from " + from + ": " + ok.error().message);
  }
  if (counts.enabled == 0) {
    a.log->warn("no enabled rule: vigil detects nothing until a reload adds some (--allow-no-rules)");
  }
  a.enabled_in_force = counts.enabled;
  a.rules_in_force.set({counts.enabled, counts.skipped, counts.skipped_rules});
  a.ruleset = *loaded;
  return {};
}

// Not needed to print events (unless asked for), else the bundled ones by default.
Status load_replay_rules(Agent& a) {
  if (a.opts.print_events && a.opts.rules.empty() && a.opts.timeline.empty()) return {};
  a.rule_paths = a.opts.rules;
  if (a.rule_paths.empty()) {
    std::string bundled = find_bundled_rules();
    if (bundled.empty()) return Error::bad_input("no rules given (-r) and no bundled rules found");
    a.rule_paths.push_back(bundled);
  }
  // The live run's alerts: the same text and fields appended.
  if (Status s = set_append_output(a.cfg, config::config_origin(a.opts.config, a.opts.overrides), a.plugins.get(),
                                   a.load_opts);
      !s) {
    return s;
  }
  // The live run's prevention mode, so that a capture replayed with the
  // policy gives the decisions the node made.
  if (Status s = set_prevention_mode(a.cfg, a.load_opts); !s) return s;
  auto loaded = load_rules_logged(a.rule_paths, *a.log, a.load_opts);
  if (!loaded) return loaded.error();
  a.ruleset = *loaded;
  return {};
}

}  // namespace vigil::agent::steps
