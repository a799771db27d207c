// The rule-test runner behind `vigil rules test` (format: docs/rules-testing.md).
// Each test feeds synthetic events with their process, parents, container and
// pod through a real state::State (Config{.live = false}) and the same
// pipeline::Pipeline as `vigil run` (so the step order is the pipeline's),
// then checks which rules fired and what they printed. It lives in
// engine/runtime, not engine/rules, because it drives the pipeline, which sits
// above the rules library.
//
// Thread-safety: run_rule_tests() is reentrant; it shares nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/rules/diagnostic.h"

namespace vigil::runtime {

using rules::Diagnostic;
using rules::Severity;

struct RuleTestFailure {
  std::string file;
  int line = 0;  // of the test (or the event, for per-event expectations)
  std::string test;
  std::string message;
  std::string to_string() const;  // "file:line: test 'name': message"
};

struct RuleTestReport {
  std::size_t tests = 0, passed = 0, failed = 0;
  std::vector<Diagnostic> problems;  // invalid test files, rule load errors
  std::vector<RuleTestFailure> failures;
  bool invalid() const;  // some file could not be run at all
  // 0 every test passed, 2 a test file (or its rules) is invalid, 1 a test failed.
  int exit_code() const;
};

RuleTestReport run_rule_tests(const std::vector<std::string>& files);

}  // namespace vigil::runtime
