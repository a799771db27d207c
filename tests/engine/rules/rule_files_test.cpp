// Which files a list of rule paths names (`-r`, `rules validate|list|test`).
#include "engine/rules/rule_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/runtime/rule_test.h"
#include "tests/support/temp_dir.h"

namespace vigil::rules {
namespace {

using support::TempDir;

TEST(RuleFiles, DirectoriesGiveTheirYamlFilesSortedByName) {
  TempDir dir;
  dir.write("b.yml", "");
  dir.write("a.yaml", "");
  dir.write("c.YAML.txt", "");
  dir.write("notes.txt", "");
  dir.write("sub/d.yaml", "");
  ASSERT_EQ(::mkdir((dir.path() + "/e.yaml").c_str(), 0700), 0);  // a directory named like a file
  const std::string single = dir.write("sub/explicit.rules", "");
  Diagnostics d;
  YamlFiles f = expand_yaml_paths({dir.path(), single}, d);
  EXPECT_TRUE(d.all().empty());
  EXPECT_EQ(f.files, (std::vector<std::string>{dir.path() + "/a.yaml", dir.path() + "/b.yml", single}))
      << "a file given by name is taken whatever its extension";
  EXPECT_TRUE(f.empty_dirs.empty());
}

TEST(RuleFiles, ADirectoryOfRulesAndTheirTestsGivesEachCommandItsKind) {
  TempDir dir;
  dir.write("gpu_rules.yaml", "");
  dir.write("gpu_rules_test.yaml", "");
  dir.write("more_test.yml", "");
  dir.write("_test.yaml", "");  // no name before the suffix: a rule file
  const std::string tests_only = dir.write("tests/only_test.yaml", "");
  Diagnostics d;
  YamlFiles rules = expand_yaml_paths({dir.path()}, d);
  EXPECT_EQ(rules.files, (std::vector<std::string>{dir.path() + "/_test.yaml", dir.path() + "/gpu_rules.yaml"}));
  YamlFiles tests = expand_yaml_paths({dir.path()}, d, YamlKind::kRuleTests);
  EXPECT_EQ(tests.files,
            (std::vector<std::string>{dir.path() + "/gpu_rules_test.yaml", dir.path() + "/more_test.yml"}));
  // A directory of tests alone holds no rules; a file named on its own is taken as given.
  YamlFiles none = expand_yaml_paths({dir.path() + "/tests", tests_only}, d);
  EXPECT_EQ(none.empty_dirs, std::vector<std::string>{dir.path() + "/tests"});
  EXPECT_EQ(none.files, std::vector<std::string>{tests_only});
  EXPECT_TRUE(d.all().empty());
  EXPECT_TRUE(is_rule_test_name("a/b/x_test.yml"));
  EXPECT_FALSE(is_rule_test_name("a/b/x_test.json"));
  EXPECT_FALSE(is_rule_test_name("a/b_test/x.yaml"));
}

TEST(RuleFiles, MissingPathsAndEmptyDirectoriesAreReported) {
  TempDir dir;
  dir.write("empty/readme", "");
  Diagnostics d;
  YamlFiles f = expand_yaml_paths({dir.path() + "/nope.yaml", dir.path() + "/empty"}, d);
  EXPECT_TRUE(f.files.empty());
  EXPECT_EQ(f.empty_dirs, std::vector<std::string>{dir.path() + "/empty"});
  ASSERT_EQ(d.all().size(), 1u);
  EXPECT_EQ(d.all()[0].to_string(), dir.path() + "/nope.yaml: error E001: no such file or directory");
}

TEST(RuleFiles, UnlistableDirectoryIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root lists any directory; the mode check needs a user";
  TempDir dir;
  dir.write("locked/a.yaml", "");
  ASSERT_EQ(::chmod((dir.path() + "/locked").c_str(), 0), 0);
  Diagnostics d;
  YamlFiles f = expand_yaml_paths({dir.path() + "/locked"}, d);
  ::chmod((dir.path() + "/locked").c_str(), 0700);
  EXPECT_TRUE(f.files.empty());
  ASSERT_EQ(d.error_count(), 1u);
  EXPECT_NE(d.all()[0].message.find("cannot list directory"), std::string::npos);
}

TEST(RuleTestRunner, BundledTestsAsADirectoryRunEveryFile) {
  auto by_dir = runtime::run_rule_tests({"rules/tests"});
  for (const auto& p : by_dir.problems) ADD_FAILURE() << p.to_string();
  for (const auto& f : by_dir.failures) ADD_FAILURE() << f.to_string();
  Diagnostics d;
  auto files = expand_yaml_paths({"rules/tests"}, d, YamlKind::kRuleTests).files;
  ASSERT_GE(files.size(), 6u);
  auto by_file = runtime::run_rule_tests(files);
  EXPECT_EQ(by_dir.tests, by_file.tests);
  EXPECT_GT(by_dir.tests, 0u);
  EXPECT_EQ(by_dir.exit_code(), 0);
}

TEST(RuleTestRunner, EmptyDirectoryIsInvalidButOtherPathsStillRun) {
  TempDir dir;
  dir.write("empty/readme", "");
  auto rep = runtime::run_rule_tests({dir.path() + "/empty", "tests/engine/rules/fixtures/mini_test.yaml"});
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_EQ(rep.problems[0].to_string(),
            dir.path() + "/empty: error E001: no rule test files (*_test.yaml, *_test.yml) in this directory");
  EXPECT_EQ(rep.passed, 5u);
  EXPECT_EQ(rep.exit_code(), 2);
}

}  // namespace
}  // namespace vigil::rules
