// The agent: what `vigil run`, `vigil capture` and `vigil replay` start, run
// and stop. The CLI turns flags into Options; the agent runs an ordered list
// of named steps over them (plan.h), each in its own file (steps/), and owns
// everything the steps make: the loop, the configuration and rules in force,
// the outputs, the state, the sources' parts, the recorders, the pipeline and
// the web server. Members are declared in the order they may depend on one
// another, so they are destroyed in the reverse: what points into an object
// (the runner's sources into the plugin host, the pipeline into the state and
// the baselines) goes first.
//
//   agent::Agent a(std::move(opts));
//   return agent::run(a, agent::run_plan());   // the exit code
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/agent/k8s.h"
#include "engine/agent/response_caps.h"
#include "engine/agent/rules_load.h"
#include "engine/agent/webserver.h"
#include "engine/capture/writer.h"
#include "engine/event/event.h"
#include "engine/metrics/agent.h"
#include "engine/metrics/event_counters.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/parts.h"
#include "engine/runtime/replay.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/util/result.h"

namespace vigil::plugin {
class Host;
class PluginSource;
}  // namespace vigil::plugin
namespace vigil::rules {
class Filter;
}
namespace vigil::baseline {
class Store;
}
namespace vigil::capture {
class CaptureReader;
class FlightRecorder;
class TimelineBuilder;
}  // namespace vigil::capture
namespace vigil::metrics {
class HealthMonitor;
class Server;
}  // namespace vigil::metrics
namespace vigil::outputs {
class Router;
}
namespace vigil::pipeline {
class EventTap;
class Aggregator;
class MetadataWait;
class Pipeline;
}  // namespace vigil::pipeline
namespace vigil::runtime {
class CaptureSource;
class FileWatch;
class ReplaySelector;
class StateApplier;
}  // namespace vigil::runtime
namespace vigil::state {
struct K8sConfig;
class PodWatcher;
class CriResolver;
class State;
}  // namespace vigil::state

namespace vigil::sensor {
class Sensor;
}  // namespace vigil::sensor
namespace vigil::posture {
class View;
}  // namespace vigil::posture

namespace vigil::agent {
class PreventionTap;
class EccFields;
class PostureEccTap;

class Progress;

enum class Command { kRun, kCapture, kReplay };

// What the command line asked for. Each command fills the part it has flags for.
struct Options {
  Command command = Command::kRun;
  std::string log_level = "info";
  std::string config;                  // -c ("" = none)
  std::vector<std::string> overrides;  // -o KEY=VALUE, in order
  std::vector<std::string> rules;      // -r ("" = rules: of the configuration, else the bundled rules)
  K8sFlags k8s;                        // run, capture
  std::string filter;                  // capture, replay: --filter

  // vigil run
  std::string format;   // the default stdout output's format ("" = json)
  std::string capture;  // --capture FILE ("" = none)
  bool allow_no_rules = false;
  double max_skipped_percent = 50;

  // vigil capture
  std::string write;  // -w FILE
  std::uint64_t duration_ns = 0;
  std::uint64_t size_bytes = 0;
  capture::WriterOptions writer;  // rotation, keep

  // vigil replay
  std::string replay_file;
  std::string timeline;       // --timeline OUT ("" = none)
  bool print_events = false;  // --events
  std::string events_format = "json";
  std::string baseline_dir;  // --baseline DIR ("" = none)
  runtime::SelectOptions select;
  runtime::CaptureSourceOptions replay;
};

struct Agent {
  explicit Agent(Options o);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  Options opts;
  std::shared_ptr<spdlog::logger> log;

  // Declared before the runner: its plugin sources and the rules' plugin
  // fields point into the host, which must outlive both.
  std::unique_ptr<plugin::Host> plugins;
  rules::LoadOptions load_opts;
  RuleCountPolicy count_policy;

  // The configuration as loaded at start; the sections read from it.
  YAML::Node cfg;
  WebserverConfig web;
  std::chrono::seconds heartbeat_every{0};
  std::string hostname;
  std::string state_dir;

