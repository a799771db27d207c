// Forwarding header: the rule-test runner moved to engine/runtime/rule_test.h
// (it drives pipeline::Pipeline, which sits above the rules library). Kept
// only until engine/cli/rules_cmd.cpp includes the new header; delete it then.
#pragma once

#include "engine/runtime/rule_test.h"

namespace vigil::rules {
using runtime::RuleTestFailure;
using runtime::RuleTestReport;
using runtime::run_rule_tests;
}  // namespace vigil::rules
