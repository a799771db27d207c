// The rule-test file reader behind `vigil rules test` (format:
// docs/rules-testing.md): a test's process, parents, container and pod, its
// events and its expectations, from YAML to the values the runner
// (rule_test.cpp) feeds the pipeline. Processes read every fact of the process
// facts table by its name and event payloads every field of their fields()
// list, so a new fact or payload field is readable without a case here.
//
// Errors are thrown as BadTest (the node where the file is wrong and why);
// the runner turns them into diagnostics.
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/baseline/store.h"
#include "engine/event/event.h"
#include "engine/state/model.h"

namespace vigil::runtime::test_file {

struct BadTest {
  YAML::Mark mark;
  std::string message;
};
[[noreturn]] void bad(const YAML::Node& n, std::string msg);

// Scalars as the test files write them; bad() when they are not.
std::string scalar(const YAML::Node& n, const char* what);
std::uint64_t number(const YAML::Node& n, const char* what);  // decimal or 0x hex
std::int64_t signed_number(const YAML::Node& n, const char* what);
bool boolean(const YAML::Node& n, const char* what);
std::vector<std::string> strings(const YAML::Node& n, const char* what);  // a list, or one scalar

// A context (process, parents, container, pod) as YAML nodes: tests set it,
// events may override any part of it.
struct Context {
  YAML::Node process, parents, container, pod;
};

// The context read: the process, its parents (parents[0] its parent), and the
// container and pod it runs in.
struct Built {
  state::Process proc;
  std::vector<state::Process> parents;
  std::optional<state::Container> container;
  std::optional<state::Pod> pod;
};
Built build_context(const Context& c);

// Whether two processes hold the same facts (a test process need not be
// injected again).
bool same(const state::Process& a, const state::Process& b);

// `over`'s keys over `base`'s (an event's process over the test's).
YAML::Node merged(const YAML::Node& base, const YAML::Node& over);

// The event `n` describes, done by the context's process at `ts`.
event::Event make_event(const YAML::Node& n, const Built& b, std::uint64_t ts);

// `after: 30s`: the time since the previous event, in ns.
std::uint64_t after_ns(const YAML::Node& n);

// `baseline:` (the file's, then the test's keys over it): baselines on for
// the test, profiles in memory only; nullopt when off.
std::optional<baseline::Config> baseline_config(const YAML::Node& file_level, const YAML::Node& test_level);

struct Expectation {
  std::vector<std::string> fire, not_fire;
  std::map<std::string, std::string> output;  // rule: the text it prints
};
Expectation expectation(const YAML::Node& n);

}  // namespace vigil::runtime::test_file
