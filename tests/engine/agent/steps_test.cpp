// The agent's plans and its steps alone (engine/agent): the order of each
// command's steps, a failing step that stops its plan with its exit code,
// and the steps that need no root: load configuration, load rules with the
// rule-count policy, reload (the old set stays on an error).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "engine/agent/agent.h"
#include "engine/agent/plan.h"
#include "engine/agent/steps/steps.h"
#include "engine/posture/source.h"
#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::agent {
namespace {

std::vector<std::string> names(const Plan& p) {
  std::vector<std::string> out;
  for (const Step& s : p.steps) out.emplace_back(s.name);
  return out;
}

TEST(Plan, RunStepsInOrder) {
  EXPECT_EQ(names(run_plan()), (std::vector<std::string>{"start loop",
                                                         "load configuration",
                                                         "read agent settings",
                                                         "load plugins",
                                                         "load rules",
                                                         "start outputs",
                                                         "seed state",
                                                         "discover kubernetes",
                                                         "watch pods",
                                                         "ask the container runtime",
                                                         "start recording",
                                                         "open sources",
                                                         "check posture",
                                                         "start baselines",
                                                         "build pipeline",
                                                         "watch files",
                                                         "say ready",
                                                         "start web server",
                                                         "start heartbeat",
                                                         "run",
                                                         "stop"}));
  EXPECT_NE(run_plan().on_failure, nullptr);  // the outputs started are shut down
}

TEST(Plan, CaptureAndReplayStepsInOrder) {
  EXPECT_EQ(names(capture_plan()),
            (std::vector<std::string>{"start loop", "load configuration", "discover kubernetes", "load plugins",
                                      "compile filter", "seed state", "watch pods", "ask the container runtime",
                                      "start capture file", "open sources", "check posture", "build pipeline",
                                      "say ready", "run", "stop"}));
  EXPECT_EQ(names(replay_plan()),
            (std::vector<std::string>{"start loop", "load configuration", "load plugins", "compile filter",
                                      "open capture", "load rules", "start outputs", "select events", "load baselines",
                                      "build pipeline", "run", "stop"}));
}

// The steps the commands share are the same functions.
TEST(Plan, CommandsShareTheirCommonSteps) {
  auto fn = [](const Plan& p, std::string_view name) {
    for (const Step& s : p.steps) {
      if (s.name == name) return s.fn;
    }
    return static_cast<Status (*)(Agent&)>(nullptr);
  };
  for (const char* shared : {"start loop", "load configuration", "load plugins", "run"}) {
    EXPECT_EQ(fn(run_plan(), shared), fn(capture_plan(), shared)) << shared;
    EXPECT_EQ(fn(run_plan(), shared), fn(replay_plan(), shared)) << shared;
  }
  for (const char* shared : {"discover kubernetes", "seed state", "watch pods"}) {
    EXPECT_EQ(fn(run_plan(), shared), fn(capture_plan(), shared)) << shared;
  }
  EXPECT_EQ(fn(capture_plan(), "compile filter"), fn(replay_plan(), "compile filter"));
}

// Steps that record their calls, for a plan of our own.
std::vector<std::string> called;
Status ok_a(Agent& a) {
  called.push_back("a");
  a.exit_code = 7;
  return {};
}
Status bad_input(Agent&) {
  called.push_back("bad");
  return Error::bad_input("a bad setting");
}
Status runtime_error(Agent&) {
  called.push_back("runtime");
  return Error::runtime("no privileges");
}
Status ok_b(Agent&) {
  called.push_back("b");
  return {};
}
void cleanup(Agent&) { called.push_back("cleanup"); }

TEST(Plan, AFailingStepStopsThePlanWithItsExitCode) {
  Agent a(Options{});
  called.clear();
  EXPECT_EQ(run(a, Plan{"test", {{"a", ok_a}, {"bad", bad_input}, {"b", ok_b}}, cleanup}), 2);
  EXPECT_EQ(called, (std::vector<std::string>{"a", "bad", "cleanup"}));
  called.clear();
  EXPECT_EQ(run(a, Plan{"test", {{"runtime", runtime_error}, {"b", ok_b}}}), 1);
  EXPECT_EQ(called, (std::vector<std::string>{"runtime"}));
  called.clear();
  // All steps done: the exit code the last ones set.
  EXPECT_EQ(run(a, Plan{"test", {{"a", ok_a}, {"b", ok_b}}, cleanup}), 7);
  EXPECT_EQ(called, (std::vector<std::string>{"a", "b"}));
}

TEST(LoadConfig, OverridesAndTheDefaultOutput) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  Options o;
  o.config = dir.write("vigil.yaml", "hostname: node-1\n");
  o.overrides = {"hostname=node-2"};
  o.format = "text";
  Agent a(std::move(o));
  ASSERT_TRUE(steps::load_config(a));
  EXPECT_EQ(a.cfg["hostname"].as<std::string>(), "node-2");
  // No outputs: in the file: --format gives the stdout one.
  ASSERT_TRUE(a.cfg["outputs"].IsSequence());
  EXPECT_EQ(a.cfg["outputs"][0]["type"].as<std::string>(), "stdout");
  EXPECT_EQ(a.cfg["outputs"][0]["format"].as<std::string>(), "text");
}

