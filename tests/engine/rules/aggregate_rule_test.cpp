// A rule's `aggregate` key (vigil's extension) and the configuration's
// default: how they are read, overridden, checked and given to the
// aggregation (Ruleset::aggregate_of).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/rules/ruleset.h"

namespace vigil::rules {
namespace {

constexpr std::uint64_t kS = 1000000000ull;

LoadResult load(const std::string& yaml, const LoadOptions& opts = {}) {
  return load_rules_text({{"agg.yaml", yaml}}, opts);
}

std::string errors(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::kError) s += d.to_string() + "\n";
  }
  return s;
}

constexpr const char* kRule = R"(
- rule: Miner
  desc: a miner
  condition: evt.type = execve and proc.name = xmrig
  output: "miner %proc.cmdline"
  priority: CRITICAL
)";

TEST(AggregateRule, AMapGivesItsFieldsAndWindowAndAFieldAloneIsAList) {
  LoadResult r = load(std::string(kRule) + "  aggregate: {by: [container.id, proc.exepath], window: 10m}\n" + R"(
- rule: Other
  desc: other
  condition: evt.type = execve and proc.name = other
  output: "other"
  priority: WARNING
  aggregate:
    by: proc.pid
)");
  ASSERT_TRUE(r.ruleset) << errors(r);
  const AggregateSpec* m = r.ruleset->aggregate_of("Miner");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->by, (std::vector<std::string>{"container.id", "proc.exepath"}));
  EXPECT_EQ(m->window_ns, 600 * kS);
  const AggregateSpec* o = r.ruleset->aggregate_of("Other");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->by, std::vector<std::string>{"proc.pid"});
  EXPECT_EQ(o->window_ns, kDefaultAggregateWindowNs);
  EXPECT_EQ(r.ruleset->aggregate_of("Nobody"), nullptr);
}

TEST(AggregateRule, FalcoFilesWithoutTheKeyAreNotAggregatedUnlessTheConfigurationSaysSo) {
  LoadResult plain = load(kRule);
  ASSERT_TRUE(plain.ruleset) << errors(plain);
  EXPECT_EQ(plain.ruleset->aggregate_of("Miner"), nullptr);
  LoadOptions opts;
  opts.aggregate_default = AggregateSpec{{"proc.pid"}, 30 * kS};
  LoadResult with_default = load(kRule, opts);
  ASSERT_TRUE(with_default.ruleset) << errors(with_default);
  const AggregateSpec* s = with_default.ruleset->aggregate_of("Miner");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(*s, (AggregateSpec{{"proc.pid"}, 30 * kS}));
  // `aggregate: off` keeps a rule out of the default.
  LoadResult off = load(std::string(kRule) + "  aggregate: off\n", opts);
  ASSERT_TRUE(off.ruleset) << errors(off);
  EXPECT_EQ(off.ruleset->aggregate_of("Miner"), nullptr);
  // `aggregate: on`: the rule's own, with the defaults of the key.
  LoadResult on = load(std::string(kRule) + "  aggregate: on\n");
  ASSERT_TRUE(on.ruleset) << errors(on);
  ASSERT_NE(on.ruleset->aggregate_of("Miner"), nullptr);
  EXPECT_TRUE(on.ruleset->aggregate_of("Miner")->by.empty());
}

TEST(AggregateRule, OverrideAppendAddsFieldsAndReplaceTakesTheNewValue) {
  const std::string base = std::string(kRule) + "  aggregate: {by: [proc.pid], window: 60s}\n";
  LoadResult app = load(base + R"(
- rule: Miner
  aggregate: {by: [container.id], window: 5m}
  override: {aggregate: append}
)");
  ASSERT_TRUE(app.ruleset) << errors(app);
  ASSERT_NE(app.ruleset->aggregate_of("Miner"), nullptr);
  EXPECT_EQ(*app.ruleset->aggregate_of("Miner"), (AggregateSpec{{"proc.pid", "container.id"}, 300 * kS}));
  LoadResult rep = load(base + R"(
- rule: Miner
  aggregate: {by: [container.id]}
  override: {aggregate: replace}
)");
  ASSERT_TRUE(rep.ruleset) << errors(rep);
  ASSERT_NE(rep.ruleset->aggregate_of("Miner"), nullptr);
  EXPECT_EQ(*rep.ruleset->aggregate_of("Miner"), (AggregateSpec{{"container.id"}, kDefaultAggregateWindowNs}));
  LoadResult off = load(base + R"(
- rule: Miner
  aggregate: off
  override: {aggregate: replace}
)");
  ASSERT_TRUE(off.ruleset) << errors(off);
  EXPECT_EQ(off.ruleset->aggregate_of("Miner"), nullptr);
}

TEST(AggregateRule, BadValuesAreErrorsNamingTheFileAndPosition) {
  struct Case {
    std::string value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"sometimes", "agg.yaml:7:14: error E017: rule 'Miner': 'aggregate' must be off, on or a map"},
      {"{by: [proc.pid], windw: 60s}", "agg.yaml:7:31: error E017: rule 'Miner': unknown key 'windw' in 'aggregate'"},
      {"{window: 0s}", "agg.yaml:7:23: error E017: rule 'Miner': 'aggregate.window': "},
      {"{window: forever}", "agg.yaml:7:23: error E017: rule 'Miner': 'aggregate.window': "},
      {"{by: [proc.nosuch]}", "agg.yaml:7:19: error E017: rule 'Miner': 'aggregate.by' field 'proc.nosuch': "},
      {"{by: [a.b, c.d, e.f, g.h, i.j, k.l, m.n, o.p, q.r]}",
       "error E017: rule 'Miner': 'aggregate.by' has more than 8"},
  };
  for (const Case& c : cases) {
    LoadResult r = load(std::string(kRule) + "  aggregate: " + c.value + "\n");
    EXPECT_FALSE(r.ruleset) << c.value;
    EXPECT_NE(errors(r).find(c.message), std::string::npos) << c.value << "\n" << errors(r);
  }
}

TEST(AggregateRule, AnUnknownFieldInTheDefaultIsAnError) {
  LoadOptions opts;
  opts.aggregate_default = AggregateSpec{{"proc.nosuch"}, 30 * kS};
  LoadResult r = load(kRule, opts);
  EXPECT_FALSE(r.ruleset);
  EXPECT_NE(errors(r).find("'aggregate.by' field 'proc.nosuch'"), std::string::npos) << errors(r);
}

}  // namespace
}  // namespace vigil::rules
