// check_rule_counts (engine/cli/common.h): when vigil run refuses a loaded
// rule set for the rules it would leave (issue 16: zero rules were accepted
// silently, at start and on a reload that skipped every rule).
#include "engine/cli/common.h"

#include <gtest/gtest.h>

namespace vigil::cli {
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

}  // namespace
}  // namespace vigil::cli
