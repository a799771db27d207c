// Sequence rules: loading (errors with their positions), the partial-match
// table's bounds and evictions, and evaluation over timed synthetic events.
#include <gtest/gtest.h>

#include "engine/rules/document.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::World;

constexpr std::uint64_t kSec = 1000000000ull;

// A two-step sequence: an exec of a shell, then a connect, by container.id.
std::string shell_then_connect(const std::string& within = "60s", const std::string& by = "[container.id]") {
  return "- sequence: S\n"
         "  desc: d\n"
         "  by: " +
         by +
         "\n"
         "  within: " +
         within +
         "\n"
         "  steps:\n"
         "    - condition: evt.type = execve and proc.name = sh\n"
         "    - condition: evt.type = connect and fd.sport > 0\n"
         "  output: 'shell %step1.proc.name (%step1.proc.pid) then %fd.sip:%fd.sport by %proc.name'\n"
         "  priority: CRITICAL\n"
         "  tags: [t]\n";
}

LoadResult load(const std::string& yaml, LoadOptions opts = {}) { return load_rules_text({{"seq.yaml", yaml}}, opts); }

bool has_diag(const LoadResult& r, const std::string& code, const std::string& where, const std::string& text) {
  for (const auto& d : r.diagnostics) {
    const std::string s = d.to_string();
    if (d.code == code && s.find(where) != std::string::npos && s.find(text) != std::string::npos) return true;
  }
  return false;
}

// Feeds the world's event at `ts` through the ruleset with `st`.
std::vector<event::Alert> at(World& w, std::uint64_t ts, const Ruleset& rs, SequenceState& st) {
  w.ev.hdr.ts_ns = ts;
  std::vector<event::Alert> out;
  rs.evaluate(w.ctx(), out, &st);
  return out;
}

void shell(World& w) {
  w.proc.comm = "sh";
  w.ev.hdr.comm = "sh";
  w.exec();
}
void python(World& w) {
  w.proc.comm = "python3";
  w.ev.hdr.comm = "python3";
  w.exec();
}

TEST(SequenceLoad, LoadsAndLists) {
  auto r = load(shell_then_connect());
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.sequences, 1u);
  EXPECT_EQ(r.loaded, 0u);
  EXPECT_EQ(r.ruleset->size(), 0u);  // the steps are not rules
  EXPECT_TRUE(r.ruleset->rules().empty());
  auto s = r.ruleset->sequences();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "S");
  EXPECT_EQ(s[0].by, std::vector<std::string>{"container.id"});
  EXPECT_EQ(s[0].within_ns, 60 * kSec);
  ASSERT_EQ(s[0].step_event_types.size(), 2u);
  EXPECT_EQ(s[0].step_event_types[1], std::vector<std::string>{"connect"});
  EXPECT_EQ(s[0].line, 1);
  // The sensor attaches the hooks the steps need.
  EXPECT_TRUE(r.ruleset->event_types().count(event::Type::kConnect));
  EXPECT_NE(summary_line(r).find("1 sequences"), std::string::npos);
}