  // The rules loaded at start, and what is in force. Set before the loop
  // runs; a reload reads them on the runner's reload thread and changes them
  // only in its commit, on the loop thread, so the two never overlap.
  std::vector<std::string> rule_paths;
  std::shared_ptr<const rules::Ruleset> ruleset;
  YAML::Node cfg_in_force;
  std::size_t enabled_in_force = 0;
  metrics::RulesInForce rules_in_force;  // the same counts, for /metrics
  // What the sensor collects for the rules in force: a reload moves it to
  // the new rules' (sensor->update) in its commit. `sensor` is owned by the
  // runner, null where the BPF sensor is off.
  std::set<event::Type> collected_in_force;
  rules::OpenPaths filtered_in_force;
  sensor::Sensor* sensor = nullptr;
  // The files a reload reads, and the watch on them.
  std::vector<std::string> watched;
  std::unique_ptr<runtime::FileWatch> watch;
  // Per-workload baselines (off unless baseline.enabled or --baseline), and
  // the watch on their directory that picks up `vigil baseline lock`.
  std::unique_ptr<baseline::Store> baselines;
  std::unique_ptr<runtime::FileWatch> baseline_watch;
  std::shared_ptr<const rules::Filter> filter;  // --filter, compiled

  // The loop: created first, so that it blocks the signals before any
  // thread starts (output workers, the pod watcher) and every thread
  // inherits the mask.
  std::unique_ptr<runtime::Runner> runner;
  std::unique_ptr<outputs::Router> router;
  runtime::Parts parts;
  std::unique_ptr<state::State> state;
  std::unique_ptr<state::K8sConfig> k8s;  // null: no Kubernetes API
  std::unique_ptr<state::PodWatcher> pods;
  std::unique_ptr<state::CriResolver> cri;  // null: no container runtime socket
  // The node's GPU security posture in force (null: posture.enabled false),
  // for /metrics; its summary when vigil started, for the ready line.
  std::shared_ptr<posture::View> posture;
  std::string posture_summary;
  // The plugins' sources (the runner's), for a look at what they queued
  // before the loop runs (the ready line's ECC).
  std::vector<plugin::PluginSource*> plugin_sources;
  // The GPUs' ECC from the nvml plugin's fields into the posture source (the
  // runner's): a pipeline tap; null when the posture is off or no loaded
  // plugin gives the fields (posture_ecc.h).
  std::unique_ptr<EccFields> ecc_fields;
  std::unique_ptr<PostureEccTap> posture_ecc;

  // Recording: a capture file and the flight recorder, state listeners
  // through one fanout (vigil run), or the capture file alone (vigil capture).
  runtime::ListenerFanout listeners;
  std::unique_ptr<capture::CaptureWriter> writer;
  std::unique_ptr<runtime::CaptureTap> capture_tap;
  std::unique_ptr<capture::FlightRecorder> recorder;
  std::unique_ptr<runtime::FlightRecorderTap> recorder_tap;
  std::optional<Error> write_error;  // vigil capture: the first write error stops the loop

  // vigil replay: the capture read, what is reported, and what is printed
  // or written beside alerts.
  std::unique_ptr<capture::CaptureReader> reader;      // until it becomes the source
  std::unique_ptr<runtime::StateApplier> replay_sink;  // the capture's state records into the state
  const runtime::CaptureSource* replay_source = nullptr;
  std::unique_ptr<runtime::ReplaySelector> selector;
  std::unique_ptr<capture::TimelineBuilder> timeline;
  std::unique_ptr<pipeline::EventTap> timeline_alerts;
  std::unique_ptr<Progress> progress;

  // vigil run and replay: where repeats of a rule's alert are counted into
  // summaries (before pipe: it outlives it).
  std::unique_ptr<pipeline::Aggregator> aggregator;
  // vigil run: where alerts whose pod is not known yet wait for it; every
  // alert of the pipeline goes through it (before pipe: it outlives it).
  std::unique_ptr<pipeline::MetadataWait> metadata_wait;
  std::unique_ptr<pipeline::Pipeline> pipe;
  metrics::EventCounters counters;  // counts only for the web server: no cost when it is off
  // Prevention's containers' entries, learnt destinations and responses
  // (vigil run with a sensor and rules with an action).
  std::unique_ptr<PreventionTap> prevention;
  // Whether kill and freeze can be carried out here (response_caps.h): checked
  // at start when a rule in force has one of them, with a sensor.
  std::optional<ResponseCaps> response_caps;
  std::unique_ptr<metrics::HealthMonitor> health;
  std::atomic<std::uint64_t> pods_known{0};  // the state's pod count, for /metrics (a tick)
  // The state's exited processes (state::StateStats), for /metrics (the same tick).
  std::atomic<std::uint64_t> exited_kept{0}, exited_expired{0}, exited_evicted{0}, late_events{0};
  std::unique_ptr<metrics::Server> webserver;

  runtime::RunReport report;  // of the loop, once it ran
  double run_secs = 0;        // how long it ran
  int exit_code = 0;          // the command's, once the last step ran
};

}  // namespace vigil::agent
