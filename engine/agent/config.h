// The agent's configuration, at start and at each reload: the file (-c) with
// the -o overrides applied in order, checked against the schema
// (engine/config/config.h), and the files a reload reads.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/util/result.h"

namespace vigil::agent {

struct Options;

// The configuration of `opts`: the file with the overrides and, when it has
// no outputs: and opts.format is set (run --format), a stdout output in that
// format. Bad input names the file's line or the override, and the key.
Result<YAML::Node> config_of(const Options& opts);

// The rules of vigil run: -r, else rules: from the configuration, else the
// bundled rules.
Result<std::vector<std::string>> run_rule_paths(const Options& opts, const YAML::Node& cfg);

// What a reload reads: the configuration file and the rule paths.
std::vector<std::string> watched_files(const Options& opts, const std::vector<std::string>& rule_paths);

}  // namespace vigil::agent
