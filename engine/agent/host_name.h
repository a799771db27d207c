// The name this host goes by in alerts, heartbeats and capture headers.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace vigil::agent {

// `hostname:` in the configuration, else the node name, else gethostname().
std::string host_name(const YAML::Node& cfg);

}  // namespace vigil::agent
