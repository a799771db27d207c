// The heartbeat: a "vigil heartbeat" record that `vigil run` sends to every
// output every `heartbeat.interval_s`, from the event loop itself, so that a
// SIEM can alert when a node's records stop (the agent is dead, blinded or
// stuck; docs/outputs.md, "Heartbeat"). It passes every output's filters.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/event/alert.h"
#include "engine/util/result.h"

namespace vigil::agent {

inline constexpr const char* kHeartbeatRule = "vigil heartbeat";

// heartbeat.interval_s: 0 (none) by default.
Result<std::chrono::seconds> heartbeat_interval(const YAML::Node& cfg);

struct HeartbeatInfo {
  std::uint64_t now_ns = 0;  // wall clock
  std::string hostname;
  std::string version;
  std::uint64_t uptime_s = 0;
  std::uint64_t events = 0;
  std::uint64_t alerts = 0;
  std::uint64_t drops = 0;  // events the sources lost and alerts the outputs lost, so far
  std::uint64_t rules = 0;  // enabled rules in force
  std::string parts_off;    // "kmsg, gpu_inventory", or "none"
  std::uint64_t seq = 0;    // 1, 2, 3... since the start
};

event::Alert make_heartbeat(const HeartbeatInfo& h);

}  // namespace vigil::agent
