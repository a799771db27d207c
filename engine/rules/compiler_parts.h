// What the condition compiler's files share: compiler.cpp compiles a
// condition, or_chains.cpp rewrites its or-chains of string checks.
// Internal to engine/rules.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/rules/compiled.h"

namespace vigil::rules {

// One matcher for any of the literals: as a prefix, a suffix or anywhere.
// Null for fewer than two (the plain comparison is as fast).
std::unique_ptr<LiteralMatcher> literal_set(const std::vector<std::string>& lits, Op op);

// Or-chains of contains, startswith or endswith checks on one field: one
// check with a literal set.
void merge_contains(CNode& n);

// Or-chains of contains, icontains and prefiltered regex checks on one
// field: one check that scans the field once (LiteralScan).
void group_scans(CNode& n);

}  // namespace vigil::rules
