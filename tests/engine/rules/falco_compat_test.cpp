// Falco's stock rule files load with zero errors, and the number of rules
// that load does not go down (docs/falco-compatibility.md has the lists).
// The files live outside the repository (../shared/falco-rules, or
// $VIGIL_FALCO_RULES_DIR); the tests skip with a message when they are absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

std::string falco_dir() {
  const char* env = std::getenv("VIGIL_FALCO_RULES_DIR");
  return env ? env : "../shared/falco-rules";
}

struct Counts {
  LoadResult r;
  std::set<std::string> skipped;  // rule names with a W003/W004 warning
};

Counts load(const std::string& file) {
  Counts c;
  c.r = load_rules({falco_dir() + "/" + file}, LoadOptions{});
  for (const auto& d : c.r.diagnostics) {
    if (d.code == "W003" || d.code == "W004") c.skipped.insert(d.item);
  }
  return c;
}

#define REQUIRE_FALCO_FILE(f)                                                              \
  if (!std::filesystem::exists(falco_dir() + "/" + (f))) {                                 \
    GTEST_SKIP() << "Falco's stock rules not found in " << falco_dir()                     \
                 << " (set VIGIL_FALCO_RULES_DIR)";                                       \
  }

TEST(FalcoCompat, StableRules) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_TRUE(c.r.ruleset);
  EXPECT_GE(c.r.loaded, 21u);
  EXPECT_LE(c.r.skipped, 4u);
  EXPECT_EQ(c.r.loaded + c.r.skipped, 25u);
  // Skipped only for fields of events vigil does not collect, each named.
  EXPECT_EQ(c.skipped, (std::set<std::string>{
                           "rule 'Linux Kernel Module Injection Detected'",
                           "rule 'Detect release_agent File Container Escapes'",
                           "rule 'Drop and execute new binary in container'",
                           "rule 'Fileless execution via memfd_create'"}));
  for (const auto& d : c.r.diagnostics) {
    if (d.code == "W003") EXPECT_NE(d.message.find("unknown field "), std::string::npos) << d.to_string();
  }
}

TEST(FalcoCompat, IncubatingRules) {
  REQUIRE_FALCO_FILE("falco-incubating_rules.yaml");
  auto c = load("falco-incubating_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_GE(c.r.loaded, 26u);
  EXPECT_EQ(c.r.loaded + c.r.skipped, 31u);
}

TEST(FalcoCompat, SandboxRules) {
  REQUIRE_FALCO_FILE("falco-sandbox_rules.yaml");
  auto c = load("falco-sandbox_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_GE(c.r.loaded, 34u);
  EXPECT_EQ(c.r.loaded + c.r.skipped, 37u);
}

TEST(FalcoCompat, StableRulesFireOnVigilEvents) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  ASSERT_TRUE(c.r.ruleset);
  // The compiled stock rules watch what vigil collects.
  auto types = c.r.ruleset->event_types();
  EXPECT_TRUE(types.count(event::Type::kExec));
  EXPECT_TRUE(types.count(event::Type::kOpen));
  EXPECT_TRUE(types.count(event::Type::kConnect));
}

TEST(FalcoCompat, TerminalShellInContainerFires) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  ASSERT_TRUE(c.r.ruleset);
  testing::World w;
  w.proc.comm = "bash";
  w.proc.exe = "bash";
  w.proc.exepath = "/bin/bash";
  w.proc.args = {};
  w.proc.tty = 34816;
  w.proc.ppid = 1;  // started by the runtime's shim: a container entrypoint
  w.ev.hdr.ppid = 1;
  w.exec();
  std::vector<event::Alert> out;
  c.r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rule, "Terminal shell in container");
  EXPECT_EQ(out[0].priority, event::Priority::kNotice);
  EXPECT_NE(out[0].output.find("process=bash"), std::string::npos) << out[0].output;
  // Without a terminal it does not fire.
  w.proc.tty = 0;
  out.clear();
  c.r.ruleset->evaluate(w.ctx(), out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace vigil::rules
