// The `webserver:` section of `vigil run`, and the wiring of the metrics
// endpoint to the objects that hold the numbers.
//
//   auto ws = webserver_config(cfg);                 // bad input -> exit 2
//   metrics::HealthMonitor health(ws->stall_after);
//   auto server = start_webserver(*ws, agent, health, log);   // after the pipeline exists
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

namespace vigil::pipeline {
class Pipeline;
}
namespace vigil::outputs {
class Router;
}
namespace vigil::baseline {
class Store;
}
namespace vigil::state {
class PodWatcher;
}

namespace vigil::cli {

struct WebserverConfig {
  bool enabled = false;
  std::string listen = "0.0.0.0:8765";
  std::chrono::milliseconds stall_after{10000};
};

// Reads and checks the section (the listen address is parsed here, so a bad
// one stops vigil before anything starts).
Result<WebserverConfig> webserver_config(const YAML::Node& cfg);

// What the endpoint reads (copied into the server's handlers: every
// reference must outlive the server).
struct AgentObjects {
  runtime::Runner& runner;
  pipeline::Pipeline& pipe;
  outputs::Router& router;
  runtime::Parts& parts;
  metrics::EventCounters& counters;
  const state::PodWatcher* pods = nullptr;  // null without a Kubernetes API
  bool k8s_tls_verified = true;
  // Kept up to date by the owner (the start, each reload; the pod count by a
  // tick on the loop thread, which owns the state).
  const metrics::RulesInForce& rules;
  const std::atomic<std::uint64_t>& pods_known;
  const baseline::Store* baselines = nullptr;  // null: baselines off
};

// Starts the server: /metrics from the objects, /healthz from `health`
// (sampled each second), /readyz ready while the loop runs.
Result<std::unique_ptr<metrics::Server>> start_webserver(const WebserverConfig& cfg, const AgentObjects& agent,
                                                         metrics::HealthMonitor& health,
                                                         std::shared_ptr<spdlog::logger> log);

}  // namespace vigil::cli
