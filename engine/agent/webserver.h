// The `webserver:` section of `vigil run`, and the wiring of the metrics
// endpoint to the objects that hold the numbers.
//
//   auto ws = webserver_config(cfg);                 // bad input -> exit 2
//   metrics::HealthMonitor health(ws->stall_after);
//   auto server = start_webserver(*ws, agent, health, log);   // after the pipeline exists
// (engine/agent/steps/start_webserver.cpp)
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/metrics/agent.h"
#include "engine/metrics/health.h"
#include "engine/metrics/server.h"
#include "engine/util/result.h"

namespace vigil::agent {

struct Agent;

struct WebserverConfig {
  bool enabled = false;
  std::string listen = "0.0.0.0:8765";
  std::chrono::milliseconds stall_after{10000};
};

// Reads and checks the section (the listen address is parsed here, so a bad
// one stops vigil before anything starts).
Result<WebserverConfig> webserver_config(const YAML::Node& cfg);

// Starts the server: /metrics from the objects, /healthz from `health`
// (sampled each second), /readyz ready while the loop runs.
// The objects it reads are the agent's (runner, pipeline, router, parts,
// counters, pod watcher, rules in force, baselines): the agent must outlive
// the server.
Result<std::unique_ptr<metrics::Server>> start_webserver(const WebserverConfig& cfg, const Agent& agent,
                                                         metrics::HealthMonitor& health,
                                                         std::shared_ptr<spdlog::logger> log);

}  // namespace vigil::agent