TEST(SequenceLoad, MacrosAndListsWorkInSteps) {
  auto r = load(
      "- list: shells\n  items: [sh, bash]\n"
      "- macro: spawned_shell\n  condition: evt.type = execve and proc.name in (shells)\n" +
      shell_then_connect().replace(shell_then_connect().find("evt.type = execve and proc.name = sh"),
                                   std::string("evt.type = execve and proc.name = sh").size(), "spawned_shell"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_FALSE(has_diag(r, code::kUnusedMacro, "", "spawned_shell")) << testing::diags(r);
  EXPECT_FALSE(has_diag(r, code::kUnusedList, "", "shells")) << testing::diags(r);
}

TEST(SequenceLoad, ErrorsNameTheirPlace) {
  // Fewer than two steps.
  auto r = load(
      "- sequence: S\n  desc: d\n  by: [proc.pid]\n  within: 1s\n  output: o\n  priority: INFO\n"
      "  steps:\n    - condition: evt.type = execve\n");
  EXPECT_FALSE(r.ruleset);
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:8:5", "2 to 8 steps")) << testing::diags(r);
  // More than eight.
  std::string many =
      "- sequence: S\n  desc: d\n  by: [proc.pid]\n  within: 1s\n  output: o\n  priority: INFO\n  steps:\n";
  for (int i = 0; i < 9; ++i) many += "    - condition: evt.type = execve\n";
  r = load(many);
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:8:5", "more than 8")) << testing::diags(r);
  // A bad window.
  for (const char* w : {"60", "0s", "10y", "25h", "-1s", "s"}) {
    r = load(shell_then_connect(w));
    EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:4:11", "'within'")) << w << "\n" << testing::diags(r);
  }
  // An unknown field in a step: an error at the step's condition.
  std::string y = shell_then_connect();
  y.replace(y.find("fd.sport > 0"), 12, "fd.nosuch = 1");
  r = load(y);
  EXPECT_FALSE(r.ruleset);
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:7:18", "step 2: unknown field fd.nosuch")) << testing::diags(r);
  // A syntax error in a step.
  y = shell_then_connect();
  y.replace(y.find("fd.sport > 0"), 12, "fd.sport >");
  r = load(y);
  EXPECT_TRUE(has_diag(r, code::kConditionSyntax, "seq.yaml:7:18", "step 2")) << testing::diags(r);
  // An unknown key field, and no key at all.
  r = load(shell_then_connect("60s", "[container.nosuch]"));
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:3:7", "'by' field 'container.nosuch'")) << testing::diags(r);
  r = load(shell_then_connect("60s", "[]"));
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:3:7", "1 to 4 fields")) << testing::diags(r);
  // A step the sequence does not have.
  y = shell_then_connect();
  y.replace(y.find("%step1.proc.pid"), 15, "%step3.proc.pid");
  r = load(y);
  EXPECT_TRUE(has_diag(r, code::kOutputSyntax, "seq.yaml:8:11", "steps 1 to 2")) << testing::diags(r);
  // Missing keys, a step without a condition, a name a rule has.
  r = load("- sequence: S\n  desc: d\n  output: o\n  priority: INFO\n");
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:1:3", "needs 'by'")) << testing::diags(r);
  r = load(
      "- sequence: S\n  desc: d\n  by: proc.pid\n  within: 1s\n  output: o\n  priority: INFO\n"
      "  steps:\n    - condition: evt.type = execve\n    - cond: x\n");
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:9:7", "a step must be a map with a 'condition'"))
      << testing::diags(r);
  r = load(testing::rule_yaml("evt.type = execve").replace(8, 1, "S") + shell_then_connect());
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:6:3", "a rule has this name already")) << testing::diags(r);
}

TEST(SequenceWindow, Parses) {
  std::uint64_t ns = 0;
  std::string err;
  ASSERT_TRUE(parse_window("500ms", ns, err));
  EXPECT_EQ(ns, 500000000u);
  ASSERT_TRUE(parse_window("2m", ns, err));
  EXPECT_EQ(ns, 120 * kSec);
  ASSERT_TRUE(parse_window("24h", ns, err));
  EXPECT_FALSE(parse_window("99999999999999999999s", ns, err));
  EXPECT_FALSE(parse_window("1 s", ns, err));
  EXPECT_FALSE(parse_window("", ns, err));
}

TEST(PartialMatchesTest, ExpiresByEventTime) {
  EvictionCounts c;
  PartialMatches t(10 * kSec, 100, &c);
  t.start("a", 100 * kSec);
  t.start("b", 105 * kSec);
  EXPECT_NE(t.find("a", 110 * kSec), nullptr);  // exactly the window: still live
  EXPECT_EQ(t.find("a", 111 * kSec), nullptr);  // past it: evicted on sight
  EXPECT_EQ(c.expired.load(), 1u);
  t.expire(200 * kSec);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(c.expired.load(), 2u);
  EXPECT_EQ(c.capacity.load(), 0u);
}

TEST(PartialMatchesTest, FullTableEvictsTheOldest) {
  EvictionCounts c;
  PartialMatches t(60 * kSec, 2, &c);
  t.start("a", 1 * kSec);
  t.start("b", 2 * kSec);
  t.start("a", 3 * kSec);  // starts again: a is now the newest
  EXPECT_EQ(t.size(), 2u);
  t.start("c", 4 * kSec);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(c.capacity.load(), 1u);
  EXPECT_EQ(t.find("b", 4 * kSec), nullptr);
  EXPECT_NE(t.find("a", 4 * kSec), nullptr);
  EXPECT_NE(t.find("c", 4 * kSec), nullptr);
  // Expired ones make room before a live one is evicted.
  t.start("d", 100 * kSec);
  EXPECT_EQ(c.capacity.load(), 1u);
  EXPECT_EQ(c.expired.load(), 2u);
}

TEST(SequenceStatsTest, CountsSurviveAndAreBounded) {
  SequenceStats s;
  EvictionCounts* a = s.counts("a");
  a->expired += 3;
  EXPECT_EQ(s.counts("a"), a);
  for (std::size_t i = 0; i < SequenceStats::kMaxSequences + 10; ++i) s.counts("n" + std::to_string(i));
  auto rows = s.snapshot();
  EXPECT_EQ(rows.size(), SequenceStats::kMaxSequences + 1);
  EXPECT_EQ(rows.back().sequence, "n99");  // sorted by name; "_other" sorts first
  EXPECT_EQ(rows.front().sequence, "_other");
  for (const auto& r : rows) {
    if (r.sequence == "a") {
      EXPECT_EQ(r.expired, 3u);
    }
  }
}

class SequenceEval : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load(shell_then_connect());
    ASSERT_TRUE(r.ruleset) << testing::diags(r);
    rs = r.ruleset;
    st = std::make_unique<SequenceState>(*rs, &stats);
  }
  std::shared_ptr<const Ruleset> rs;
  SequenceStats stats;
  std::unique_ptr<SequenceState> st;
  World w;
  const std::uint64_t t0 = 1767225600ull * kSec;
};

