// Per-workload baselines in the agent: the `baseline:` configuration section,
// and their start in `vigil run` (the store, its periodic save, the watch on
// its directory that picks up `vigil baseline lock`). `vigil replay` reads
// the same section; `vigil baseline` (engine/cli) works on the files.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/baseline/store.h"
#include "engine/util/result.h"

namespace vigil::runtime {
class Runner;
class FileWatch;
}  // namespace vigil::runtime

namespace vigil::agent {

struct BaselineSettings {
  bool enabled = false;
  baseline::Config store;
  std::chrono::milliseconds save_every{60000};
};

// The `baseline:` section (docs/baselines.md); dir defaults to
// <state_dir>/baseline. Errors name the key.
Result<BaselineSettings> baseline_settings(const YAML::Node& cfg, const std::string& state_dir);

// `vigil run`: makes the directory (0700), loads the profiles (a refused file
// is logged and left out), and adds to the runner a save every save_every, a
// watch on the directory that picks up `vigil baseline lock`, and a log line
// when sets fill. The caller saves once more at exit (store.save()).
// Errors: the directory is unsafe (bad input) or cannot be made (runtime).
Result<std::unique_ptr<baseline::Store>> start_baselines(const BaselineSettings& s, runtime::Runner& runner,
                                                         std::unique_ptr<runtime::FileWatch>& watch,
                                                         const std::shared_ptr<spdlog::logger>& log);

// Logs what a save or pick-up refused or failed.
void log_baseline_errors(const std::vector<Error>& errors, spdlog::logger& log);

}  // namespace vigil::agent
