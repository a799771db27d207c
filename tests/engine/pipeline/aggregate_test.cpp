// The aggregation of repeated alerts (engine/pipeline/aggregate.h): what
// goes out at once, what is counted, the summaries (when, with what), the
// bounds, the flush, and that the same input gives the same output.
#include "engine/pipeline/aggregate.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/state/state.h"

namespace vigil::pipeline {
namespace {

constexpr std::uint64_t kS = 1000000000ull;
constexpr std::uint64_t kT0 = 1767225600ull * kS;  // 2026-01-01T00:00:00Z

using Published = std::vector<std::shared_ptr<const event::Alert>>;

Publisher into(Published& out) {
  return [&out](std::shared_ptr<const event::Alert> a) { out.push_back(std::move(a)); };
}

// An alert of rule `rule` at kT0 + t (ns) for process `pid` of `comm`.
event::Alert alert(const std::string& rule, std::uint64_t t, std::int64_t pid, const std::string& comm = "xmrig") {
  event::Alert a;
  a.rule = rule;
  a.time_ns = kT0 + t;
  a.output = "miner " + comm;
  a.tags = {"crypto_mining"};
  a.uuid = rule + "-" + std::to_string(t) + "-" + std::to_string(pid);
  a.output_fields = {{"proc.pid", pid}, {"proc.name", comm}};
  return a;
}

rules::AggregateSpec spec(std::vector<std::string> by, std::uint64_t window_s) {
  rules::AggregateSpec s;
  s.by = std::move(by);
  s.window_ns = window_s * kS;
  return s;
}

TEST(Aggregator, FirstGoesOutRepeatsAreCountedAndTheWindowEndGivesOneSummary) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  event::Alert first = alert("Miner", 0, 7);
  agg.advance(first.time_ns);
  EXPECT_EQ(agg.offer(first, &sp), Aggregator::Verdict::kSend);
  EXPECT_EQ(first.uuid, "Miner-0-7");  // untouched: the caller sends it
  for (std::uint64_t t = 1; t <= 10; ++t) {
    event::Alert a = alert("Miner", t * kS, 7);
    agg.advance(a.time_ns);
    EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kCounted) << t;
  }
  agg.advance(kT0 + 59 * kS);
  EXPECT_TRUE(out.empty()) << "the window is still open";
  agg.advance(kT0 + 60 * kS);
  ASSERT_EQ(out.size(), 1u);
  const event::Alert& s = *out[0];
  ASSERT_TRUE(s.aggregate);
  EXPECT_EQ(s.aggregate->count, 10u);
  EXPECT_EQ(s.aggregate->total, 11u);
  EXPECT_EQ(s.aggregate->first_ns, kT0 + 1 * kS);
  EXPECT_EQ(s.aggregate->last_ns, kT0 + 10 * kS);
  EXPECT_EQ(s.aggregate->window_start_ns, kT0);
  EXPECT_EQ(s.aggregate->window_end_ns, kT0 + 60 * kS);
  EXPECT_EQ(s.aggregate->first_uuid, "Miner-0-7");
  EXPECT_EQ(s.aggregate->by, std::vector<std::string>{"proc.pid"});
  EXPECT_EQ(s.aggregate->reason, "window");
  EXPECT_EQ(s.time_ns, kT0 + 10 * kS);
  EXPECT_EQ(s.output, "miner xmrig (aggregated: 10 repeats in 1m)");
  EXPECT_EQ(s.tags, (std::vector<std::string>{"crypto_mining", "aggregated"}));
  EXPECT_NE(s.uuid, "Miner-0-7");
  EXPECT_EQ(s.uuid.size(), 36u);
  EXPECT_FALSE(s.repeat);
  const auto st = agg.stats().snapshot();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].counted, 10u);
  EXPECT_EQ(st[0].summaries_window, 1u);
}

TEST(Aggregator, OtherKeyValuesAndOtherRulesAreTheirOwnIncidents) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  event::Alert a = alert("Miner", 0, 7), b = alert("Miner", 1, 8), c = alert("Other", 2, 7);
  EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
  EXPECT_EQ(agg.offer(b, &sp), Aggregator::Verdict::kSend);
  EXPECT_EQ(agg.offer(c, &sp), Aggregator::Verdict::kSend);
  // proc.name differs, proc.pid does not: the key is proc.pid only.
  event::Alert d = alert("Miner", 3, 7, "other-name");
  EXPECT_EQ(agg.offer(d, &sp), Aggregator::Verdict::kCounted);
  EXPECT_EQ(agg.open(), 3u);
}

