// The rule-test runner behind `vigil rules test` (format: docs/rules-testing.md).
// Each test feeds synthetic events with their process, parents, container and
// pod through a real state::State (Config{.live = false}) and the compiled
// rules, then checks which rules fired and what they printed.
//
// Thread-safety: run_rule_tests() is reentrant; it shares nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/rules/diagnostic.h"

namespace vigil::rules {

struct RuleTestFailure {
  std::string file;
  int line = 0;          // of the test (or the event, for per-event expectations)
  std::string test;
  std::string message;
  std::string to_string() const;  // "file:line: test 'name': message"
};

struct RuleTestReport {
  std::size_t tests = 0, passed = 0, failed = 0;
  std::vector<Diagnostic> problems;        // invalid test files, rule load errors
  std::vector<RuleTestFailure> failures;
  bool invalid() const;                    // some file could not be run at all
  // 0 every test passed, 2 a test file (or its rules) is invalid, 1 a test failed.
  int exit_code() const;
};

// Runs the tests of each path: a test file, or a directory, whose *.yaml and
// *.yml files run in name order (rule_files.h; the rule as for `-r`). A
// missing path or a directory without test files is a problem (exit code 2);
// the other files still run.
RuleTestReport run_rule_tests(const std::vector<std::string>& paths);

}  // namespace vigil::rules
