// EventCounters: the pipeline tap behind vigil's event, alert and per-pod GPU
// metrics. It counts on the pipeline thread, with relaxed atomic stores that a
// scrape on another thread reads without stopping the pipeline.
//
//   metrics::EventCounters counters;
//   pipe.add_tap(&counters);
//   ... on the webserver's thread: counters.collect(out);
//
// Memory and label sets are bounded: one counter per event type; alerts by
// (rule, priority) up to kMaxAlertSeries pairs, the rest under rule="_other";
// GPU usage by pod up to kMaxPods pods, the rest under pod="_other"
// (namespace "_other"). docs/metrics.md gives the worst case of each family.
//
// Thread-safety: on_event/on_alert on the pipeline thread; collect() and the
// getters from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/event/schema.h"
#include "engine/metrics/exposition.h"
#include "engine/pipeline/pipeline.h"

namespace vigil::metrics {

class EventCounters final : public pipeline::EventTap {
 public:
  static constexpr std::size_t kMaxAlertSeries = 2000;
  static constexpr std::size_t kMaxPods = 500;

  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;
  void on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert) override;

  // Appends vigil_events_total, vigil_alerts_total and the vigil_pod_gpu_*
  // families.
  void collect(Exposition& out) const;

  std::uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  std::uint64_t events_of(event::Type t) const;

 private:
  struct PodGpu {
    std::uint64_t ioctls = 0;
    std::uint64_t opens = 0;
  };
  std::atomic<std::uint64_t> events_{0};
  std::array<std::atomic<std::uint64_t>, event::kTypeCount> by_type_{};
  mutable std::mutex mu_;  // guards the maps (alerts and GPU events are rare next to events)
  std::map<std::pair<std::string, std::string>, std::uint64_t> alerts_;  // (rule, priority)
  std::map<std::pair<std::string, std::string>, PodGpu> pod_gpu_;        // (namespace, pod)
};

}  // namespace vigil::metrics
