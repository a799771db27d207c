// The agent's configuration file (`vigil run -c FILE`) and `-o key=value`
// overrides. The file is YAML; each component reads its own section
// (`outputs:`, `k8s:`, `sensor:`, `flight_recorder:`, `rules:`). docs/install.md
// documents every key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "engine/util/result.h"

namespace vigil::cli {

// Reads and parses FILE; "" gives an empty map. Errors name the file, line
// and column (Error::bad_input).
Result<YAML::Node> load_config(const std::string& path);

// Applies "a.b.0.c=value": dotted keys, numeric parts index sequences (one
// past the end appends). The value is parsed as YAML, so `true`, `42` and
// `[a, b]` keep their types. Errors say what is wrong with the override.
Status apply_override(YAML::Node& root, std::string_view key_eq_value);

// Reads a key path ("sensor.payload_bytes") with a default; a value of the
// wrong type is an error naming the key.
template <typename T>
Result<T> get_or(const YAML::Node& root, std::string_view dotted, T def);

}  // namespace vigil::cli

#include "engine/cli/config_inl.h"
