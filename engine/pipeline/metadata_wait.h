// MetadataWait: an alert whose pod is not known yet waits a bounded time for
// it, so that it names its pod (DESIGN.md "Where metadata comes from").
//
//   pipeline::MetadataWait wait({std::chrono::milliseconds(500), 10000}, state, publish, clock);
//   wait.offer(std::move(alert), ctx, ruleset);  // for each alert (Pipeline::process)
//   wait.pods_changed();                         // after pods reached the state (the pod feed)
//   wait.tick();                                 // every turn of the loop
//   wait.flush();                                // at shutdown
//
// offer() publishes an alert at once unless its event's metadata is
// incomplete (state::Metadata: the cgroup names a Kubernetes pod the state
// does not know with its name) and waiting is on: then the alert is parked.
// A parked alert goes out
//   - when its pod is known (pods_changed() or tick() sees it): rendered
//     again with the container and pod records as they are now (its
//     container.* and k8s.* fields, in the text and output_fields; k8s.meta
//     becomes "complete");
//   - at its deadline (parked + wait, tick()), as it is: "incomplete";
//   - when the cap of parked alerts is reached: the oldest, at once, as it
//     is (counted as evicted);
//   - at flush(), with whatever is known by then.
// Alerts go out in the order their pods land or their deadlines pass, not
// in event order. Nothing blocks; memory is bounded by max_parked alerts.
//
// Ownership: borrows the State (which must outlive it); parked alerts hold
// the Ruleset that made them (to render them again after a reload). Thread-
// safety: offer(), pods_changed(), tick() and flush() on the pipeline thread
// only; stats() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/event/alert.h"
#include "engine/pipeline/pipeline.h"
#include "engine/state/metadata.h"
#include "engine/state/model.h"

namespace vigil::state {
class State;
}
namespace vigil::rules {
class Ruleset;
}

namespace vigil::pipeline {

struct MetadataWaitOptions {
  // How long an alert waits for its pod (0: not at all). The configuration's
  // k8s.metadata_wait_ms; docs/install.md says how the default was chosen.
  std::chrono::milliseconds wait = kDefaultWait;
  // The most alerts parked at once; past it the oldest goes out at once.
  std::size_t max_parked = kDefaultMaxParked;
  static constexpr std::chrono::milliseconds kDefaultWait{500};
  static constexpr std::size_t kDefaultMaxParked = 10000;
};

// Counters of what the wait did (any thread).
class MetadataWaitStats {
 public:
  // The delay histogram's upper bounds, seconds (and +Inf).
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  struct Snapshot {
    // Alerts published, by the k8s.meta they went out with.
    std::uint64_t host = 0, container = 0, complete = 0, incomplete = 0;
    // Parked alerts, by how they left: their pod came, their deadline
    // passed, the cap pushed them out, shutdown.
    std::uint64_t resolved = 0, timed_out = 0, evicted = 0, flushed = 0;
    std::uint64_t parked = 0;                                        // parked now
    std::array<std::uint64_t, kBuckets.size() + 1> delay_buckets{};  // not cumulative; last: +Inf
    double delay_sum_s = 0;
    std::uint64_t delay_count = 0;
  };
  Snapshot snapshot() const;

 private:
  friend class MetadataWait;
  void published(state::Metadata m);
  void waited(std::uint64_t delay_ns);
  std::atomic<std::uint64_t> host_{0}, container_{0}, complete_{0}, incomplete_{0};
  std::atomic<std::uint64_t> resolved_{0}, timed_out_{0}, evicted_{0}, flushed_{0};
  std::atomic<std::uint64_t> parked_{0};
  std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> buckets_{};
  std::atomic<std::uint64_t> delay_sum_ns_{0}, delay_count_{0};
};

class MetadataWait {
 public:
  // Monotonic ns (live: steady_clock; tests: a fake).
  using Clock = std::function<std::uint64_t()>;
  MetadataWait(MetadataWaitOptions opts, const state::State& state, Publisher publish, Clock clock);
  ~MetadataWait();
  MetadataWait(const MetadataWait&) = delete;
  MetadataWait& operator=(const MetadataWait&) = delete;

  // An alert of the event `ctx` is about (valid for the call only), made by
  // `rules`: published now, or parked (see the file comment).
  void offer(event::Alert&& alert, const state::EvalContext& ctx, std::shared_ptr<const rules::Ruleset> rules);
  // Publishes, rendered again, the parked alerts whose pods are now known.
  // Costs a lookup per distinct parked pod; nothing when none is parked.
  void pods_changed();
  // pods_changed(), then publishes the parked alerts whose deadline passed.
  void tick();
  // Publishes every parked alert (rendered again where its pod is known).
  void flush();

  std::size_t parked() const { return live_; }
  bool enabled() const { return opts_.wait.count() > 0; }
  const MetadataWaitStats& stats() const { return stats_; }

 private:
  struct Parked {
    event::Alert alert;
    std::string container_id;
    std::string pod_uid;
    std::shared_ptr<const rules::Ruleset> rules;
    std::uint64_t parked_ns = 0;
    bool gone = false;  // published already: removed from parked_ before the call returns
  };
  enum class Why : std::uint8_t { kResolved, kTimedOut, kEvicted, kFlushed };
  // Renders `p` again when its pod is known now; true when it was.
  bool resolve(Parked& p) const;
  void release(Parked& p, Why why, std::uint64_t now);
  void pop_gone();

  MetadataWaitOptions opts_;
  const state::State& state_;
  Publisher publish_;
  Clock clock_;
  std::deque<Parked> parked_;                          // in parking order: the oldest deadline first
  std::size_t live_ = 0;                               // entries of parked_ not gone
  std::unordered_map<std::string, std::size_t> pods_;  // pod uid -> its parked alerts
  MetadataWaitStats stats_;
};

}  // namespace vigil::pipeline