TEST_F(SequenceEval, BothStepsInTheWindowFireOnceWithEveryStepsFields) {
  shell(w);
  EXPECT_TRUE(at(w, t0, *rs, *st).empty());
  EXPECT_EQ(st->size(), 1u);
  python(w);
  w.proc.pid = 200;  // the connecting process differs: the key is the container
  w.ev.hdr.pid = 200;
  w.connect("203.0.113.9", 443);
  auto out = at(w, t0 + 30 * kSec, *rs, *st);
  ASSERT_EQ(out.size(), 1u);
  const auto& a = out[0];
  EXPECT_EQ(a.rule, "S");
  EXPECT_EQ(a.priority, event::Priority::kCritical);
  EXPECT_EQ(a.time_ns, t0 + 30 * kSec);
  EXPECT_EQ(a.tags, std::vector<std::string>{"t"});
  EXPECT_EQ(a.output, "shell sh (100) then 203.0.113.9:443 by python3");
  ASSERT_EQ(a.output_fields.size(), 5u);
  EXPECT_EQ(a.output_fields[0].first, "step1.proc.name");
  EXPECT_EQ(std::get<std::string>(a.output_fields[0].second), "sh");
  EXPECT_EQ(a.output_fields[1].first, "step1.proc.pid");
  EXPECT_EQ(std::get<std::int64_t>(a.output_fields[1].second), 100);
  EXPECT_EQ(a.output_fields[4].first, "proc.name");
  EXPECT_EQ(a.uuid, alert_uuid(w.ev, "S"));
  EXPECT_EQ(st->size(), 0u);  // done: the match is gone
  // A second connect does not fire again.
  EXPECT_TRUE(at(w, t0 + 31 * kSec, *rs, *st).empty());
}

TEST_F(SequenceEval, OutsideTheWindowNoAlertAndTheEvictionIsCounted) {
  shell(w);
  at(w, t0, *rs, *st);
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0 + 61 * kSec, *rs, *st).empty());
  auto rows = stats.snapshot();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].sequence, "S");
  EXPECT_EQ(rows[0].expired, 1u);
  EXPECT_EQ(rows[0].capacity, 0u);
}

