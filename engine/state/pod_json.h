// A v1.Pod of the Kubernetes API (JSON) → the State's Pod model. Container
// ids lose their runtime prefix ("containerd://"); strings, maps and lists are
// bounded; annotations with huge values (last-applied-configuration) are
// skipped; wrong types are ignored, never thrown.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::state {

// A Pod from the JSON text of a v1.Pod (at most 4 MiB).
Result<Pod> parse_pod_json(std::string_view json);
// The same from an already parsed v1.Pod (a LIST item, a WATCH event's object).
Result<Pod> pod_from_json(const nlohmann::json& pod);

// obj[key] when obj is an object that has it, else nullptr.
const nlohmann::json* json_member(const nlohmann::json& obj, const char* key);
// obj[key] when it is a string (cut to 4096 bytes), else "".
std::string json_string(const nlohmann::json& obj, const char* key);

}  // namespace vigil::state
