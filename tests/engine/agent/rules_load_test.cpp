// check_rule_counts (engine/agent/rules_load.h): when vigil run refuses a loaded
// rule set for the rules it would leave (issue 16: zero rules were accepted
// silently, at start and on a reload that skipped every rule).
#include "engine/agent/rules_load.h"
#include "engine/agent/live_sources.h"

#include <gtest/gtest.h>

#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::agent {
namespace {

std::string why(const RuleCounts& c, const RuleCountPolicy& p = {}) {
  Status s = check_rule_counts(c, p);
  return s ? "" : s.error().message;
}

TEST(RuleCounts, NoEnabledRuleIsRefusedUnlessAllowed) {
  EXPECT_EQ(why({.enabled = 0}), "no enabled rule: vigil would detect nothing (--allow-no-rules runs anyway)");
  EXPECT_EQ(why({.enabled = 0, .skipped = 1, .enabled_in_force = 5}),
            "no enabled rule (1 skipped): vigil would detect nothing (--allow-no-rules runs anyway)");
  EXPECT_EQ(check_rule_counts({.enabled = 0}, {}).error().kind, Error::Kind::kBadInput);
  EXPECT_EQ(why({.enabled = 0}, {.allow_empty = true}), "");
  EXPECT_EQ(why({.enabled = 1}), "");
}

TEST(RuleCounts, AReloadMayNotLoseMoreThanTheShareToSkips) {
  // 10 in force; 4 left with skips: 60% lost, over 50%.
  EXPECT_EQ(why({.enabled = 4, .skipped = 6, .enabled_in_force = 10}),
            "6 rules skipped: 4 enabled rules instead of 10, more than 50% fewer (--max-skipped-rules)");
  EXPECT_EQ(why({.enabled = 5, .skipped = 5, .enabled_in_force = 10}), "");  // exactly half: allowed
  EXPECT_EQ(why({.enabled = 4, .skipped = 6, .enabled_in_force = 10}, {.max_skipped_share = 0.7}), "");
  EXPECT_NE(why({.enabled = 9, .skipped = 1, .enabled_in_force = 10}, {.max_skipped_share = 0.0}), "");
  // Fewer rules without skips is an edit, not a loss.
  EXPECT_EQ(why({.enabled = 1, .skipped = 0, .enabled_in_force = 10}), "");
  // More rules than before, some skipped: nothing lost.
  EXPECT_EQ(why({.enabled = 12, .skipped = 3, .enabled_in_force = 10}), "");
  // At start there is nothing in force to lose: only the zero check applies.
  EXPECT_EQ(why({.enabled = 1, .skipped = 50, .enabled_in_force = 0}), "");
}

// A reload keeps the sensor as it started (its hooks and its open filter are
// set when it loads): a rule that needs a syscall no hook was attached for,
// or an open path the filter was not given, sees nothing until a restart.
// The reload says so, naming the rules, instead of loading them silently.
rules::LoadResult load(const std::string& yaml) {
  auto r = rules::testing::load_one(yaml);
  EXPECT_TRUE(r.ruleset) << rules::testing::diags(r);
  return r;
}
std::string rule(const std::string& name, const std::string& cond) {
  return "- rule: " + name + "\n  desc: d\n  priority: WARNING\n  condition: " + cond + "\n  output: o\n";
}

TEST(SensorGaps, NewEventTypesNameTheirRules) {
  auto start = load(rule("Shadow", "evt.type = openat and fd.name = /etc/shadow"));
  auto next = load(rule("Shadow", "evt.type = openat and fd.name = /etc/shadow") +
                   rule("Trace", "evt.type = ptrace and proc.name = gdb") +
                   rule("Unlink one", "evt.type = unlinkat and proc.name = rm") +
                   rule("Unlink two", "evt.type in (unlink, unlinkat) and proc.name = shred"));
  EXPECT_EQ(sensor_gaps(start.ruleset->event_types(), start.ruleset->open_paths(), *next.ruleset),
            "events the sensor does not collect: unlinkat ('Unlink one', 'Unlink two'), ptrace ('Trace'); "
            "restart vigil to collect them");
}

TEST(SensorGaps, NothingMissingSaysNothing) {
  auto start = load(rule("Shadow", "evt.type = openat and fd.name startswith /etc/"));
  // The same types, a path the start's prefix covers, and the always-on
  // process events.
  auto next =
      load(rule("Shadow", "evt.type = openat and fd.name = /etc/shadow") +
           rule("Exec", "evt.type = execve and proc.name = nc") + rule("Fork", "evt.type = clone and proc.name = nc"));
  EXPECT_EQ(sensor_gaps(start.ruleset->event_types(), start.ruleset->open_paths(), *next.ruleset), "");
  // ioctl and gpu_usage come from the same hooks.
  auto gpu = load(rule("Ioctl", "evt.type = ioctl and gpu.control = 1"));
  auto usage = load(rule("Usage", "evt.type = gpu_usage and gpu.usage.count > 100"));
  EXPECT_EQ(sensor_gaps(gpu.ruleset->event_types(), gpu.ruleset->open_paths(), *usage.ruleset), "");
}

TEST(SensorGaps, NewOpenPathsAreNamed) {
  auto start = load(rule("Shadow", "evt.type = openat and fd.name = /etc/shadow"));
  auto next = load(rule("Shadow", "evt.type = openat and fd.name = /etc/shadow") +
                   rule("Keys", "evt.type = openat and fd.name startswith /root/.ssh/") +
                   rule("Traversal", "evt.type = openat and fd.nameraw contains \"../\""));
  EXPECT_EQ(sensor_gaps(start.ruleset->event_types(), start.ruleset->open_paths(), *next.ruleset),
            "open paths the kernel's open filter was not given: /root/.ssh/, ../; restart vigil to collect them");
  // Without opens at start the type itself is what is missing.
  auto none = load(rule("Exec", "evt.type = execve and proc.name = nc"));
  EXPECT_EQ(
      sensor_gaps(none.ruleset->event_types(), none.ruleset->open_paths(), *next.ruleset),
      "events the sensor does not collect: openat ('Shadow', 'Keys', 'Traversal'); restart vigil to collect them");
}

}  // namespace
}  // namespace vigil::agent
