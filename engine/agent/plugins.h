// The plugins of a configuration file, for the commands that take `-c`:
// run, capture and replay load and start them; `rules validate|list|test` and
// `fields` load them for their fields and sources.
#pragma once

#include <memory>
#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/plugin/host.h"
#include "engine/util/result.h"

namespace spdlog {
class logger;
}

namespace vigil::agent {

// Loads the plugins `load_plugins` chooses (none: an empty host), and runs
// their init when `init` is set. Errors: bad input (exit 2) for the
// configuration, a library or its ABI; runtime (exit 1) for a failed init.
Result<std::unique_ptr<plugin::Host>> load_plugins(const YAML::Node& cfg, const std::string& config_path,
                                                   std::shared_ptr<spdlog::logger> log, bool init);

}  // namespace vigil::agent
