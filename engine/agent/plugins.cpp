#include "engine/agent/plugins.h"

#include <spdlog/spdlog.h>

namespace vigil::agent {

Result<std::unique_ptr<plugin::Host>> load_plugins(const YAML::Node& cfg, const std::string& config_path,
                                                   std::shared_ptr<spdlog::logger> log, bool init) {
  auto specs = plugin::parse_config(cfg, config_path);
  if (!specs) return specs.error();
  auto host = plugin::Host::load(*specs, log);
  if (!host) return host.error();
  if (init) {
    if (Status s = (*host)->init_all(); !s) return s.error();
  }
  return std::move(*host);
}

}  // namespace vigil::agent
