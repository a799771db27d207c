// Helpers shared by the subcommands: logging, exit codes, finding and loading
// rules, turning configuration sections into component configs, and the one
// copy of the wiring `vigil run` and `vigil capture` share (configuration
// with -o overrides, Kubernetes discovery and the pod watcher, the state
// seeded from /proc, the live sources, the capture writer's options).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/capture/writer.h"
#include "engine/event/event.h"
#include "engine/sensor/sensor.h"
#include "engine/rules/ruleset.h"
#include "engine/util/result.h"

namespace CLI {
class App;
}
namespace vigil::rules {
class Ruleset;
}
namespace vigil::state {
struct K8sOptions;
struct K8sConfig;
class PodWatcher;
class State;
}
namespace vigil::capture {
struct FlightRecorderOptions;
}
namespace vigil::runtime {
class Runner;
class CaptureTap;
class Parts;
class EventSource;
}

namespace vigil::cli {

// A logger on stderr (stdout belongs to alerts). level: trace..error.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level);

// Parses the arguments with CLI11 (argv[0] is the subcommand): -1 to go on,
// else the exit code: 0 after --help (the generated help on stdout), 2 for a
// usage error (the message on stderr).
int parse_cli(CLI::App& app, int argc, char** argv);
// A repeatable option that takes one value each time (-r A -r B), so that a
// positional argument after it is not taken as a second value.
void one_value_each(CLI::App& app, const std::string& name, std::vector<std::string>& out,
                    const std::string& help);

// Logs the error as one line and returns its exit code (2 bad input, 1 runtime).
int fail(spdlog::logger& log, const Error& err);

// The bundled rules directory: next to the binary (../rules from build/),
// the installed copy (/usr/share/vigil/rules, /usr/local/share/vigil/rules),
// or ./rules. "" when none exists.
std::string find_bundled_rules();

// `rules:` in the configuration: a string or a list of strings.
Result<std::vector<std::string>> config_rule_paths(const YAML::Node& cfg);

// How many rules a load must leave for vigil run to use it. A run with no
// enabled rule detects nothing, so it is refused unless asked for.
struct RuleCountPolicy {
  bool allow_empty = false;        // --allow-no-rules
  double max_skipped_share = 0.5;  // --max-skipped-rules PERCENT / 100
};

// The counts of one load of the rules, and of the set in force (a reload).
struct RuleCounts {
  std::size_t enabled = 0;  // enabled rules in the new set
  std::size_t skipped = 0;  // rules the load skipped (unknown field or source: warnings)
  std::vector<std::pair<std::string, std::string>> skipped_rules;  // (name, why), for metrics
  std::size_t enabled_in_force = 0;  // enabled rules of the set in force; 0 at start
};

// Why a loaded set must not be used (bad input, naming the counts), or OK:
// - no enabled rule, unless policy.allow_empty;
// - a reload (enabled_in_force > 0) that skipped rules and would leave more
//   than policy.max_skipped_share of the enabled rules in force out
//   (enabled_in_force - enabled > share * enabled_in_force).
Status check_rule_counts(const RuleCounts& c, const RuleCountPolicy& policy);

// Loads rules, logging every diagnostic (skipped rules are warnings that name
// them); an error when any rule file has errors. `counts`, when given, gets
// the load's enabled and skipped counts.
Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log,
                                                                const rules::LoadOptions& opts = {},
                                                                RuleCounts* counts = nullptr);

// `hostname:` in the configuration, else the node name, else gethostname().
std::string host_name(const YAML::Node& cfg);

// The configuration file ("" = none: an empty map) with the -o key=value
// overrides applied in order, checked against the schema (config.h,
// load_config). Bad input names the file's line or the override, and the key.
Result<YAML::Node> load_config_with_overrides(const std::string& path,
                                              const std::vector<std::string>& overrides);

// The live sources: the BPF sensor and, when Xid events are wanted, the
// /dev/kmsg reader (`sensor.kmsg_path`).
struct LiveSourcesConfig {
  sensor::Config sensor;
  std::string kmsg_path = "/dev/kmsg";
  // When kmsg_path cannot be opened, read the kernel log through syslog(2)
  // (only when kmsg_path is the real /dev/kmsg: a stand-in path in tests
  // means "this file or nothing").
  bool kmsg_syslog_fallback = true;
};
// What the sensor must watch (the event types and open paths of the rules or
// of a filter) plus the `sensor:` section of the configuration.
Result<LiveSourcesConfig> live_sources_config(const YAML::Node& cfg, std::set<event::Type> types,
                                              const rules::OpenPaths& open_paths);