TEST(Aggregator, WithoutByTheKeyIsEveryOutputField) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec sp = spec({}, 60);
  event::Alert a = alert("Miner", 0, 7), same = alert("Miner", 1, 7), other = alert("Miner", 2, 7, "xmrig2");
  EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
  EXPECT_EQ(agg.offer(same, &sp), Aggregator::Verdict::kCounted);
  EXPECT_EQ(agg.offer(other, &sp), Aggregator::Verdict::kSend);
}

TEST(Aggregator, AnIncidentThatGoesOnGivesOneSummaryPerWindowAndNoNewFirstAlert) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  std::size_t sent = 0;
  // One alert a second for an hour: a miner computing.
  for (std::uint64_t t = 0; t < 3600; ++t) {
    event::Alert a = alert("Miner", t * kS, 7);
    agg.advance(a.time_ns);
    if (agg.offer(a, &sp) == Aggregator::Verdict::kSend) ++sent;
  }
  EXPECT_EQ(sent, 1u);
  EXPECT_EQ(out.size(), 59u);  // the windows that ended by 3599 s
  agg.flush();
  ASSERT_EQ(out.size(), 60u);
  std::uint64_t counted = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(out[i]->aggregate);
    counted += out[i]->aggregate->count;
    EXPECT_EQ(out[i]->aggregate->window_start_ns, kT0 + 60 * kS * i) << i;
    EXPECT_EQ(out[i]->aggregate->first_uuid, "Miner-0-7");
  }
  EXPECT_EQ(counted + sent, 3600u) << "every alert is sent or counted";
  EXPECT_EQ(out.back()->aggregate->reason, "end");
  EXPECT_EQ(out.back()->aggregate->total, 3600u);
  EXPECT_EQ(agg.open(), 0u);
}

TEST(Aggregator, AWindowWithoutRepeatsClosesTheKeyWithoutASummary) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 10);
  event::Alert a = alert("Miner", 0, 7);
  EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
  agg.advance(kT0 + 10 * kS);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(agg.open(), 0u);
  event::Alert b = alert("Miner", 11 * kS, 7);
  agg.advance(b.time_ns);
  EXPECT_EQ(agg.offer(b, &sp), Aggregator::Verdict::kSend) << "a new incident";
}

TEST(Aggregator, TheBoundPerRuleClosesTheOldestKeyWithItsSummaryEarly) {
  Published out;
  AggregatorOptions o;
  o.max_keys_per_rule = 2;
  Aggregator agg(o, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  for (std::int64_t pid : {1, 2}) {
    event::Alert a = alert("Miner", static_cast<std::uint64_t>(pid) * kS, pid);
    event::Alert r = alert("Miner", static_cast<std::uint64_t>(pid) * kS + 1, pid);
    EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
    EXPECT_EQ(agg.offer(r, &sp), Aggregator::Verdict::kCounted);
  }
  // Another rule's keys do not count against this rule's bound.
  event::Alert other = alert("Other", 3 * kS, 1);
  EXPECT_EQ(agg.offer(other, &sp), Aggregator::Verdict::kSend);
  EXPECT_TRUE(out.empty());
  event::Alert third = alert("Miner", 4 * kS, 3);
  EXPECT_EQ(agg.offer(third, &sp), Aggregator::Verdict::kSend);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->aggregate->reason, "evicted");
  EXPECT_EQ(out[0]->aggregate->count, 1u);
  EXPECT_EQ(std::get<std::int64_t>(out[0]->output_fields[0].second), 1) << "the oldest key: pid 1";
  EXPECT_EQ(agg.open(), 3u);
  const auto st = agg.stats().snapshot();
  ASSERT_EQ(st.size(), 1u) << "Other counted, summarised and lost nothing";
  EXPECT_EQ(st[0].rule, "Miner");
  EXPECT_EQ(st[0].evicted, 1u);
  EXPECT_EQ(st[0].summaries_evicted, 1u);
}

