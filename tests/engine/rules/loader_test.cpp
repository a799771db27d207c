// Loading rules files: documents, append/override, exceptions, diagnostics
// (golden), skipping, the event-type index and the alerts a Ruleset builds.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "engine/event/schema.h"
#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::World;

std::vector<std::string> fired(const LoadResult& r, const World& w) {
  std::vector<std::string> v;
  if (!r.ruleset) return v;
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  for (const auto& a : out) v.push_back(a.rule);
  return v;
}

std::string only(const LoadResult& r, Severity s) {
  std::string out;
  for (const auto& d : r.diagnostics) {
    if (d.severity == s) out += d.to_string() + "\n";
  }
  return out;
}

// ---------------------------------------------------------------- golden diagnostics

TEST(LoaderDiagnostics, TypeErrorOnNumberField) {
  auto r = testing::load_one(testing::rule_yaml("proc.pid > \"x\""));
  EXPECT_FALSE(r.ruleset);
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': 'x' is not a number, but 'proc.pid' is an int field\n");
  EXPECT_EQ(summary_line(r), "rules: 0 loaded, 0 skipped, 1 errors");
}

TEST(LoaderDiagnostics, OperatorNotForType) {
  auto r = testing::load_one(testing::rule_yaml("proc.name < 3"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': operator '<' cannot be used with string field 'proc.name'\n");
  r = testing::load_one(testing::rule_yaml("fd.sip contains 10"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': operator 'contains' cannot be used with ip field 'fd.sip'\n");
  r = testing::load_one(testing::rule_yaml("fd.sip in (10.0.0.0/33)"));
  EXPECT_EQ(
      only(r, Severity::kError),
      "test.yaml:4:14: error E006: rule 'R': '10.0.0.0/33' is not an IP address or network, but 'fd.sip' is an ip field\n");
  r = testing::load_one(testing::rule_yaml("evt.failed = maybe"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': 'maybe' is not true or false, but 'evt.failed' is a bool field\n");
  r = testing::load_one(testing::rule_yaml("toupper(proc.pid) = 1"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': toupper() needs a string field, 'proc.pid' is int\n");
  r = testing::load_one(testing::rule_yaml("proc.aname[x] = bash"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E006: rule 'R': field 'proc.aname' needs a numeric index 0..32, got 'x'\n");
  r = testing::load_one(testing::rule_yaml("proc.name[1] = bash"));
  EXPECT_EQ(only(r, Severity::kError), "test.yaml:4:14: error E006: rule 'R': field 'proc.name' takes no argument\n");
}

TEST(LoaderDiagnostics, SyntaxErrorShowsWhere) {
  auto r = testing::load_one(testing::rule_yaml("proc.name = bash and"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E004: rule 'R': unexpected end of condition (at offset 20: "
            "'proc.name = bash and')\n");
}

TEST(LoaderDiagnostics, BadRegex) {
  auto r = testing::load_one(testing::rule_yaml("proc.name regex \"(a\""));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E011: rule 'R': bad regular expression '(a': missing ): (a\n");
}

TEST(LoaderDiagnostics, UndefinedMacroAndCycle) {
  auto r = testing::load_one(testing::rule_yaml("evt.type = execve and nosuch"));
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:4:14: error E005: rule 'R': undefined macro 'nosuch' used in condition\n");
  r = testing::load_one(
      testing::rule_yaml("a", "o", "- macro: a\n  condition: b\n- macro: b\n  condition: proc.pid = 1 or a\n"));
  EXPECT_EQ(only(r, Severity::kError), "test.yaml:8:14: error E013: rule 'R': macro 'a' refers to itself\n");
}

TEST(LoaderDiagnostics, YamlErrors) {
  auto r = testing::load_one("- rule: [unclosed\n");
  EXPECT_EQ(r.errors, 1u);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, "E002");
  EXPECT_EQ(r.diagnostics[0].line, 2);
  r = testing::load_one("rule: x\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:1:1: error E003: a rules file must be a list of items (rule, macro, list, ...)\n");
  r = testing::load_one("- rule: R\n  desc: d\n  condition: proc.pid = 1\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:1:3: error E003: rule 'R': a rule needs 'output'\n"
            "test.yaml:1:3: error E003: rule 'R': a rule needs 'priority'\n");
  r = testing::load_one("- rule: R\n  desc: d\n  condition: proc.pid = 1\n  output: o\n  priority: LOUD\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:5:13: error E009: rule 'R': unknown priority 'LOUD' (Emergency, Alert, Critical, "
            "Error, Warning, Notice, Informational, Debug)\n");
}

TEST(LoaderDiagnostics, EveryProblemOfOneLoadIsReported) {
  std::string y =
      testing::rule_yaml("proc.pid > x") +
      "- rule: S\n  desc: d\n  priority: INFO\n  condition: 'proc.name = '\n  output: o\n"
      "- rule: T\n  desc: d\n  priority: INFO\n  condition: 'evt.type = execve and proc.name = a'\n  output: '%proc.name'\n"
      "- bogus: 1\n";
  auto r = testing::load_one(y);
  EXPECT_EQ(r.errors, 2u);
  EXPECT_EQ(r.loaded, 1u);
  EXPECT_FALSE(r.ruleset);  // any error: no ruleset
  EXPECT_NE(testing::diags(r).find("W001: unknown top-level item 'bogus' ignored"), std::string::npos);
}

TEST(LoaderDiagnostics, UnknownFieldSkipsTheRuleWithAWarning) {
  auto r = testing::load_one(testing::rule_yaml("evt.type = execve and ka.verb = create"));
  EXPECT_TRUE(r.ruleset);
  EXPECT_EQ(r.loaded, 0u);
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_EQ(only(r, Severity::kWarning),
            "test.yaml:4:14: warning W003: rule 'R': unknown field ka.verb: vigil does not collect it; rule skipped\n");
  // Falco's skip-if-unknown-filter says the same, explicitly.
  r = testing::load_one(
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: thread.cap_ambient contains X\n  output: o\n"
      "  skip-if-unknown-filter: true\n");
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_NE(testing::diags(r).find("unknown field thread.cap_ambient (skip-if-unknown-filter)"), std::string::npos);
}

TEST(LoaderDiagnostics, OtherSourcesAreSkipped) {
  auto r = testing::load_one(
      "- rule: K\n  desc: d\n  priority: INFO\n  source: k8s_audit\n  condition: ka.verb = create\n  output: o\n");
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_EQ(
      only(r, Severity::kWarning),
      "test.yaml:1:3: warning W004: rule 'K': source 'k8s_audit' is not one vigil has (no loaded plugin gives it); rule skipped\n");
}

TEST(LoaderDiagnostics, UnknownKeysAndOutputFieldsWarn) {
  auto r = testing::load_one(
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: '%proc.name %proc.nosuch'\n"
      "  colour: red\n");
  EXPECT_EQ(r.loaded, 1u);
  EXPECT_EQ(only(r, Severity::kWarning),
            "test.yaml:6:3: warning W002: rule 'R': unknown key 'colour' ignored\n"
            "test.yaml:5:11: warning W012: rule 'R': unknown field 'proc.nosuch' in output prints <NA>\n");
}

TEST(LoaderDiagnostics, EngineVersion) {
  auto r = testing::load_one("- required_engine_version: 0.57.0\n");
  EXPECT_EQ(r.errors, 0u);
  r = testing::load_one("- required_engine_version: 9.0.0\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:1:3: error E012: rules require engine version 9.0.0, vigil implements 0.63.0\n");
  r = testing::load_one("- required_engine_version: 12\n");  // legacy integer: 0.12.0
  EXPECT_EQ(r.errors, 0u);
  r = testing::load_one("- required_plugin_versions:\n  - name: container\n    version: 0.4.0\n");
  EXPECT_EQ(r.errors, 0u);
}

TEST(LoaderDiagnostics, WarnEvttypes) {
  auto r = testing::load_one(testing::rule_yaml("proc.name = bash"));
  EXPECT_EQ(
      only(r, Severity::kWarning),
      "test.yaml:4:14: warning W008: rule 'R': the condition does not restrict evt.type: it runs for every event\n");
  r = testing::load_one(
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: proc.name = bash\n  output: o\n  warn_evttypes: false\n");
  EXPECT_EQ(only(r, Severity::kWarning), "");
}

TEST(LoaderDiagnostics, UnusedMacrosAndLists) {
  auto r = testing::load_one(
      testing::rule_yaml("evt.type = execve", "o", "- list: l\n  items: [a]\n- macro: m\n  condition: proc.pid = 1\n"));
  EXPECT_EQ(only(r, Severity::kWarning),
            "test.yaml:3:3: warning W006: macro 'm': macro is not used\n"
            "test.yaml:1:3: warning W007: list 'l': list is not used\n");
}

TEST(LoaderDiagnostics, InputThatLoopsTheYamlParserIsRejected) {
  // Found by fuzzing: yaml-cpp 0.7 never finishes this document (and allocates
  // without bound). The libyaml syntax check refuses it first, with its position.
  auto r = testing::load_one(
      ", required_engi, '\"my shell\"']\n- macro: spawned\n  cexceptions:\n"
      "    - na: and proc.pid > 2\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:1:1: error E002: invalid YAML: while parsing a block node: did not find "
            "expected node content\n");
}

// Issue 16, item 6: a rule file of 100k nested collections took 18-25 s to
// refuse; the YAML gate stops at the first level past its limit.
TEST(LoaderDiagnostics, DeepNestingIsRefusedAtOnceWithItsPosition) {
  for (char open : {'[', '{'}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = testing::load_one("- rule: R\n  condition: " + std::string(100000, open) + "\n");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(only(r, Severity::kError),
              "test.yaml:2:76: error E002: invalid YAML: nested deeper than 64 levels (the limit)\n");
    EXPECT_LT(s, 2.0) << "a generous bound: it takes about a millisecond";
  }
}

TEST(LoaderDiagnostics, HostileExpansionsAreBounded) {
  // A list that names itself (twice) does not expand forever.
  World w;
  w.exec();
  auto r = testing::load_one(
      testing::rule_yaml("evt.type = execve and proc.name in (l)", "o", "- list: l\n  items: [l, l, python3]\n"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"R"});
  // Macros that double at every level are stopped with an error, not exhausted memory.
  std::string macros = "- macro: m0\n  condition: proc.pid = 1\n";
  for (int i = 1; i <= 40; ++i) {
    macros += "- macro: m" + std::to_string(i) + "\n  condition: m" + std::to_string(i - 1) + " or m" +
              std::to_string(i - 1) + "\n";
  }
  r = testing::load_one(testing::rule_yaml("evt.type = execve and m40", "o", macros));
  EXPECT_FALSE(r.ruleset);
  EXPECT_NE(only(r, Severity::kError).find("E014: rule 'R': the condition is too large after macro expansion"),
            std::string::npos)
      << testing::diags(r);
}

// An exec rule named `name` whose condition is an `and` chain of `terms`
// tests of proc.name.
std::string chain_rule(const std::string& name, std::size_t terms) {
  std::string cond = "evt.type = execve";
  for (std::size_t i = 0; i < terms; ++i) cond += " and proc.name != p" + std::to_string(i);
  return "- rule: " + name + "\n  desc: d\n  priority: WARNING\n  condition: " + cond + "\n  output: o\n";
}

// A condition over the node limit is an error that names its rule, file and
// line; nothing is built (a reload keeps the old rules). Without the limit
// the same file loads.
TEST(LoaderDiagnostics, ConditionSizeIsLimited) {
  const std::string yaml = chain_rule("small", 10) + chain_rule("huge", 15000);
  auto r = load_rules_text({{"big.yaml", yaml}}, LoadOptions{});
  EXPECT_FALSE(r.ruleset);
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(only(r, Severity::kError),
            "big.yaml:9:14: error E014: rule 'huge': the condition is too large (over 10000 nodes, the limit; "
            "split it into several rules)\n")
      << testing::diags(r);
  LoadOptions small;
  small.max_condition_nodes = 15;  // the 10-term rule has 12 nodes (11 tests, one and)
  r = load_rules_text({{"big.yaml", chain_rule("small", 10)}}, small);
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
  r = load_rules_text({{"big.yaml", chain_rule("small", 20)}}, small);
  EXPECT_FALSE(r.ruleset);
  LoadOptions none;
  none.max_condition_nodes = 0;
  r = load_rules_text({{"big.yaml", yaml}}, none);
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.loaded, 2u);
}

// The compile time budget and the cancel flag stop a load at the next rule,
// with an error that names it; nothing is built.
TEST(LoaderDiagnostics, CompileBudgetAndCancelStopTheLoad) {
  // The first rule takes tens of milliseconds, past a 1 ms budget.
  const std::string yaml = chain_rule("slow", 9000) + chain_rule("after", 2) + chain_rule("last", 2);
  LoadOptions budget;
  budget.compile_budget = std::chrono::milliseconds(1);
  auto r = load_rules_text({{"b.yaml", yaml}}, budget);
  EXPECT_FALSE(r.ruleset);
  EXPECT_EQ(only(r, Severity::kError),
            "b.yaml:6:3: error E015: rule 'after': the compile took longer than its budget of 1 ms; stopped "
            "here, this rule and those after it are not compiled\n")
      << testing::diags(r);
  std::atomic<bool> cancel{true};
  LoadOptions cancelled;
  cancelled.cancel = &cancel;
  r = load_rules_text({{"b.yaml", yaml}}, cancelled);
  EXPECT_FALSE(r.ruleset);
  EXPECT_EQ(only(r, Severity::kError),
            "b.yaml:1:3: error E015: rule 'slow': the compile was cancelled; stopped here, this rule and those "
            "after it are not compiled\n")
      << testing::diags(r);
  cancel = false;
  budget.compile_budget = std::chrono::seconds(600);
  r = load_rules_text({{"b.yaml", yaml}}, cancelled);
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
  r = load_rules_text({{"b.yaml", yaml}}, budget);
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
}

// ---------------------------------------------------------------- overrides

TEST(LoaderOverride, LegacyAppendOnListMacroRule) {
  World w;
  w.exec();
  std::string y =
      "- list: names\n  items: [bash]\n"
      "- list: names\n  items: [python3]\n  append: true\n"
      "- macro: m\n  condition: proc.pid = 1\n"
      "- macro: m\n  condition: or proc.pid = 100\n  append: true\n"
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve and m\n  output: o\n"
      "- rule: R\n  condition: and proc.name in (names)\n  append: true\n";
  auto r = testing::load_one(y);
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"R"});
  EXPECT_NE(testing::diags(r).find("W005"), std::string::npos);  // deprecated
}

TEST(LoaderOverride, AppendAndReplace) {
  World w;
  w.exec();
  std::string base =
      "- list: names\n  items: [bash]\n"
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: first\n  tags: [a]\n";
  auto r = testing::load_one(
      base +
      "- list: names\n  items: [python3]\n  override:\n    items: replace\n"
      "- rule: R\n  condition: and proc.name in (names)\n  output: second\n  tags: [b]\n  priority: CRITICAL\n"
      "  override:\n    condition: append\n    output: replace\n    tags: append\n    priority: replace\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "second");
  EXPECT_EQ(out[0].priority, event::Priority::kCritical);
  EXPECT_EQ(out[0].tags, (std::vector<std::string>{"a", "b"}));
  // Replace the list with something else: no longer fires.
  r = testing::load_one(base +
                        "- list: names\n  items: [zsh]\n  override:\n    items: replace\n"
                        "- rule: R\n  condition: and proc.name in (names)\n  override:\n    condition: append\n");
  EXPECT_TRUE(fired(r, w).empty());
}

TEST(LoaderOverride, EnabledReplaceAndDeprecatedToggle) {
  World w;
  w.exec();
  std::string base = "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: o\n";
  auto r = testing::load_one(base + "- rule: R\n  enabled: false\n  override:\n    enabled: replace\n");
  ASSERT_TRUE(r.ruleset);
  EXPECT_TRUE(fired(r, w).empty());
  EXPECT_FALSE(r.ruleset->rules()[0].enabled);
  EXPECT_TRUE(r.ruleset->event_types().empty());
  r = testing::load_one(base + "- rule: R\n  enabled: false\n");
  EXPECT_TRUE(fired(r, w).empty());
  EXPECT_NE(testing::diags(r).find("W005"), std::string::npos);
}

TEST(LoaderOverride, Errors) {
  std::string base = "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: o\n";
  auto r = testing::load_one(
      base + "- rule: R\n  condition: and proc.pid = 1\n  append: true\n  override:\n    condition: append\n");
  EXPECT_NE(only(r, Severity::kError).find("E008: rule 'R': 'append' and 'override' cannot be used together"),
            std::string::npos);
  r = testing::load_one(base + "- rule: R\n  priority: INFO\n  override:\n    priority: append\n");
  EXPECT_NE(only(r, Severity::kError).find("E008: rule 'R': key 'priority' cannot be overridden with 'append'"),
            std::string::npos);
  r = testing::load_one(base +
                        "- rule: R\n  condition: and proc.pid = 1\n  output: x\n  override:\n    condition: append\n");
  EXPECT_NE(only(r, Severity::kError)
                .find("E008: rule 'R': unexpected key 'output': no corresponding entry under 'override'"),
            std::string::npos);
  r = testing::load_one("- rule: Missing\n  condition: and proc.pid = 1\n  override:\n    condition: append\n");
  EXPECT_EQ(only(r, Severity::kError),
            "test.yaml:1:3: error E008: rule 'Missing': override to a rule that is not defined\n");
  r = testing::load_one("- list: nolist\n  items: [a]\n  append: true\n");
  EXPECT_NE(only(r, Severity::kError).find("E008: list 'nolist': append to a list that is not defined"),
            std::string::npos);
}

TEST(LoaderOverride, RedefinitionReplacesAndKeepsPosition) {
  World w;
  w.exec();
  auto r = testing::load_one(
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: a1\n"
      "- rule: B\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: b\n"
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: a2\n");
  ASSERT_TRUE(r.ruleset);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].rule, "A");
  EXPECT_EQ(out[0].output, "a2");
  EXPECT_EQ(out[1].rule, "B");
}

// ---------------------------------------------------------------- exceptions

std::string exc_rule(const std::string& exceptions) {
  return "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n  output: o\n"
         "  exceptions:\n" +
         exceptions;
}

TEST(LoaderExceptions, TupleValues) {
  World w;
  w.exec();
  auto r =
      testing::load_one(exc_rule("  - name: known\n    fields: [proc.name, proc.pname]\n    comps: [=, in]\n"
                                 "    values:\n      - [python3, [bash, zsh]]\n"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(fired(r, w).empty());  // python3 under bash is excepted
  w.proc.comm = "perl";
  EXPECT_EQ(fired(r, w).size(), 1u);
}

TEST(LoaderExceptions, DefaultCompsAreEquals) {
  World w;
  w.exec();
  auto r = testing::load_one(exc_rule(
      "  - name: e\n    fields: [proc.name, user.uid]\n    values:\n      - [python3, 1000]\n      - [perl, 0]\n"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(fired(r, w).empty());
  w.proc.uid = 0;
  EXPECT_EQ(fired(r, w).size(), 1u);
}

TEST(LoaderExceptions, ScalarFieldUsesIn) {
  World w;
  w.exec();
  auto r = testing::load_one(exc_rule("  - name: e\n    fields: proc.name\n    values: [perl, python3]\n"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(fired(r, w).empty());
  r = testing::load_one(exc_rule("  - name: e\n    fields: proc.exepath\n    comps: pmatch\n    values: [/usr/bin]\n"));
  EXPECT_TRUE(fired(r, w).empty());
  r = testing::load_one(exc_rule("  - name: e\n    fields: proc.name\n    comps: '='\n    values: [x]\n"));
  EXPECT_NE(only(r, Severity::kError).find("with a single field, comps must be in, pmatch or intersects"),
            std::string::npos);
}

TEST(LoaderExceptions, TransformerValuesCompareFields) {
  World w;
  w.exec();
  w.proc.comm = "bash";
  auto r =
      testing::load_one(exc_rule("  - name: same\n    fields: [proc.name]\n    values:\n      - [val(proc.pname)]\n"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(fired(r, w).empty());
  w.proc.comm = "sh";
  EXPECT_EQ(fired(r, w).size(), 1u);
}

TEST(LoaderExceptions, NoValuesThenAppendedValues) {
  World w;
  w.exec();
  std::string y = exc_rule("  - name: e\n    fields: [proc.name]\n");
  auto r = testing::load_one(y);
  EXPECT_EQ(fired(r, w).size(), 1u);  // no values: excepts nothing
  r = testing::load_one(y +
                        "- rule: R\n  exceptions:\n  - name: e\n    values: [[python3]]\n"
                        "  override:\n    exceptions: append\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(fired(r, w).empty());
  r = testing::load_one(y + "- rule: R\n  exceptions:\n  - name: e\n  override:\n    exceptions: append\n");
  EXPECT_NE(testing::diags(r).find("W010: rule 'R': exception 'e': append with no values"), std::string::npos);
  r = testing::load_one(y +
                        "- rule: R\n  exceptions:\n  - name: e\n    fields: [proc.pid]\n    values: [[1]]\n"
                        "  override:\n    exceptions: append\n");
  EXPECT_NE(only(r, Severity::kError).find("appending may add values only, not fields or comps"), std::string::npos);
}

TEST(LoaderExceptions, Malformed) {
  auto r = testing::load_one(
      exc_rule("  - name: e\n    fields: [proc.name, proc.pid]\n    comps: [=]\n    values: [[a, 1]]\n"));
  EXPECT_NE(only(r, Severity::kError).find("E010: rule 'R': exception 'e': fields and comps differ in length"),
            std::string::npos);
  r = testing::load_one(exc_rule("  - name: e\n    fields: [proc.name, proc.pid]\n    values: [[a]]\n"));
  EXPECT_NE(only(r, Severity::kError).find("a value tuple has 1 elements, fields has 2"), std::string::npos);
  r = testing::load_one(exc_rule("  - name: e\n    fields: [proc.name]\n  - name: e\n    fields: [proc.pid]\n"));
  EXPECT_NE(testing::diags(r).find("W009: rule 'R': exception name 'e' is not unique"), std::string::npos);
  r = testing::load_one(exc_rule("  - name: e\n    fields: [proc.pid]\n    values: [[notanumber]]\n"));
  EXPECT_NE(only(r, Severity::kError).find("E006"), std::string::npos);
}

// ---------------------------------------------------------------- alerts

TEST(RulesetAlerts, EventTimeFieldsPrintUtcWithNanoseconds) {
  World w;
  w.exec();
  // 2026-01-01 13:04:05.123456789 UTC: every part of the clock zero-padded.
  w.ev.hdr.ts_ns = (1767225600ull + 13 * 3600 + 4 * 60 + 5) * 1000000000ull + 123456789;
  auto r = testing::load_one(
      "- rule: T\n  desc: d\n  priority: INFO\n  condition: evt.type = execve\n"
      "  output: '%evt.time %evt.time.iso8601'\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "13:04:05.123456789 2026-01-01T13:04:05.123456789Z");
}

TEST(RulesetAlerts, OutputSubstitutionAndTypedFields) {
  World w;
  w.exec();
  auto r = testing::load_one(
      "- rule: Shell\n  desc: d\n  priority: CRITICAL\n  tags: [inference_shell, T1059]\n"
      "  condition: evt.type = execve\n"
      "  output: >\n    Run (pid=%proc.pid name=%proc.name parent=%proc.aname[1] app=%k8s.pod.label[app]\n"
      "    up=%toupper(proc.name) fd=%fd.name 100%% %(container.id)x)\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  const auto& a = out[0];
  EXPECT_EQ(a.output, "Run (pid=100 name=python3 parent=bash app=train up=PYTHON3 fd=<NA> 100% 3f1c0d2e9a7bx)");
  EXPECT_EQ(a.priority, event::Priority::kCritical);
  EXPECT_EQ(a.tags, (std::vector<std::string>{"inference_shell", "T1059"}));
  EXPECT_EQ(a.time_ns, w.ev.hdr.ts_ns);
  ASSERT_EQ(a.output_fields.size(), 7u);
  EXPECT_EQ(a.output_fields[0].first, "proc.pid");
  EXPECT_EQ(std::get<std::int64_t>(a.output_fields[0].second), 100);
  EXPECT_EQ(a.output_fields[2].first, "proc.aname[1]");
  EXPECT_EQ(std::get<std::string>(a.output_fields[2].second), "bash");
  EXPECT_EQ(a.output_fields[4].first, "toupper(proc.name)");
  EXPECT_EQ(a.output_fields[5].first, "fd.name");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(a.output_fields[5].second));
  EXPECT_EQ(a.output_fields[6].first, "container.id");
}

TEST(RulesetAlerts, UuidIsDeterministicPerEventAndRule) {
  World w;
  w.exec();
  auto u1 = alert_uuid(w.ev, "A");
  EXPECT_EQ(u1, alert_uuid(w.ev, "A"));
  EXPECT_NE(u1, alert_uuid(w.ev, "B"));
  EXPECT_EQ(u1.size(), 36u);
  EXPECT_EQ(u1[14], '8');  // version 8
  EXPECT_TRUE(u1[19] == '8' || u1[19] == '9' || u1[19] == 'a' || u1[19] == 'b');
  auto e2 = w.ev;
  e2.hdr.ts_ns += 1;
  EXPECT_NE(u1, alert_uuid(e2, "A"));
  auto r = testing::load_one(testing::rule_yaml("evt.type = execve"));
  std::vector<event::Alert> a, b;
  r.ruleset->evaluate(w.ctx(), a);
  r.ruleset->evaluate(w.ctx(), b);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].uuid, b[0].uuid);
  EXPECT_EQ(a[0].uuid, alert_uuid(w.ev, "R"));
}

TEST(RulesetIndex, EventTypesAndOnlyMatchingRulesRun) {
  // N names every type but xid, as the schema lists them: only xid is left.
  std::string all_but_xid;
  event::TypeMask::all().for_each([&](event::Type t) {
    if (t == event::Type::kXid) return;
    all_but_xid += (all_but_xid.empty() ? "" : ", ") + std::string(event::type_name(t));
  });
  auto r = testing::load_one(
      "- rule: E\n  desc: d\n  priority: INFO\n  condition: evt.type in (execve, connect)\n  output: o\n"
      "- rule: O\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and not proc.name = x\n  output: o\n"
      "- rule: N\n  desc: d\n  priority: INFO\n  condition: not evt.type in (" +
      all_but_xid + ")\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  auto infos = r.ruleset->rules();
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].event_types, (std::vector<std::string>{"execve", "connect"}));
  EXPECT_EQ(infos[1].event_types, (std::vector<std::string>{"openat"}));
  EXPECT_EQ(infos[2].event_types, (std::vector<std::string>{"xid"}));
  auto types = r.ruleset->event_types();
  EXPECT_EQ(types,
            (std::set<event::Type>{event::Type::kExec, event::Type::kConnect, event::Type::kOpen, event::Type::kXid}));
}

// fd.sip.name is filled from DNS answers: a rule reading it, in its
// condition or its output, needs the dns events (Falco's Contact K8S API
// Server From Container did not fire: no rule asked for dns).
TEST(RulesetIndex, ANameFromDnsAnswersNeedsTheDnsEvents) {
  auto r = testing::load_one(testing::rule_yaml("evt.type = connect and fd.sip.name = kubernetes.default.svc"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(r.ruleset->event_types().count(event::Type::kDns));
  r = testing::load_one(
      "- rule: R\n  desc: d\n  priority: INFO\n  condition: evt.type = connect\n  output: to %fd.rip.name\n");
  EXPECT_TRUE(r.ruleset->event_types().count(event::Type::kDns));
  r = testing::load_one(testing::rule_yaml("evt.type = connect and fd.sport = 443"));
  EXPECT_FALSE(r.ruleset->event_types().count(event::Type::kDns));
}

// `vigil rules validate` names each kind of path the open filter gets; a
// rule set with write-only prefixes and no others once said "the same" of
// nothing.
TEST(RulesetIndex, OpenPathsDescribeNamesEachKind) {
  OpenPaths p;
  p.write_prefixes = {"/tmp/"};
  p.given = {"../"};
  EXPECT_EQ(p.describe(),
            "prefixes of the resolved path, for opens for writing only: /tmp/; prefixes of the path as given: ../");
  p.prefixes = {"/etc/", "/root/.ssh"};
  p.whole = {"/etc/shadow"};
  p.directories = {"/var/log"};
  EXPECT_EQ(p.describe(),
            "prefixes of the resolved path: /etc/, /root/.ssh; the same, for opens for writing only: /tmp/; "
            "prefixes of the path as given: ../; whole paths: /etc/shadow; directories: /var/log");
  EXPECT_EQ(OpenPaths{}.describe(), "");
}

TEST(RulesetIndex, OpenPathPrefixes) {
  auto r = testing::load_one(
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and (fd.name in (/etc/shadow, /etc/sudoers) or fd.directory = /root/.ssh)\n  output: o\n"
      "- rule: B\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /dev/nvidia and proc.name = x\n  output: o\n"
      "- rule: C\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name glob /proc/*/environ\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  // fd.name = / in compare the whole resolved path; the other tests, and
  // fd.directory, a prefix.
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/dev/nvidia", "/proc/"}));
  EXPECT_EQ(r.ruleset->open_paths().whole, (std::vector<std::string>{"/etc/shadow", "/etc/sudoers"}));
  EXPECT_EQ(r.ruleset->open_paths().directories, (std::vector<std::string>{"/root/.ssh"}));
  EXPECT_FALSE(r.ruleset->open_any_path());
  // A literal one rule compares whole and another as a prefix is a prefix;
  // fd.nameraw (the path as given) and a literal ending in '/' never whole.
  r = testing::load_one(
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name in (/etc/shadow, /etc/hosts)\n  output: o\n"
      "- rule: B\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /etc/shadow\n  output: o\n"
      "- rule: C\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and (fd.nameraw = /x/raw or fd.name = /x/dir/)\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/etc/shadow", "/x/dir/"}));
  EXPECT_EQ(r.ruleset->open_paths().given, (std::vector<std::string>{"/x/raw"}));
  EXPECT_EQ(r.ruleset->open_paths().whole, (std::vector<std::string>{"/etc/hosts"}));
  // The path arguments are the path as given: given prefixes, never whole.
  r = testing::load_one(testing::rule_yaml("evt.type = openat and evt.arg.path in (/etc/a, /etc/b)"));
  EXPECT_TRUE(r.ruleset->open_paths().prefixes.empty());
  EXPECT_EQ(r.ruleset->open_paths().given, (std::vector<std::string>{"/etc/a", "/etc/b"}));
  EXPECT_TRUE(r.ruleset->open_paths().whole.empty());
  // Where an "and" offers both, the resolved path's literals are taken: they
  // judge the file opened, whatever path the process gave.
  r = testing::load_one(
      testing::rule_yaml("evt.type = openat and fd.nameraw startswith /x/ and fd.name startswith /y/"));
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/y/"}));
  EXPECT_TRUE(r.ruleset->open_paths().given.empty());
  // Only an open for writing can match a literal of an "and" that needs
  // one (Falco's open_write): a read is not judged by it.
  r = testing::load_one(
      testing::rule_yaml("evt.type = openat and evt.is_open_write = true and fd.name startswith /w/"));
  EXPECT_TRUE(r.ruleset->open_paths().prefixes.empty());
  EXPECT_EQ(r.ruleset->open_paths().write_prefixes, (std::vector<std::string>{"/w/"}));
  // A directory under a prefix takes no slot; "/" is no directory name.
  r = testing::load_one(
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.directory in (/etc/pam.d, /var/x/, /)\n  output: o\n"
      "- rule: B\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /etc/\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/"}));  // which covers /etc/
  EXPECT_EQ(r.ruleset->open_paths().directories, (std::vector<std::string>{}));
  // A prefix covers longer ones of its own kind only: a given "/tmp/" does
  // not send every open whose resolved path is under /tmp/x/.
  r = testing::load_one(
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.nameraw startswith /tmp/\n  output: o\n"
      "- rule: B\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /tmp/x/\n  output: o\n"
      "- rule: C\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /tmp/\n  output: o\n"
      "- rule: D\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name = /tmp/y\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/tmp/"}));
  EXPECT_EQ(r.ruleset->open_paths().given, (std::vector<std::string>{"/tmp/"}));
  EXPECT_TRUE(r.ruleset->open_paths().whole.empty());
  r = testing::load_one(testing::rule_yaml("evt.type = openat and proc.name = cat"));
  EXPECT_TRUE(r.ruleset->open_any_path());
  EXPECT_EQ(r.ruleset->open_unfiltered_rules(), std::vector<std::string>{"R"});
}

// What Falco's rules compare besides whole paths and prefixes: file names
// (fd.filename, fd.name endswith NAME) are judged like a whole path's last
// component; a traversal ("../" in the path as given) beside a check on the
// resolved path makes that check's literals traversal ones, wherever the
// "../" sits; and a check on a field only NVIDIA device opens fill needs no
// path at all.
TEST(RulesetIndex, OpenFileNamesTraversalAndDeviceFields) {
  auto r = testing::load_one(
      "- rule: L\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and (fd.directory in (/var/log) or fd.filename in (syslog, auth.log))\n  output: o\n"
      "- rule: T\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and (fd.name contains id_rsa or fd.name startswith /etc/) and fd.nameraw contains \"../\" and fd.nameraw glob \"*../*../*\"\n  output: o\n"
      "- rule: A\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name endswith release_agent\n  output: o\n"
      "- rule: G\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and gpu.device exists and gpu.allowed = false\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_TRUE(r.ruleset->open_paths().prefixes.empty());
  EXPECT_EQ(r.ruleset->open_paths().directories, (std::vector<std::string>{"/var/log"}));
  EXPECT_TRUE(r.ruleset->open_paths().given.empty());
  EXPECT_EQ(r.ruleset->open_paths().traversal_prefixes, (std::vector<std::string>{"/etc/"}));
  EXPECT_EQ(r.ruleset->open_paths().traversal_fragments, (std::vector<std::string>{"id_rsa"}));
  EXPECT_EQ(r.ruleset->open_paths().whole, (std::vector<std::string>{"/auth.log", "/release_agent", "/syslog"}));
  EXPECT_FALSE(r.ruleset->open_any_path()) << ::testing::PrintToString(r.ruleset->open_unfiltered_rules());
  // A traversal alone is judged by the given path's first bytes; a name
  // fragment without one is no filter.
  r = testing::load_one(testing::rule_yaml("evt.type = openat and fd.nameraw contains \"../\""));
  EXPECT_EQ(r.ruleset->open_paths().given, (std::vector<std::string>{"../"}));
  EXPECT_TRUE(r.ruleset->open_paths().traversal_prefixes.empty());
  r = testing::load_one(testing::rule_yaml("evt.type = openat and fd.name contains id_rsa"));
  EXPECT_TRUE(r.ruleset->open_any_path());
  // A traversal prefix under a prefix for any open adds nothing.
  r = testing::load_one(
      "- rule: T\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /etc/ssh/ and fd.nameraw contains \"../\"\n  output: o\n"
      "- rule: E\n  desc: d\n  priority: INFO\n  condition: evt.type = openat and fd.name startswith /etc/\n  output: o\n");
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.ruleset->open_paths().prefixes, (std::vector<std::string>{"/etc/"}));
  EXPECT_TRUE(r.ruleset->open_paths().traversal_prefixes.empty());
  // A name with a '/' or a suffix that is not a whole name is no file name.
  r = testing::load_one(testing::rule_yaml("evt.type = openat and fd.name endswith /x/agent"));
  EXPECT_TRUE(r.ruleset->open_any_path());
  r = testing::load_one(testing::rule_yaml("evt.type = openat and not gpu.device exists"));
  EXPECT_TRUE(r.ruleset->open_any_path());
}

TEST(RulesetOptions, DisabledTagsRulesAndPriority) {
  World w;
  w.exec();
  std::string y =
      "- rule: A\n  desc: d\n  priority: DEBUG\n  tags: [noisy]\n  condition: evt.type = execve\n  output: o\n"
      "- rule: B\n  desc: d\n  priority: CRITICAL\n  condition: evt.type = execve\n  output: o\n";
  LoadOptions o;
  o.disabled_tags = {"noisy"};
  auto r = load_rules_text({{"t.yaml", y}}, o);
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"B"});
  o = LoadOptions{};
  o.min_priority = event::Priority::kWarning;
  r = load_rules_text({{"t.yaml", y}}, o);
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"B"});
  o = LoadOptions{};
  o.disabled_rules = {"B"};
  r = load_rules_text({{"t.yaml", y}}, o);
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"A"});
}

TEST(LoadRules, DirectoriesLoadYamlFilesSorted) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("vigil_rules_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "b.yaml") << "- rule: R\n  condition: and proc.pid = 100\n  override:\n    condition: append\n";
  std::ofstream(dir / "a.yaml") << testing::rule_yaml("evt.type = execve");
  std::ofstream(dir / "c.txt") << "not yaml: [";
  auto r = load_rules({dir.string()}, LoadOptions{});
  EXPECT_EQ(r.errors, 0u) << testing::diags(r);
  World w;
  w.exec();
  EXPECT_EQ(fired(r, w), std::vector<std::string>{"R"});
  w.ev.hdr.pid = 5;
  w.proc.pid = 5;
  EXPECT_TRUE(fired(r, w).empty());
  r = load_rules({(dir / "missing.yaml").string()}, LoadOptions{});
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(r.diagnostics[0].code, "E001");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil::rules
