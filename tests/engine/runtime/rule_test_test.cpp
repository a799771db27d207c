// The rule-test runner (vigil rules test) against small fixtures: passing,
// failing and invalid test files.
#include <gtest/gtest.h>

#include "engine/runtime/rule_test.h"

namespace vigil::runtime {
namespace {

const std::string kDir = "tests/engine/rules/fixtures/";

TEST(RuleTestRunner, PassingFile) {
  auto rep = run_rule_tests({kDir + "mini_test.yaml"});
  for (const auto& p : rep.problems) ADD_FAILURE() << p.to_string();
  for (const auto& f : rep.failures) ADD_FAILURE() << f.to_string();
  EXPECT_EQ(rep.tests, 5u);
  EXPECT_EQ(rep.passed, 5u);
  EXPECT_EQ(rep.exit_code(), 0);
}

TEST(RuleTestRunner, FailuresNameFileLineAndTest) {
  auto rep = run_rule_tests({kDir + "failing_test.yaml"});
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(rep.tests, 3u);
  EXPECT_EQ(rep.passed, 1u);
  EXPECT_EQ(rep.failed, 2u);
  EXPECT_EQ(rep.exit_code(), 1);
  ASSERT_EQ(rep.failures.size(), 2u);
  EXPECT_EQ(
      rep.failures[0].to_string(),
      kDir +
          "failing_test.yaml:4: test 'expects a rule that does not fire': expected 'Shell in pod' to fire; fired: none");
  EXPECT_EQ(rep.failures[1].to_string(),
            kDir +
                "failing_test.yaml:10: test 'wrong output text': output of 'Shell in pod' differs:\n"
                "  expected: something else\n"
                "  got:      Shell in pod (pid=4242 name=bash parent=<NA> pod=inference/serve-0)");
}

TEST(RuleTestRunner, InvalidFileExitsTwo) {
  auto rep = run_rule_tests({kDir + "invalid_test.yaml"});
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_EQ(rep.problems[0].to_string(), kDir + "invalid_test.yaml:7:15: error E003: unknown event type 'teleport'");
  EXPECT_EQ(rep.exit_code(), 2);
  rep = run_rule_tests({kDir + "does_not_exist.yaml"});
  EXPECT_EQ(rep.exit_code(), 2);
}

TEST(RuleTestRunner, BundledRuleTestsPass) {
  // Every bundled rule ships with tests in this format; they must pass.
  std::vector<std::string> files;
  for (const char* f : {"crypto_mining_test.yaml", "egress_test.yaml", "gpu_device_access_test.yaml",
                        "gpu_xid_test.yaml", "inference_shell_test.yaml", "tamper_test.yaml",
                        "nvidia_driver_surface_test.yaml", "nvidia_driver_tuning_test.yaml", "gpu_posture_test.yaml"}) {
    files.push_back(std::string("rules/tests/") + f);
  }
  auto rep = run_rule_tests(files);
  for (const auto& p : rep.problems) ADD_FAILURE() << p.to_string();
  for (const auto& f : rep.failures) ADD_FAILURE() << f.to_string();
  EXPECT_GT(rep.tests, 0u);
}

}  // namespace
}  // namespace vigil::runtime
