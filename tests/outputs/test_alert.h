// The alert the output tests and goldens use: a shell in an inference pod.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/event/alert.h"
#include "outputs/router.h"

namespace vigil::outputs::testing {

inline event::Alert golden_alert() {
  event::Alert a;
  a.time_ns = 1700000000123456789ULL;  // 2023-11-14T22:13:20.123456789Z
  a.rule = "Shell in inference pod";
  a.priority = event::Priority::kCritical;
  a.output =
      "Shell spawned in inference pod (proc.pid=4242 proc.name=bash proc.cmdline=bash -c id "
      "container.id=3f2a9c1b7d4e k8s.ns.name=ml k8s.pod.name=infer-0)";
  a.output_fields = {{"proc.pid", std::int64_t{4242}},
                     {"proc.name", std::string("bash")},
                     {"proc.cmdline", std::string("bash -c id")},
                     {"container.id", std::string("3f2a9c1b7d4e")},
                     {"k8s.ns.name", std::string("ml")},
                     {"k8s.pod.name", std::string("infer-0")},
                     {"gpu.minor", std::uint64_t{0}},
                     {"proc.tty", true},
                     {"user.name", std::monostate{}},
                     {"gpu.devices", std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"}}};
  a.hostname = "gpu-node-1";
  a.tags = {"inference_shell", "T1059"};
  a.uuid = "7d3f5e1a-9c2b-4e8f-a1d6-0b4c8e2f9a37";
  a.extra = {{"capture", "/var/lib/vigil/flight/1700000000.vcap"}};
  return a;
}

// A small alert with a given rule/priority/uuid (sink tests).
inline event::Alert small_alert(std::string uuid, std::string rule = "r", event::Priority p = event::Priority::kWarning,
                                std::vector<std::string> tags = {}) {
  event::Alert a;
  a.time_ns = 1700000000000000000ULL;
  a.rule = std::move(rule);
  a.priority = p;
  a.output = "alert " + uuid;
  a.hostname = "node-a";
  a.tags = std::move(tags);
  a.uuid = std::move(uuid);
  return a;
}

inline RouterOptions router_options(std::string hostname, std::string state_dir = "/var/lib/vigil") {
  RouterOptions o;
  o.hostname = std::move(hostname);
  o.state_dir = std::move(state_dir);
  return o;
}

}  // namespace vigil::outputs::testing