// The posture is read before the loop runs (the ready line's summary) and
// its source joins the runner; posture.enabled: false leaves both out.
TEST(CheckPosture, ReadsTheHostRootAndAddsItsSource) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  dir.write("host/sys/module/nvidia/version", "460.27.04\n");
  Options o;
  o.config = dir.write("vigil.yaml", "posture: {host_root: " + dir.path() + "/host, interval_s: 5}\n");
  Agent a(std::move(o));
  ASSERT_TRUE(steps::start_loop(a));
  ASSERT_TRUE(steps::load_config(a));
  ASSERT_TRUE(steps::check_posture(a));
  ASSERT_NE(a.posture, nullptr);
  EXPECT_EQ(a.posture->get()->driver_version, "460.27.04");
  EXPECT_EQ(a.posture_summary.rfind("driver 460.27.04 (CVE-2021-1056), toolkit unknown", 0), 0u) << a.posture_summary;

  Options off;
  off.overrides = {"posture.enabled=false"};
  Agent b(std::move(off));
  ASSERT_TRUE(steps::start_loop(b));
  ASSERT_TRUE(steps::load_config(b));
  ASSERT_TRUE(steps::check_posture(b));
  EXPECT_EQ(b.posture, nullptr);
}

TEST(LoadConfig, ABadOverrideIsBadInputNamingIt) {
  Options o;
  o.overrides = {"no_equals_sign"};
  Agent a(std::move(o));
  Status s = steps::load_config(a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(s.error().message.find("no_equals_sign"), std::string::npos) << s.error().message;

  Options unknown;
  unknown.overrides = {"sensor.no_such_key=1"};
  Agent b(std::move(unknown));
  s = steps::load_config(b);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(s.error().message.find("sensor.no_such_key"), std::string::npos) << s.error().message;
}

std::string exec_rule(const std::string& name, const std::string& field = "proc.name") {
  return "- rule: " + name + "\n  desc: d\n  priority: WARNING\n  condition: evt.type = execve and " + field +
         " = x\n  output: o\n";
}

// An agent of `vigil run` over one rule file, configuration loaded.
Options run_options(const support::TempDir& dir, const std::string& rules) {
  Options o;
  o.rules = {rules};
  o.overrides = {"state_dir=" + dir.path()};
  return o;
}

TEST(LoadRules, NoEnabledRuleIsRefusedUnlessAllowed) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rules = dir.write("rules.yaml", exec_rule("typo", "proc.nmae"));
  {
    Agent a(run_options(dir, rules));
    ASSERT_TRUE(steps::load_config(a));
    Status s = steps::load_rules(a);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
    EXPECT_EQ(s.error().message, "rules from " + rules +
                                     ": no enabled rule (1 skipped): vigil would detect nothing "
                                     "(--allow-no-rules runs anyway)");
    EXPECT_EQ(a.ruleset, nullptr);
  }
  Options allowed = run_options(dir, rules);
  allowed.allow_no_rules = true;
  Agent a(std::move(allowed));
  ASSERT_TRUE(steps::load_config(a));
  ASSERT_TRUE(steps::load_rules(a));
  ASSERT_NE(a.ruleset, nullptr);
  EXPECT_EQ(a.enabled_in_force, 0u);
  EXPECT_EQ(a.rules_in_force.get().skipped, 1u);
}

TEST(LoadRules, ABrokenFileIsBadInput) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  Agent a(run_options(dir, dir.write("rules.yaml", "- rule: [unclosed\n")));
  ASSERT_TRUE(steps::load_config(a));
  Status s = steps::load_rules(a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
}

// The alerts `rs` raises for an exec in a pod's container (test_util.h's world).
std::vector<event::Alert> exec_alerts(const rules::Ruleset& rs) {
  rules::testing::World w;
  w.proc.comm = "x";
  w.exec();
  std::vector<event::Alert> out;
  rs.evaluate(w.ctx(), out);
  return out;
}

