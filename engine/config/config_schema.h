// The configuration's one schema: every key vigil reads from `-c FILE` and
// `-o KEY=VALUE`, its type and its range. load_config() checks the whole
// configuration against it (files and overrides alike) before any section is
// read, and get_or() checks each value it reads against the same entry, so a
// section reader cannot accept what the check refuses. docs/install.md lists
// the same keys; a key added here goes there too.
//
// Unknown keys are errors at every level (a typo must not silently turn a
// setting off). The `outputs:` entries are checked by outputs::parse_outputs
// (their keys depend on the type); `plugins:` entries here, and their
// declarations further by plugin::parse_config; `append_output:` entries by
// rules::parse_append_output (their fields when the rules load, once the
// plugins' fields are known).
#pragma once

#include <yaml-cpp/yaml.h>

#include <span>
#include <string>
#include <string_view>

#include "engine/util/config_origin.h"
#include "engine/util/result.h"

namespace vigil::config {

enum class ValueKind {
  kString,        // a scalar; `non_empty` when "" is refused
  kBool,          // true/false (yes/no, on/off)
  kUint,          // a decimal whole number in [min, max]
  kNumber,        // a decimal number in [min, max]
  kPriority,      // an alert priority name (Critical, warning, ...)
  kPaths,         // a path or a list of paths
  kNames,         // a list of names
  kSection,       // a mapping of the keys below it
  kOutputs,       // the outputs: list (outputs::parse_outputs)
  kPlugins,       // the plugins: list of {name, library_path, init_config}
  kAppendOutput,  // the append_output: list (rules::parse_append_output)
};

struct KeySpec {
  std::string_view path;  // dotted, from the root: "sensor.ringbuf_mib"
  ValueKind kind;
  double min = 0;
  double max = 0;
  bool power_of_two = false;
  bool non_empty = false;
};

// Every key, sections before their keys.
std::span<const KeySpec> config_schema();
// The entry of a dotted key path; nullptr when the schema has none.
const KeySpec* find_key(std::string_view dotted);

// Checks one value against its entry: the reason it is refused ("expected a
// whole number from 1 to 1024, got 'abc'") as Error::bad_input, without a
// position. A null value means "the default" and passes.
Status check_value(const KeySpec& spec, const YAML::Node& value);

// Checks a whole configuration (the file with its overrides applied):
// every key known, every value of its type and in its range, the outputs
// and plugins entries well-formed. The first error names where the value
// came from (FILE:LINE:COL or -o KEY=VALUE), the key path and the reason.
Status check_config(const YAML::Node& root, const ConfigOrigin& origin);

}  // namespace vigil::config
