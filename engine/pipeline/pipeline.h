// The pipeline: one event in, zero or more alerts out. It is the same for live
// monitoring, capture, replay and rule tests, which is what makes them agree.
// This file and pipeline.cpp are the only place that says the step order:
//
//   state.apply(ev) → ctx = state.enrich(ev) → [baselines.observe(ctx)] →
//   taps.on_event(ev, ctx) →
//   [selector.select(ev, ctx)] → ruleset.evaluate(ctx) →
//   taps.on_alert(ev, ctx, alert) → [aggregator.offer(alert)] →
//   [metadata_wait.offer(alert)] → publish(alert) →
//   state.after(ev)
//
// The aggregator is given each event's time first ([aggregator.advance]), so
// the summaries of windows that ended go out before the event's alerts.
// Taps see every event (a capture records them all, context stays exact);
// the selector (replay's time window and filters) only decides whether the
// rules run on an event and its alerts are published.
//
// Sequence rules keep partial matches between events: the pipeline owns them
// (a rules::SequenceState for the Ruleset in force, dropped when a reload
// swaps the Ruleset) and their eviction counters, which outlive reloads.
//
// Ownership: the Pipeline borrows the State (which must outlive it), the taps
// and the selector, and shares the immutable Ruleset. Thread-safety: process()
// runs on one thread (the pipeline thread). set_ruleset() may be called from
// any thread; the new ruleset takes effect at the next event.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/event/alert.h"
#include "engine/event/event.h"
#include "engine/state/model.h"

namespace vigil::state {
class State;
}
namespace vigil::rules {
class Ruleset;
struct PreventionDecision;
class SequenceState;
class SequenceStats;
}  // namespace vigil::rules

namespace vigil::pipeline {

// A hook for things that watch the event stream: the capture writer, the
// flight recorder, replay's event printer. Called on the pipeline thread;
// must not block. `ctx` is valid for the duration of the call only.
class EventTap {
 public:
  virtual ~EventTap() = default;
  // After state.apply(): state records the event caused were already reported
  // to the state's listener, so a capture keeps them in front of the event.
  virtual void on_event(const event::Event& ev, const state::EvalContext& ctx) = 0;
  // Before the alert is published; a tap may add alert.extra entries.
  virtual void on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert) {
    (void)ev, (void)ctx, (void)alert;
  }
};

// Chooses the events the rules run on (replay's --since, --container, --pod,
// --filter). Called after the taps; false: no rules, no alerts for the event.
class Selector {
 public:
  virtual ~Selector() = default;
  virtual bool select(const event::Event& ev, const state::EvalContext& ctx) = 0;
};

// Where alerts go (the output router in vigil run; a vector in tests). Must not block.
using Publisher = std::function<void(std::shared_ptr<const event::Alert>)>;

class MetadataWait;
class Aggregator;

struct Deps {
  state::State& state;
  Publisher publish;
  std::string hostname;
  // Per-workload baselines (engine/baseline), observed after enrich and
  // before the taps and rules; null when they are off (the default), which
  // costs nothing. REQUIRES: outlives the pipeline.
  state::BaselineView* baselines = nullptr;
  // Where alerts whose pod is not known yet wait for it (metadata_wait.h):
  // every alert goes through it, which publishes it through its own
  // publisher, now or later. null: `publish` at once. REQUIRES: outlives
  // the pipeline.
  MetadataWait* metadata_wait = nullptr;
  // Where repeats of a rule's alert are counted into summaries
  // (aggregate.h): given each event's time before its alerts, and each
  // alert after the taps saw it; a counted repeat is not published. null:
  // every alert is published. REQUIRES: outlives the pipeline.
  Aggregator* aggregator = nullptr;
};

class Pipeline {
 public:
  Pipeline(Deps deps, std::shared_ptr<const rules::Ruleset> rules);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void add_tap(EventTap* tap);            // REQUIRES: tap outlives the pipeline
  void set_selector(Selector* selector);  // REQUIRES: selector outlives the pipeline; null: all
  // Prevention (docs/prevention.md): after the rules, the ruleset judges what
  // the kernel refused or would refuse (Ruleset::judge_prevention) and tags
  // the alerts; each decision is handed to `h` (vigil run's responses: kill;
  // it may change the outcome where it knows better), then tagged and
  // counted. Pipeline thread.
  using PreventionHandler = std::function<void(rules::PreventionDecision&, const state::EvalContext&)>;
  void set_prevention_handler(PreventionHandler h) { on_prevention_ = std::move(h); }
  // Decisions so far by (rule, outcome) (any thread).
  std::map<std::pair<std::string, std::string>, std::uint64_t> prevention_counts() const;
  void process(event::Event& ev);
  void set_ruleset(std::shared_ptr<const rules::Ruleset> r);
  std::shared_ptr<const rules::Ruleset> ruleset() const;
  // The set the pipeline runs now: pipeline thread only (taps), no lock.
  const rules::Ruleset* rules_in_use() const { return rules_.get(); }
  state::State& state() { return deps_.state; }

  struct Stats {
    std::uint64_t events = 0;
    std::uint64_t alerts = 0;
  };
  Stats stats() const { return {events_.load(), alerts_.load()}; }
  // Evictions of sequences' partial matches, by sequence (any thread).
  const rules::SequenceStats& sequence_stats() const { return *seq_stats_; }
  // Partial matches held now (pipeline thread only).
  std::size_t sequence_partials() const;

 private:
  Deps deps_;
  std::vector<EventTap*> taps_;
  Selector* selector_ = nullptr;
  std::shared_ptr<const rules::Ruleset> rules_;  // pipeline thread only
  std::unique_ptr<rules::SequenceStats> seq_stats_;
  std::unique_ptr<rules::SequenceState> seq_;  // for rules_ (null: it has no sequences)
  mutable std::mutex pending_mu_;
  std::shared_ptr<const rules::Ruleset> pending_;  // guarded by pending_mu_
  std::atomic<bool> has_pending_{false};
  std::vector<event::Alert> scratch_;  // reused per event: no allocation when nothing fires
  std::vector<rules::PreventionDecision> decisions_;
  PreventionHandler on_prevention_;
  mutable std::mutex prevention_mu_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> prevention_counts_;  // guarded
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> alerts_{0};
};

}  // namespace vigil::pipeline
