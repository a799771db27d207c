// HealthMonitor: decides /healthz from what the loop and its sources show,
// so that the liveness probe fails when detection is stuck, not merely when
// the process is alive. Unhealthy when, for at least `stall`:
//   - the event loop has not turned (a source, a tick or the rules block it);
//   - a source's buffer (the BPF ring buffer, a plugin's queue) holds events
//     and none of them has been read;
//   - events arrive (a buffer's producer moved within the window) and the
//     rule engine has not evaluated one;
// and at once when a source has failed.
//
//   HealthMonitor h(std::chrono::seconds(10));
//   every second: h.observe(runner.status(), counters.events(), steady_clock::now());
//   /healthz:     h.verdict()
//
// observe() keeps the last time each counter moved; call it often (the
// webserver samples once a second) so the window is measured, not guessed.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/runner.h"

namespace vigil::metrics {

struct Verdict {
  bool ok = true;
  std::vector<std::string> reasons;  // why not ok, one line each
};

class HealthMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  explicit HealthMonitor(std::chrono::nanoseconds stall) : stall_(stall) {}

  // Records one observation and returns the verdict it gives.
  // `evaluated`: events the rule engine has taken so far.
  Verdict observe(const runtime::LoopStatus& loop, std::uint64_t evaluated, Clock::time_point now);
  // The verdict of the last observation (ok before the first).
  Verdict verdict() const;

 private:
  struct Track {
    std::uint64_t consumed = 0;
    std::uint64_t produced = 0;
    Clock::time_point drained_at{};   // consumed moved, or nothing was pending
    Clock::time_point produced_at{};  // produced moved
  };
  const std::chrono::nanoseconds stall_;
  mutable std::mutex mu_;
  bool first_ = true;
  std::map<std::string, Track> tracks_;  // by source name
  std::uint64_t evaluated_ = 0;
  Clock::time_point evaluated_at_{};
  Verdict last_;
};

}  // namespace vigil::metrics
