#include "engine/metrics/health.h"

#include <fmt/format.h>

namespace vigil::metrics {
namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Verdict HealthMonitor::observe(const runtime::LoopStatus& loop, std::uint64_t evaluated, Clock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  if (first_) {
    first_ = false;
    evaluated_ = evaluated;
    evaluated_at_ = now;
  }
  if (evaluated != evaluated_) {
    evaluated_ = evaluated;
    evaluated_at_ = now;
  }
  Verdict v;
  bool arriving = false;
  for (const runtime::SourceStatus& s : loop.sources) {
    if (s.health == source::EventSource::Health::kFailed) {
      v.reasons.push_back(
          fmt::format("source {} failed: {}", s.name, s.failure.empty() ? "no reason given" : s.failure));
    }
    if (!s.backlog) continue;
    const source::Backlog& b = *s.backlog;
    auto [it, fresh] = tracks_.try_emplace(s.name);
    Track& t = it->second;
    if (fresh) {
      t.consumed = b.consumed;
      t.produced = b.produced;
      t.drained_at = now;
      t.produced_at = now - stall_;  // not seen moving yet
    }
    if (b.consumed != t.consumed || b.pending == 0) t.drained_at = now;
    if (b.produced != t.produced) t.produced_at = now;
    t.consumed = b.consumed;
    t.produced = b.produced;
    if (now - t.produced_at < stall_) arriving = true;
    if (s.health == source::EventSource::Health::kRunning && b.pending > 0 && now - t.drained_at >= stall_) {
      v.reasons.push_back(fmt::format("source {}: {} {} wait to be read and none was read for {:.0f} s", s.name,
                                      b.pending, b.unit, seconds(now - t.drained_at)));
    }
  }
  if (loop.running) {
    const auto idle = now - loop.last_turn;
    if (idle >= stall_) v.reasons.push_back(fmt::format("the event loop has not turned for {:.0f} s", seconds(idle)));
    if (arriving && now - evaluated_at_ >= stall_) {
      v.reasons.push_back(fmt::format("events arrive and the rule engine has evaluated none for {:.0f} s",
                                      seconds(now - evaluated_at_)));
    }
  } else {
    // Not running: starting (readiness says so) or stopping; the window
    // starts again when the loop does.
    evaluated_at_ = now;
  }
  v.ok = v.reasons.empty();
  last_ = v;
  return v;
}

Verdict HealthMonitor::verdict() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_;
}

}  // namespace vigil::metrics
