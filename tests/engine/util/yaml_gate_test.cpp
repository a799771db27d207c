#include "engine/util/yaml_gate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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