// Falco's default append_output (no key in the configuration): every alert
// names its container and pod; the configuration's own replaces it.
TEST(LoadRules, AppendOutputIsFalcosDefaultOrTheConfigurations) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rules = dir.write("rules.yaml", exec_rule("one"));
  {
    Agent a(run_options(dir, rules));
    ASSERT_TRUE(steps::load_config(a));
    ASSERT_TRUE(steps::load_rules(a));
    auto out = exec_alerts(*a.ruleset);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].output,
              "o container_id=3f1c0d2e9a7b container_name=trainer container_image_repository=ghcr.io/acme/train "
              "container_image_tag=1.4 k8s_pod_name=train-0 k8s_ns_name=ml k8s_meta=complete");
  }
  Options o = run_options(dir, rules);
  o.config = dir.write("vigil.yaml", "append_output:\n  - extra_output: 'on %proc.name'\n");
  Agent a(std::move(o));
  ASSERT_TRUE(steps::load_config(a));
  ASSERT_TRUE(steps::load_rules(a));
  auto out = exec_alerts(*a.ruleset);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "o on x");
}

TEST(LoadRules, AnAppendOutputFieldNoOneHasIsBadInputNamingItsPlace) {
  support::TempDir dir;
  ASSERT_TRUE(dir.ok());
  Options o = run_options(dir, dir.write("rules.yaml", exec_rule("one")));
  o.config = dir.write("vigil.yaml", "append_output:\n  - extra_fields: [proc.nmae]\n");
  Agent a(std::move(o));
  ASSERT_TRUE(steps::load_config(a));  // the shape is right; the field is checked with the rules' fields
  Status s = steps::load_rules(a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
  EXPECT_EQ(s.error().message, a.opts.config +
                                   ":2:20: append_output[0].extra_fields[0]: unknown field 'proc.nmae' (`vigil "
                                   "fields` lists them)");
  EXPECT_EQ(a.ruleset, nullptr);
}

// An agent of `vigil run` up to its outputs, the reload's inputs.
class Reload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir.ok());
    rules = dir.write("rules.yaml", exec_rule("one"));
    a = std::make_unique<Agent>(run_options(dir, rules));
    ASSERT_TRUE(steps::load_config(*a));
    ASSERT_TRUE(steps::load_rules(*a));
    ASSERT_TRUE(steps::start_outputs(*a));
    ASSERT_EQ(a->enabled_in_force, 1u);
  }
  support::TempDir dir;
  std::string rules;
  std::unique_ptr<Agent> a;
  std::atomic<bool> cancel{false};
};

TEST_F(Reload, ABrokenFileChangesNothing) {
  const auto before = a->ruleset;
  dir.write("rules.yaml", "- rule: [unclosed\n");
  auto r = steps::reload(*a, cancel);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, Error::Kind::kBadInput);
  EXPECT_EQ(a->ruleset, before);
  EXPECT_EQ(a->enabled_in_force, 1u);
  EXPECT_EQ(a->rules_in_force.get().loaded, 1u);
}

TEST_F(Reload, TheNewSetIsInForceOnlyAfterTheCommit) {
  dir.write("rules.yaml", exec_rule("one") + exec_rule("two"));
  auto r = steps::reload(*a, cancel);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rules->enabled_count(), 2u);
  EXPECT_EQ(r->summary.rfind("outputs: ", 0), 0u) << r->summary;
  EXPECT_EQ(a->enabled_in_force, 1u);  // prepared, not yet in force
  r->commit();
  EXPECT_EQ(a->enabled_in_force, 2u);
  EXPECT_EQ(a->rules_in_force.get().loaded, 2u);
}

TEST_F(Reload, SkipsThatLoseTooManyRulesKeepTheOldSet) {
  std::string four;
  for (int i = 0; i < 4; ++i) four += exec_rule("r" + std::to_string(i));
  dir.write("rules.yaml", four);
  auto r = steps::reload(*a, cancel);
  ASSERT_TRUE(r) << r.error().message;
  r->commit();
  ASSERT_EQ(a->enabled_in_force, 4u);
  // Three of the four skipped (a typo'd field): 75% lost, over the default 50%.
  std::string one = exec_rule("r0");
  for (int i = 1; i < 4; ++i) one += exec_rule("r" + std::to_string(i), "proc.nmae");
  dir.write("rules.yaml", one);
  r = steps::reload(*a, cancel);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "3 rules skipped: 1 enabled rules instead of 4, more than 50% fewer (--max-skipped-rules)");
  EXPECT_EQ(a->enabled_in_force, 4u);
}

// append_output reloads with the rules: a change is in force after the
// commit, a bad one keeps the rules in force.
TEST_F(Reload, AppendOutputChangesWithTheRules) {
  a->opts.config = dir.write("vigil.yaml", "append_output:\n  - extra_output: 'first'\n");
  auto r = steps::reload(*a, cancel);
  ASSERT_TRUE(r) << r.error().message;
  auto out = exec_alerts(*r->rules);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "o first");
  r->commit();
  dir.write("vigil.yaml", "append_output:\n  - extra_output: '%nope.field'\n");
  r = steps::reload(*a, cancel);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            a->opts.config +
                ":2:19: append_output[0].extra_output: unknown field 'nope.field' (`vigil fields` lists "
                "them)");
}

}  // namespace
}  // namespace vigil::agent