TEST_F(SequenceEval, AnotherKeyDoesNotComplete) {
  shell(w);
  at(w, t0, *rs, *st);
  w.container.id = "other";
  w.proc.container_id = "other";
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0 + 1 * kSec, *rs, *st).empty());
}

TEST_F(SequenceEval, StepsOutOfOrderDoNotComplete) {
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0, *rs, *st).empty());
  EXPECT_EQ(st->size(), 0u);
  shell(w);
  EXPECT_TRUE(at(w, t0 + 1 * kSec, *rs, *st).empty());
}

TEST_F(SequenceEval, ALaterFirstStepRestartsTheWindow) {
  shell(w);
  at(w, t0, *rs, *st);
  w.proc.pid = 101;
  w.ev.hdr.pid = 101;
  at(w, t0 + 50 * kSec, *rs, *st);
  w.connect("203.0.113.9", 443);
  auto out = at(w, t0 + 100 * kSec, *rs, *st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "shell sh (101) then 203.0.113.9:443 by sh");
}

TEST_F(SequenceEval, WithoutStateOrWithAnotherRulesetsStateNothingHappens) {
  shell(w);
  std::vector<event::Alert> out;
  rs->evaluate(w.ctx(), out);
  auto other = load(shell_then_connect());
  SequenceState foreign(*other.ruleset, nullptr);
  rs->evaluate(w.ctx(), out, &foreign);
  EXPECT_EQ(foreign.size(), 0u);
  EXPECT_EQ(st->size(), 0u);
}

TEST(SequenceEvalOptions, CapacityAndDisabling) {
  LoadOptions opts;
  opts.max_sequence_matches = 2;
  auto r = load(shell_then_connect("60s", "[proc.pid]"), opts);
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  SequenceStats stats;
  SequenceState st(*r.ruleset, &stats);
  World w;
  shell(w);
  const std::uint64_t t0 = 1000 * kSec;
  for (std::uint32_t pid = 1; pid <= 3; ++pid) {
    w.proc.pid = pid;
    w.ev.hdr.pid = pid;
    at(w, t0 + pid, *r.ruleset, st);
  }
  EXPECT_EQ(st.size(), 2u);
  EXPECT_EQ(stats.snapshot()[0].capacity, 1u);
  // pid 1 was evicted: its connect does not fire; pid 3's does.
  w.connect("203.0.113.9", 443);
  w.proc.pid = 1;
  w.ev.hdr.pid = 1;
  EXPECT_TRUE(at(w, t0 + 10, *r.ruleset, st).empty());
  w.proc.pid = 3;
  w.ev.hdr.pid = 3;
  EXPECT_EQ(at(w, t0 + 11, *r.ruleset, st).size(), 1u);

  LoadOptions off;
  off.disabled_tags = {"t"};
  auto d = load(shell_then_connect(), off);
  ASSERT_TRUE(d.ruleset);
  EXPECT_FALSE(d.ruleset->sequences()[0].enabled);
  EXPECT_TRUE(d.ruleset->event_types().empty());
}

