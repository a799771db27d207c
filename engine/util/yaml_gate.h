// A syntax check of YAML text with libyaml before yaml-cpp builds nodes.
//
// yaml-cpp 0.7 (Debian 12) can loop, allocating without bound, on some
// malformed inputs (fuzzing found one: a flow entry at the start of a
// document). libyaml is a small, heavily fuzzed C parser that rejects such
// input at once and names the position, so every YAML file vigil reads from
// an untrusted place (rule files, rule tests, configuration) passes through
// this gate first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vigil {

struct YamlSyntaxError {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
  std::string message;  // libyaml's problem and context, e.g. "did not find expected node content"
};

// Parses `text` into events (nothing is kept). Returns true when it is
// well-formed YAML; otherwise fills `err`. max_events bounds the work (a
// stream of more events than that is refused as too large).
bool yaml_syntax_ok(std::string_view text, YamlSyntaxError* err, std::size_t max_events = 4000000);

}  // namespace vigil
