// A syntax check of YAML text with libyaml before yaml-cpp builds nodes.
//
// yaml-cpp 0.7 (Debian 12) can loop, allocating without bound, on some
// malformed inputs (fuzzing found one: a flow entry at the start of a
// document). libyaml is a small, heavily fuzzed C parser that rejects such
// input at once and names the position, so every YAML file vigil reads from
// an untrusted place (rule files, rule tests, configuration) passes through
// this gate first.
//
// The gate also bounds the work: a document nested deeper than
// kYamlMaxDepth collections is refused at the first collection past the
// limit. libyaml's scanner does work proportional to the flow depth for every
// token (100k nested `[` took 15 s), and yaml-cpp builds nodes recursively;
// stopping at a small depth keeps both linear and the stack shallow. vigil's
// rule files, Falco's stock rules, configurations and kubeconfigs nest less
// than 12 deep.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vigil {

struct YamlSyntaxError {
  int line = 0;             // 1-based; 0 when unknown
  int column = 0;           // 1-based; 0 when unknown
  std::string message;      // libyaml's problem and context, e.g. "did not find expected node content"
  std::size_t scanned = 0;  // characters of the input the scanner had read when it stopped
};

// The deepest nesting of collections (sequences and mappings, block or
// flow) the gate accepts. docs/install.md and docs/rules.md state it.
inline constexpr std::size_t kYamlMaxDepth = 64;

// Parses `text` into events (nothing is kept). Returns true when it is
// well-formed YAML; otherwise fills `err`. max_events bounds the work (a
// stream of more events than that is refused as too large); max_depth bounds
// the nesting (the first collection deeper than that is refused, with its
// line and column). Time and memory are linear in the input up to these limits.
bool yaml_syntax_ok(std::string_view text, YamlSyntaxError* err, std::size_t max_events = 4000000,
                    std::size_t max_depth = kYamlMaxDepth);

}  // namespace vigil