// distinct: the same program (key proc.name) started in two containers fires;
// twice in one container does not, and the second start there restarts the
// window; a distinct field with no value takes no part; a bad list is E016.
TEST(SequenceDistinct, StepsMustDifferInTheDistinctFields) {
  const std::string y =
      "- sequence: D\n  desc: d\n  by: [proc.name]\n  distinct: [container.id]\n  within: 60s\n"
      "  steps:\n    - condition: evt.type = execve\n    - condition: evt.type = execve\n"
      "  output: '%proc.name in %step1.container.id then %container.id'\n  priority: ERROR\n";
  auto r = load(y);
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  ASSERT_EQ(r.ruleset->sequences().size(), 1u);
  EXPECT_EQ(r.ruleset->sequences()[0].distinct, std::vector<std::string>{"container.id"});
  SequenceState st(*r.ruleset, nullptr);
  World w;
  const std::uint64_t t0 = 1767225600ull * kSec;
  w.proc.comm = "payload";
  w.ev.hdr.comm = "payload";
  w.exec();
  EXPECT_TRUE(at(w, t0, *r.ruleset, st).empty());
  EXPECT_TRUE(at(w, t0 + 10 * kSec, *r.ruleset, st).empty()) << "the same container twice fired";
  w.container.id = "bbbbbbbbbbbbbbbb";
  w.proc.container_id = "bbbbbbbbbbbbbbbb";
  // 65 s after the first start, 55 s after the second: in the window only
  // because the second start in the first container restarted it.
  auto out = at(w, t0 + 65 * kSec, *r.ruleset, st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].output.find("then bbbbbbbbbbbb"), std::string::npos) << out[0].output;
  EXPECT_EQ(out[0].output.find("in bbbbbbbbbbbb"), std::string::npos) << out[0].output;
  // An empty list and too many fields are errors at the key.
  std::string bad = y;
  bad.replace(bad.find("[container.id]"), 14, "[]");
  auto rb = load(bad);
  EXPECT_FALSE(rb.ruleset);
  EXPECT_TRUE(has_diag(rb, code::kSequence, "seq.yaml:4:13", "'distinct' must name 1 to 4 fields"))
      << testing::diags(rb);
  bad = y;
  bad.replace(bad.find("[container.id]"), 14, "[container.nosuch]");
  rb = load(bad);
  EXPECT_FALSE(rb.ruleset);
}

TEST(SequenceEvalSteps, ThreeStepsCarryTheMiddleStepsFields) {
  auto r = load(
      "- sequence: W\n  desc: d\n  by: [proc.pid]\n  within: 10s\n  priority: ERROR\n"
      "  steps:\n"
      "    - condition: evt.type = openat and fd.name startswith /tmp/\n"
      "    - condition: evt.type = execve\n"
      "    - condition: evt.type = connect\n"
      "  output: '%step1.fd.name %step2.proc.exepath %fd.sport'\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  SequenceState st(*r.ruleset, nullptr);
  World w;
  const std::uint64_t t0 = 1000 * kSec;
  w.open("/tmp/x", 0101);
  at(w, t0, *r.ruleset, st);
  w.exec();
  at(w, t0 + kSec, *r.ruleset, st);
  w.open("/tmp/y", 0101);  // a first step again does not undo the progress
  at(w, t0 + 2 * kSec, *r.ruleset, st);
  w.connect("203.0.113.9", 8080);
  auto out = at(w, t0 + 3 * kSec, *r.ruleset, st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "/tmp/x /usr/bin/python3.11 8080");
}

}  // namespace
}  // namespace vigil::rules

