// A deterministic text of a YAML value, for "did this part of a
// configuration change?": mappings sorted by key, every scalar
// length-prefixed, so that two values that differ only in key order,
// quoting, comments or layout give the same text.
//
//   canonical_yaml(YAML::Load("{b: 1, a: '2'}")) == canonical_yaml(YAML::Load("a: 2\nb: 1"))
//
// Not meant to be read, nor parsed back. Reentrant.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace vigil {

// An absent or null value gives "~".
std::string canonical_yaml(const YAML::Node& n);

}  // namespace vigil
