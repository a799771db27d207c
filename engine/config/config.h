// The agent's configuration file (`vigil run -c FILE`) and `-o key=value`
// overrides. The file is YAML; each component reads its own section
// (`outputs:`, `k8s:`, `sensor:`, `flight_recorder:`, `rules:`). docs/install.md
// documents every key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "engine/util/config_origin.h"
#include "engine/util/result.h"

namespace vigil::config {

// Reads and parses FILE ("" gives an empty map), applies the -o KEY=VALUE
// overrides in order, then checks the result against the schema
// (config_schema.h). Errors (Error::bad_input) name where the value came
// from, FILE:LINE:COL or the -o, and the key's path:
//   "vigil.yaml:3:3: sensor.ringbuff_mib: unknown key (known: ...)"
//   "-o sensor.ringbuf_mib=abc: sensor.ringbuf_mib: expected a whole number ..."
Result<YAML::Node> load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// Where the values of load_config(path, overrides) came from, for errors a
// section reader finds later (append_output's fields, once the rules' field
// catalogue is known).
ConfigOrigin config_origin(const std::string& path, const std::vector<std::string>& overrides = {});

// Applies "a.b.0.c=value": dotted keys, numeric parts index sequences (one
// past the end appends). The value is parsed as YAML, so `true`, `42` and
// `[a, b]` keep their types. Errors say what is wrong with the override.
// The result is not checked against the schema: load_config() does that.
Status apply_override(YAML::Node& root, std::string_view key_eq_value);

// The keys whose values differ between two configurations, top-level keys
// in `skip` left out: a section's keys one by one ("sensor.ringbuf_mib",
// "k8s.api"), any other key by itself ("state_dir", "plugins"). Values are
// compared canonically (key order, quoting and layout do not count). A
// reload uses it to name what it cannot apply live.
std::vector<std::string> changed_keys(const YAML::Node& before, const YAML::Node& after,
                                      const std::vector<std::string>& skip);

// Reads a key path ("sensor.payload_bytes") with a default (for absent and
// null values). A key the schema has is checked against its entry (type and
// range) first; a value that fails, or does not convert to T, is an error
// naming the key.
template <typename T>
Result<T> get_or(const YAML::Node& root, std::string_view dotted, T def);

}  // namespace vigil::config

#include "engine/config/config_inl.h"