namespace vigil::rules {
namespace {

// An open step on literal prefixes keeps the sensor's open filter; steps may
// name the key differently (the path written is the path run).
TEST(SequenceSteps, OwnKeyFieldsAndTheOpenFilter) {
  auto r = load(
      "- list: drop\n  items: [/tmp/, /dev/shm/]\n"
      "- sequence: D\n  desc: d\n  by: [proc.pid, fd.name]\n  within: 10m\n  priority: ERROR\n"
      "  steps:\n"
      "    - condition: evt.type = openat and evt.is_open_write = true and fd.name pmatch (drop)\n"
      "    - condition: evt.type = execve and proc.exepath pmatch (drop)\n"
      "      by: [proc.pid, proc.exepath]\n"
      "  output: '%step1.fd.name run as %proc.exepath'\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_FALSE(r.ruleset->open_any_path()) << ::testing::PrintToString(r.ruleset->open_unfiltered_rules());
  // The step needs an open for writing: reads are not judged by its prefixes.
  EXPECT_TRUE(r.ruleset->open_paths().prefixes.empty());
  EXPECT_EQ(r.ruleset->open_paths().write_prefixes, (std::vector<std::string>{"/dev/shm/", "/tmp/"}));
  SequenceState st(*r.ruleset, nullptr);
  World w;
  const std::uint64_t t0 = 1000 * kSec;
  w.open("/tmp/a", 01 | 0100);
  at(w, t0, *r.ruleset, st);
  w.proc.exepath = "/tmp/b";
  w.exec();
  EXPECT_TRUE(at(w, t0 + kSec, *r.ruleset, st).empty());
  w.proc.exepath = "/tmp/a";
  w.exec();
  auto out = at(w, t0 + 2 * kSec, *r.ruleset, st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "/tmp/a run as /tmp/a");

  // A step's `by` names as many fields as the sequence's.
  r = load(
      "- sequence: D\n  desc: d\n  by: [proc.pid, fd.name]\n  within: 10m\n  priority: ERROR\n  output: o\n"
      "  steps:\n    - condition: evt.type = openat\n    - condition: evt.type = execve\n"
      "      by: [proc.exepath]\n");
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:10:11", "as many fields")) << testing::diags(r);
}

}  // namespace
}  // namespace vigil::rules

namespace vigil::rules {
namespace {

// A partial match's memory does not follow what the events carry: long
// fields of earlier steps are cut, long keys hashed (distinct keys stay
// distinct).
TEST(SequenceBounds, LongFieldsAreCutAndLongKeysHashed) {
  std::string f(1000, 'a');
  bound_step_field(f);
  EXPECT_EQ(f.size(), kMaxStepFieldBytes);
  EXPECT_EQ(f.substr(f.size() - 3), "...");
  std::string shortf = "short";
  bound_step_field(shortf);
  EXPECT_EQ(shortf, "short");

  std::string k1(5000, 'x'), k2(5000, 'x');
  k2.back() = 'y';
  bound_key(k1);
  bound_key(k2);
  EXPECT_LE(k1.size(), kMaxKeyBytes);
  EXPECT_NE(k1, k2);

  auto r = load(
      "- sequence: L\n  desc: d\n  by: [proc.pid, fd.name]\n  within: 10s\n  priority: ERROR\n"
      "  steps:\n"
      "    - condition: evt.type = openat\n"
      "    - condition: evt.type = execve\n"
      "      by: [proc.pid, proc.exepath]\n"
      "  output: '%step1.fd.name'\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  SequenceState st(*r.ruleset, nullptr);
  World w;
  const std::string path = "/tmp/" + std::string(600, 'p');
  w.open(path, 01 | 0100);
  at(w, 1000 * kSec, *r.ruleset, st);
  w.proc.exepath = path;
  w.exec();
  auto out = at(w, 1001 * kSec, *r.ruleset, st);
  ASSERT_EQ(out.size(), 1u);  // the hashed keys of both steps agree
  EXPECT_EQ(out[0].output, path.substr(0, kMaxStepFieldBytes - 3) + "...");
  EXPECT_EQ(std::get<std::string>(out[0].output_fields[0].second), out[0].output);
}

// --- counted steps (`count`): N matches of a step, sharing the key, in the window --

// A rate: three shells in one container within a minute.
std::string three_shells(const std::string& count = "3") {
  return "- sequence: R\n"
         "  desc: d\n"
         "  by: [container.id]\n"
         "  within: 60s\n"
         "  steps:\n"
         "    - condition: evt.type = execve and proc.name = sh\n"
         "      count: " +
         count +
         "\n"
         "  output: 'shells in %container.id, the last %proc.pid'\n"
         "  priority: WARNING\n";
}

TEST(SequenceCount, LoadsListsAndRejectsBadCounts) {
  auto r = load(three_shells());
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  ASSERT_EQ(r.ruleset->sequences().size(), 1u);
  for (const char* bad : {"0", "101", "x", "-2", "2.5"}) {
    r = load(three_shells(bad));
    EXPECT_FALSE(r.ruleset) << bad;
    EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:7:14", "'count' must be a whole number from 1 to 100"))
        << bad << "\n"
        << testing::diags(r);
  }
  // One step needs a count of 2 or more: alone it would be a rule.
  r = load(three_shells("1"));
  EXPECT_FALSE(r.ruleset);
  EXPECT_TRUE(has_diag(r, code::kSequence, "seq.yaml:6:5", "or one with a 'count' of 2 or more")) << testing::diags(r);
}

class SequenceRate : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load(three_shells());
    ASSERT_TRUE(r.ruleset) << testing::diags(r);
    rs = r.ruleset;
    st = std::make_unique<SequenceState>(*rs, &stats);
    shell(w);
  }
  std::size_t fired(std::uint64_t ts) { return at(w, ts, *rs, *st).size(); }
  std::shared_ptr<const Ruleset> rs;
  SequenceStats stats;
  std::unique_ptr<SequenceState> st;
  World w;
  const std::uint64_t t0 = 1767225600ull * kSec;
};

TEST_F(SequenceRate, TheCountthMatchInTheWindowFiresOnceThenCountingStartsAgain) {
  EXPECT_EQ(fired(t0), 0u);
  EXPECT_EQ(fired(t0 + 10 * kSec), 0u);
  w.proc.pid = 321;
  w.ev.hdr.pid = 321;
  auto out = at(w, t0 + 20 * kSec, *rs, *st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rule, "R");
  EXPECT_EQ(out[0].output, "shells in 3f1c0d2e9a7b, the last 321");
  EXPECT_EQ(st->size(), 0u);
  // The next alert needs three more.
  EXPECT_EQ(fired(t0 + 21 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 22 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 23 * kSec), 1u);
}

TEST_F(SequenceRate, TheWindowSlidesOldMatchesFallOutNotTheWholeCount) {
  EXPECT_EQ(fired(t0), 0u);
  EXPECT_EQ(fired(t0 + 59 * kSec), 0u);
  // t0 is out of the window now; the matches at 59 s and 61 s are two.
  EXPECT_EQ(fired(t0 + 61 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 62 * kSec), 1u) << "59 s, 61 s and 62 s are three within a minute";
  // Nothing was evicted: a match that slides is kept.
  EXPECT_EQ(stats.snapshot()[0].expired, 0u);
  // Three matches spread over more than the window never fire.
  EXPECT_EQ(fired(t0 + 200 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 240 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 290 * kSec), 0u);
  // When every match fell out, the match is evicted and counted.
  at(w, t0 + 400 * kSec, *rs, *st);
  EXPECT_EQ(stats.snapshot()[0].expired, 1u);
}

TEST_F(SequenceRate, EachKeyCountsItsOwn) {
  EXPECT_EQ(fired(t0), 0u);
  EXPECT_EQ(fired(t0 + 1 * kSec), 0u);
  w.container.id = "other";
  w.proc.container_id = "other";
  EXPECT_EQ(fired(t0 + 2 * kSec), 0u) << "another container's shell is not the third";
  EXPECT_EQ(fired(t0 + 3 * kSec), 0u);
  EXPECT_EQ(fired(t0 + 4 * kSec), 1u);
}

TEST(SequenceCountSteps, ACountedLaterStepNeedsItsCountAndAFirstStepCountedBeforeIt) {
  auto r = load(
      "- sequence: C\n  desc: d\n  by: [container.id]\n  within: 60s\n  priority: ERROR\n"
      "  steps:\n"
      "    - condition: evt.type = execve and proc.name = sh\n"
      "      count: 2\n"
      "    - condition: evt.type = connect and fd.sport > 0\n"
      "      count: 2\n"
      "  output: 'shell %step1.proc.pid then %fd.sport'\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  SequenceState st(*r.ruleset, nullptr);
  World w;
  const std::uint64_t t0 = 1000 * kSec;
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0, *r.ruleset, st).empty()) << "a later step before the first";
  shell(w);
  EXPECT_TRUE(at(w, t0 + 1 * kSec, *r.ruleset, st).empty());
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0 + 2 * kSec, *r.ruleset, st).empty()) << "one shell is not the first step's two";
  shell(w);
  w.proc.pid = 101;
  w.ev.hdr.pid = 101;
  EXPECT_TRUE(at(w, t0 + 3 * kSec, *r.ruleset, st).empty());
  w.connect("203.0.113.9", 443);
  EXPECT_TRUE(at(w, t0 + 4 * kSec, *r.ruleset, st).empty()) << "one connect is not the second step's two";
  auto out = at(w, t0 + 5 * kSec, *r.ruleset, st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "shell 101 then 443");
}

}  // namespace
}  // namespace vigil::rules
