#include "engine/util/yaml_gate.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/rules/ruleset.h"

namespace vigil {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(YamlGate, AcceptsWellFormedYaml) {
  YamlSyntaxError e;
  EXPECT_TRUE(yaml_syntax_ok("- rule: a\n  condition: evt.type = execve\n", &e));
  EXPECT_TRUE(yaml_syntax_ok("", &e));
  EXPECT_TRUE(yaml_syntax_ok(read("rules/vigil_rules.yaml"), &e)) << e.message;
}

TEST(YamlGate, NamesLineAndColumnOfTheProblem) {
  YamlSyntaxError e;
  ASSERT_FALSE(yaml_syntax_ok("- a: 1\n- b: [1, 2\n", &e));
  EXPECT_EQ(e.line, 3);
  EXPECT_FALSE(e.message.empty());
}

TEST(YamlGate, BoundsTheWork) {
  YamlSyntaxError e;
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "- x\n";
  EXPECT_FALSE(yaml_syntax_ok(many, &e, 100));
  EXPECT_NE(e.message.find("too many"), std::string::npos);
}

// Issue 16, item 6: 100k nested collections made libyaml's scanner (work
// proportional to the flow depth for every token) and yaml-cpp (recursive)
// run for 15 s. The gate refuses the first collection past kYamlMaxDepth and
// reads no further than the scanner's bounded look-ahead.
TEST(YamlGate, RefusesDeepNestingAtTheFirstLevelPastTheLimit) {
  struct Case {
    std::string name, text;
    int line, column;
  };
  const std::size_t n = 100000;
  std::string block;  // "- - - ...": block sequences, one level per two characters
  for (std::size_t i = 0; i < n; ++i) block += "- ";
  block += "x\n";
  std::string indented;  // mappings nested by indentation, one per line
  for (std::size_t i = 0; i < 200; ++i) indented += std::string(i, ' ') + "k:\n";
  const std::vector<Case> cases = {
      {"flow sequences", std::string(n, '['), 1, 65},
      {"flow mappings", std::string(n, '{'), 1, 65},
      {"flow mappings with keys",
       "a: " +
           [&] {
             std::string s;
             for (std::size_t i = 0; i < n; ++i) s += "{a: ";
             return s;
           }(),
       1, 4 + 4 * 63},
      {"block sequences", block, 1, 129},
      {"indented mappings", indented, 65, 65},
  };
  for (const Case& c : cases) {
    YamlSyntaxError e;
    ASSERT_FALSE(yaml_syntax_ok(c.text, &e)) << c.name;
    EXPECT_EQ(e.line, c.line) << c.name;
    EXPECT_EQ(e.column, c.column) << c.name;
    EXPECT_EQ(e.message, "nested deeper than " + std::to_string(kYamlMaxDepth) + " levels (the limit)") << c.name;
    // The work done: the scanner stopped within its look-ahead (1024
    // characters on a line) of the refused level, not at the end of the input.
    EXPECT_LT(e.scanned, 4096u) << c.name << ": " << e.scanned << " of " << c.text.size();
  }
}

TEST(YamlGate, AcceptsNestingUpToTheLimit) {
  YamlSyntaxError e;
  std::string ok = std::string(kYamlMaxDepth, '[') + std::string(kYamlMaxDepth, ']');
  EXPECT_TRUE(yaml_syntax_ok(ok, &e)) << e.message;
  std::string deeper = "[" + ok + "]";
  EXPECT_FALSE(yaml_syntax_ok(deeper, &e));
  // Depth, not the number of collections: many shallow ones are fine.
  std::string wide;
  for (int i = 0; i < 10000; ++i) wide += "- [[1], {a: [2]}]\n";
  EXPECT_TRUE(yaml_syntax_ok(wide, &e)) << e.message;
}

// The limit leaves room: the rule files and rule tests shipped with vigil and
// Falco's stock rule files (when ../shared/falco-rules or
// $VIGIL_FALCO_RULES_DIR has them) nest at most 12 deep, far under
// kYamlMaxDepth.
TEST(YamlGate, ShippedAndStockRuleFilesAreWellUnderTheDepthLimit) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  const char* falco = std::getenv("VIGIL_FALCO_RULES_DIR");
  std::error_code ec;
  for (const std::string& dir :
       {std::string("rules"), std::string("rules/tests"), std::string(falco ? falco : "../shared/falco-rules")}) {
    for (const auto& ent : fs::directory_iterator(dir, ec)) {
      if (ent.path().extension() == ".yaml") files.push_back(ent.path().string());
    }
  }
  ASSERT_GE(files.size(), 2u);
  for (const std::string& f : files) {
    YamlSyntaxError e;
    const std::string text = read(f);
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_TRUE(yaml_syntax_ok(text, &e, 4000000, 12)) << f << ": " << e.message;
  }
}

// Regression: this input made yaml-cpp 0.7 allocate until the machine ran out
// of memory (found by fuzzing the rules loader). It must be refused at once.
TEST(YamlGate, RuleFileThatMadeYamlCppLoopIsRefusedWithItsPosition) {
  const std::string text = read("tests/fuzz/rules_yaml_corpus/yaml_cpp_loop.yaml");
  ASSERT_FALSE(text.empty());
  rules::LoadResult r = rules::load_rules_text({{"loop.yaml", text}}, rules::LoadOptions{});
  EXPECT_FALSE(r.ruleset);
  ASSERT_EQ(r.errors, 1u);
  EXPECT_EQ(r.diagnostics.at(0).line, 1);
  EXPECT_NE(r.diagnostics.at(0).to_string().find("loop.yaml:1:1"), std::string::npos)
      << r.diagnostics.at(0).to_string();
}

}  // namespace
}  // namespace vigil