// What a reloaded rule set (`next`) needs that the live sources, set up at
// start for the event types `collected` and the open filter's paths
// `filtered`, do not give it: the event types no hook was attached for, with
// the rules and sequences that need them, and the open paths the kernel's
// open filter was not given. Hooks and the filter are fixed when the sensor
// loads, so those rules see nothing new until vigil restarts. One line for
// the reload's warning; empty when nothing is missing.
std::string sensor_gaps(const std::set<event::Type>& collected, const rules::OpenPaths& filtered,
                        const rules::Ruleset& next);
// Opens the sources and adds them to the runner. A source that cannot run (no
// capability, no BTF, a hook missing, /dev/kmsg unreadable) is left out: its
// part ("bpf", "bpf_cgroup", "kmsg"; parts.h) is recorded off with one log line
// saying why. Errors are bad input only (a sensor setting out of bounds); once
// the plugin sources are added too, require_an_event_source() (parts.h)
// decides whether anything can run.
Status add_live_sources(runtime::Runner& runner, const LiveSourcesConfig& cfg, runtime::Parts& parts,
                        spdlog::logger& log);

// Adds the plugins' sources to the runner, not essential (a plugin that fails
// leaves detection going), and records each as the part "plugin:NAME".
void add_plugin_sources(runtime::Runner& runner, std::vector<std::unique_ptr<source::EventSource>> sources,
                        runtime::Parts& parts, spdlog::logger& log);

// The Kubernetes flags of run and capture (they win over the `k8s:` section).
struct K8sFlags {
  std::string api;
  std::string token_file;
  std::string ca;
  std::string kubeconfig;
};

// Adds --k8s-api, --k8s-token-file, --k8s-ca and --kubeconfig.
void add_k8s_flags(CLI::App& app, K8sFlags& k8s);

// Where pods come from: command-line flags win over the `k8s:` section; with
// neither, in-cluster discovery (KUBERNETES_SERVICE_HOST, service account).
Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const K8sFlags& flags);

// The API server to watch: nullopt when there is none (the parts "k8s" and
// "pod_resources" are recorded off, logged at info); Error::bad_input for bad
// settings (a kubeconfig without a server, a missing token file), before
// anything starts.
Result<std::optional<state::K8sConfig>> discover_k8s(const YAML::Node& cfg, const K8sFlags& flags,
                                                     spdlog::logger& log, runtime::Parts& parts);

// Starts the pod watcher and drains it into `st` on every runner turn. Records
// the part "k8s" on, and "pod_resources" on when the kubelet's socket accepts
// a connection (off, with the reason, otherwise).
Result<std::unique_ptr<state::PodWatcher>> watch_pods(const state::K8sConfig& k8s, state::State& st,
                                                      runtime::Runner& runner, spdlog::logger& log,
                                                      runtime::Parts& parts);

// Seeds the state from /proc (a failure is a warning: events fill it in), and
// records the parts it reads through: "procfs" (other processes' /proc
// entries: off without the capabilities) and "gpu_inventory"
// (/proc/driver/nvidia/gpus).
void seed_state(state::State& st, spdlog::logger& log, runtime::Parts& parts);

// The capture writer's header (this host, named `hostname`) and the state
// snapshot that starts each file, on top of `base` (rotation, block size).
capture::WriterOptions capture_writer_options(const std::string& hostname, const state::State& st,
                                              capture::WriterOptions base = {});

// Flushes the writer on every runner turn (records written before a quiet
// period still reach the disk within its flush interval) and calls
// `on_error` once with the first error of the writer or the tap.
void add_capture_tick(runtime::Runner& runner, capture::CaptureWriter& writer, const runtime::CaptureTap& tap,
                      std::function<void(const Error&)> on_error);

// The `flight_recorder:` section (enabled by default with modest limits;
// captures go to <state_dir>/flight unless `flight_recorder.dir` says otherwise).
Result<capture::FlightRecorderOptions> flight_recorder_options(const YAML::Node& cfg,
                                                               const std::string& state_dir);

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

}  // namespace vigil::cli
