#include "engine/agent/config.h"

#include "engine/agent/agent.h"
#include "engine/agent/rules_load.h"
#include "engine/config/config.h"

namespace vigil::agent {

Result<YAML::Node> config_of(const Options& opts) {
  auto cfg = config::load_config(opts.config, opts.overrides);
  if (!cfg) return cfg.error();
  if (!opts.format.empty() && !(*cfg)["outputs"]) {
    YAML::Node out;
    out["type"] = "stdout";
    out["format"] = opts.format;
    (*cfg)["outputs"].push_back(out);
  }
  return cfg;
}

Result<std::vector<std::string>> run_rule_paths(const Options& opts, const YAML::Node& cfg) {
  if (!opts.rules.empty()) return opts.rules;
  auto from_cfg = config_rule_paths(cfg);
  if (!from_cfg) return from_cfg.error();
  if (!from_cfg->empty()) return from_cfg;
  std::string bundled = find_bundled_rules();
  if (bundled.empty()) return Error::bad_input("no rules given (-r) and no bundled rules directory found");
  return std::vector<std::string>{bundled};
}

std::vector<std::string> watched_files(const Options& opts, const std::vector<std::string>& rule_paths) {
  std::vector<std::string> out = rule_paths;
  if (!opts.config.empty()) out.insert(out.begin(), opts.config);
  return out;
}

}  // namespace vigil::agent
