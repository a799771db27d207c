// vigil's own files and directories: what vigil.file judges, and the files
// the sensor's open filter takes as whole paths.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace vigil::agent {

// vigil's own files and directories, for vigil.file and the sensor's open
// filter: the configuration file, the rule paths, the state directory
// (output spools), the flight recorder's directory and `capture` (may be
// ""). Each as an absolute path, and also as its real path where a symlink
// (a ConfigMap's ..data link) makes that differ.
std::vector<std::string> own_paths(const std::string& config, const std::vector<std::string>& rules,
                                   const YAML::Node& cfg, const std::string& capture);

// The files among them that the sensor's open filter takes as whole paths:
// the configuration file, the rule files (those a rule directory holds,
// *.yaml and *.yml) and the capture file, absolute and real.
std::vector<std::string> own_files(const std::string& config, const std::vector<std::string>& rules,
                                   const std::string& capture);

}  // namespace vigil::agent
