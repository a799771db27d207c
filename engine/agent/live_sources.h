// The live event sources: the BPF sensor, the kernel log reader for Xid
// lines, and the plugins' sources; what the sensor must watch for a rule set,
// and what a reloaded rule set needs that the sensor, set up at start, lacks.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/event/event.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/sensor.h"
#include "engine/util/result.h"

namespace vigil::runtime {
class Runner;
class Parts;
}  // namespace vigil::runtime
namespace vigil::source {
class EventSource;
}  // namespace vigil::source

namespace vigil::agent {

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
// `sensor`, where given, is set to the BPF sensor handed to the runner (null
// where it is off).
Status add_live_sources(runtime::Runner& runner, const LiveSourcesConfig& cfg, runtime::Parts& parts,
                        spdlog::logger& log, sensor::Sensor** sensor = nullptr);

// Adds the plugins' sources to the runner, not essential (a plugin that fails
// leaves detection going), and records each as the part "plugin:NAME".
void add_plugin_sources(runtime::Runner& runner, std::vector<std::unique_ptr<source::EventSource>> sources,
                        runtime::Parts& parts, spdlog::logger& log);

}  // namespace vigil::agent
