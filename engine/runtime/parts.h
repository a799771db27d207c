// Parts: which parts of vigil run on this node, and why a part is off. Each
// part (the BPF sensor, the /dev/kmsg Xid reader, the pod watcher, a plugin
// source...) says once at start whether it came up; the metrics endpoint
// exposes them as vigil_part_enabled{part="..."} and the "ready" line lists
// the ones that are off.
//
//   parts.set({"kmsg", false, "CAP_SYSLOG and /dev/kmsg", "cannot open /dev/kmsg: EPERM"});
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

namespace vigil::runtime {

struct PartState {
  std::string name;  // "bpf", "kmsg", "pods", "pod_resources", "gpu_inventory", "plugin:nvml"
  bool on = false;
  std::string needs;    // what it needs to run: "CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN"
  std::string why_off;  // when off: the error that turned it off
};

class Parts {
 public:
  // Adds the part, or replaces the state of the part of that name.
  void set(PartState p) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = std::find_if(parts_.begin(), parts_.end(), [&](const PartState& q) { return q.name == p.name; });
    if (it == parts_.end()) {
      parts_.push_back(std::move(p));
    } else {
      *it = std::move(p);
    }
  }
  std::vector<PartState> snapshot() const {
    std::lock_guard<std::mutex> l(mu_);
    return parts_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PartState> parts_;
};

}  // namespace vigil::runtime