TEST(Aggregator, TheBoundOnAllKeysHoldsAcrossRules) {
  Published out;
  AggregatorOptions o;
  o.max_keys = 3;
  Aggregator agg(o, into(out));
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  for (int i = 0; i < 10; ++i) {
    event::Alert a = alert("R" + std::to_string(i % 4), static_cast<std::uint64_t>(i) * kS, i);
    EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
    EXPECT_LE(agg.open(), 3u);
  }
  EXPECT_EQ(agg.stats().open(), 3u);
  EXPECT_TRUE(out.empty()) << "keys without repeats close without a summary";
}

TEST(Aggregator, FlushSummarisesEveryOpenWindowInWindowOrder) {
  Published out;
  Aggregator agg({}, into(out));
  const rules::AggregateSpec long_window = spec({"proc.pid"}, 600), short_window = spec({"proc.pid"}, 60);
  event::Alert a = alert("Long", 0, 1), a2 = alert("Long", kS, 1);
  event::Alert b = alert("Short", 2 * kS, 2), b2 = alert("Short", 3 * kS, 2);
  event::Alert c = alert("Short", 4 * kS, 3);  // no repeat: no summary
  agg.offer(a, &long_window);
  agg.offer(a2, &long_window);
  agg.offer(b, &short_window);
  agg.offer(b2, &short_window);
  agg.offer(c, &short_window);
  agg.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->rule, "Short");  // its window ends first
  EXPECT_EQ(out[1]->rule, "Long");
  for (const auto& s : out) EXPECT_EQ(s->aggregate->reason, "end");
  EXPECT_EQ(agg.open(), 0u);
  EXPECT_EQ(agg.stats().open(), 0u);
}

TEST(Aggregator, RepeatsAreMarkedForOutputsThatWantEveryAlertAndStillCounted) {
  Published out;
  Aggregator agg({}, into(out));
  agg.set_repeats_wanted(true);
  const rules::AggregateSpec sp = spec({"proc.pid"}, 60);
  event::Alert a = alert("Miner", 0, 7), r = alert("Miner", kS, 7);
  EXPECT_EQ(agg.offer(a, &sp), Aggregator::Verdict::kSend);
  EXPECT_FALSE(a.repeat);
  EXPECT_EQ(agg.offer(r, &sp), Aggregator::Verdict::kRepeat);
  EXPECT_TRUE(r.repeat);
  EXPECT_EQ(r.uuid, "Miner-1000000000-7") << "the repeat is still whole, for the caller to publish";
  agg.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->aggregate->count, 1u);
  EXPECT_FALSE(out[0]->repeat);
}

TEST(Aggregator, RulesWithoutAnAggregationAndHeartbeatsPassUntouched) {
  Published out;
  Aggregator agg({}, into(out));
  for (int i = 0; i < 3; ++i) {
    event::Alert a = alert("Plain", static_cast<std::uint64_t>(i), 7);
    EXPECT_EQ(agg.offer(a, nullptr), Aggregator::Verdict::kSend);
  }
  const rules::AggregateSpec sp = spec({}, 60);
  for (int i = 0; i < 3; ++i) {
    event::Alert hb = alert("vigil heartbeat", static_cast<std::uint64_t>(i), 0);
    hb.heartbeat = true;
    EXPECT_EQ(agg.offer(hb, &sp), Aggregator::Verdict::kSend);
  }
  EXPECT_EQ(agg.open(), 0u);
  EXPECT_TRUE(agg.stats().snapshot().empty());
}

// ---------------------------------------------------------------- through the pipeline

constexpr const char* kMinerRules = R"(
- rule: Miner started
  desc: a miner ran
  condition: evt.type = execve and proc.name = xmrig
  output: "miner %proc.cmdline"
  priority: CRITICAL
  tags: [crypto_mining]
  aggregate: {by: [proc.name], window: 30s}
- rule: Shell started
  desc: a shell ran
  condition: evt.type = execve and proc.name = bash
  output: "shell %proc.cmdline"
  priority: WARNING
)";

