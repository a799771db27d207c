// Helpers shared by the subcommands: logging, exit codes, finding and loading
// rules, and turning configuration sections into component configs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/util/result.h"

namespace vigil::rules {
class Ruleset;
}
namespace vigil::sensor {
struct Config;
struct DropCounters;
}
namespace vigil::state {
struct K8sOptions;
}
namespace vigil::capture {
struct FlightRecorderOptions;
}

namespace vigil::cli {

// A logger on stderr (stdout belongs to alerts). level: trace..error.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level);

// Logs the error as one line and returns its exit code (2 bad input, 1 runtime).
int fail(spdlog::logger& log, const Error& err);

// The bundled rules directory: next to the binary (../rules from build/),
// the installed copy (/usr/share/vigil/rules, /usr/local/share/vigil/rules),
// or ./rules. "" when none exists.
std::string find_bundled_rules();

// `rules:` in the configuration: a string or a list of strings.
Result<std::vector<std::string>> config_rule_paths(const YAML::Node& cfg);

// Loads rules, logging every diagnostic; an error when any rule file has errors.
Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log);

// `hostname:` in the configuration, else the node name, else gethostname().
std::string host_name(const YAML::Node& cfg);

// The sensor's configuration: what the rules need plus the `sensor:` section.
Result<sensor::Config> sensor_config(const YAML::Node& cfg, const rules::Ruleset& rules);
// "ringbuf_full=3 truncated=1 ..." for log lines.
std::string describe_drops(const sensor::DropCounters& d);

// Where pods come from: command-line flags win over the `k8s:` section; with
// neither, in-cluster discovery (KUBERNETES_SERVICE_HOST, service account).
Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const std::string& api,
                                      const std::string& token_file, const std::string& ca,
                                      const std::string& kubeconfig);

// The `flight_recorder:` section (enabled by default with modest limits;
// captures go to <state_dir>/flight unless `flight_recorder.dir` says otherwise).
Result<capture::FlightRecorderOptions> flight_recorder_options(const YAML::Node& cfg,
                                                               const std::string& state_dir);

}  // namespace vigil::cli