event::Event exec_event(std::uint64_t ts, std::uint32_t pid, const std::string& comm) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = ev.hdr.tid = pid;
  ev.hdr.ppid = 1;
  ev.hdr.comm = comm;
  event::ExecData x;
  x.filename = "/usr/bin/" + comm;
  x.exe = x.filename;
  x.args = {"--pool", "x"};
  ev.data = std::move(x);
  return ev;
}

// The alerts one run over the same events gives, as text: what a replay prints.
std::vector<std::string> run_once(const std::shared_ptr<const rules::Ruleset>& rs) {
  state::Config sc;
  sc.live = false;
  state::State st(sc);
  Published out;
  Aggregator agg({}, into(out));
  Pipeline p(Deps{st, into(out), "node", nullptr, nullptr, &agg}, rs);
  // A miner restarted every 5 s for 2 minutes, each time a new pid, and a
  // shell now and then (not aggregated).
  for (std::uint32_t i = 0; i < 24; ++i) {
    event::Event ev = exec_event(kT0 + i * 5 * kS, 1000 + i, "xmrig");
    p.process(ev);
    if (i % 8 == 0) {
      event::Event sh = exec_event(kT0 + i * 5 * kS + 1, 2000 + i, "bash");
      p.process(sh);
    }
  }
  agg.flush();
  std::vector<std::string> lines;
  for (const auto& a : out) {
    std::string l = a->rule + "|" + a->uuid + "|" + a->output + "|" + std::to_string(a->time_ns);
    if (a->aggregate) {
      l += "|count=" + std::to_string(a->aggregate->count) + "|" + a->aggregate->reason + "|" +
           std::to_string(a->aggregate->window_start_ns);
    }
    lines.push_back(std::move(l));
  }
  return lines;
}

TEST(AggregatorPipeline, TheRulesAggregateKeysPutTheirFieldsInTheAlertsAndTheSameEventsGiveTheSameAlerts) {
  rules::LoadResult r = rules::load_rules_text({{"miner.yaml", kMinerRules}}, rules::LoadOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  ASSERT_TRUE(r.ruleset);
  const rules::AggregateSpec* sp = r.ruleset->aggregate_of("Miner started");
  ASSERT_NE(sp, nullptr);
  EXPECT_EQ(sp->by, std::vector<std::string>{"proc.name"});
  EXPECT_EQ(sp->window_ns, 30 * kS);
  EXPECT_EQ(r.ruleset->aggregate_of("Shell started"), nullptr);

  const std::vector<std::string> first = run_once(r.ruleset);
  // 24 miner alerts in 120 s with a 30 s window keyed by name: one first
  // alert, then a summary per window (5 repeats each; the last one at the
  // flush), and every shell alert as it came.
  std::size_t miners = 0, summaries = 0, shells = 0;
  std::uint64_t counted = 0;
  for (const auto& l : first) {
    if (l.rfind("Shell started|", 0) == 0) ++shells;
    else if (l.find("|count=") != std::string::npos) {
      ++summaries;
      counted += std::stoull(l.substr(l.find("|count=") + 7));
    } else {
      ++miners;
    }
  }
  EXPECT_EQ(miners, 1u);
  EXPECT_EQ(shells, 3u);
  EXPECT_EQ(summaries, 4u);
  EXPECT_EQ(counted, 23u);
  // Exact: a second run over the same events gives the same alerts, uuids
  // and times included (what a replay of a capture relies on).
  EXPECT_EQ(run_once(r.ruleset), first);
}

TEST(AggregatorPipeline, AnAggregatedRulesAlertCarriesItsKeyFields) {
  rules::LoadResult r = rules::load_rules_text({{"miner.yaml", kMinerRules}}, rules::LoadOptions{});
  ASSERT_TRUE(r.ruleset);
  state::Config sc;
  sc.live = false;
  state::State st(sc);
  Published out;
  Pipeline p(Deps{st, into(out), "node"}, r.ruleset);
  event::Event ev = exec_event(kT0, 1000, "xmrig");
  p.process(ev);
  ASSERT_EQ(out.size(), 1u);
  bool has_name = false;
  for (const auto& [k, v] : out[0]->output_fields) {
    if (k == "proc.name") has_name = std::get<std::string>(v) == "xmrig";
  }
  EXPECT_TRUE(has_name) << "proc.name is the key: in output_fields though the output does not print it";
}

}  // namespace
}  // namespace vigil::pipeline
