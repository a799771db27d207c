// The pipeline: one event in, zero or more alerts out. It is the same for live
// monitoring, capture replay and rule tests, which is what makes them agree.
//
//   state.apply(ev) → taps.on_event(ev) → ctx = state.enrich(ev) →
//   ruleset.evaluate(ctx) → taps.on_alert(ev, alert) → publish(alert) → state.after(ev)
//
// Ownership: the Pipeline borrows the State (which must outlive it) and shares
// the immutable Ruleset. Thread-safety: process() runs on one thread (the
// pipeline thread). set_ruleset() may be called from any thread; the new
// ruleset takes effect at the next event.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/event/alert.h"
#include "engine/event/event.h"

namespace vigil::state {
class State;
}
namespace vigil::rules {
class Ruleset;
}

namespace vigil::pipeline {

// A hook for things that watch the event stream: the capture writer, the
// flight recorder. Called on the pipeline thread; must not block.
class EventTap {
 public:
  virtual ~EventTap() = default;
  // After state.apply(): state records the event caused were already reported
  // to the state's listener, so a capture keeps them in front of the event.
  virtual void on_event(const event::Event& ev) = 0;
  // Before the alert is published; a tap may add alert.extra entries.
  virtual void on_alert(const event::Event& ev, event::Alert& alert) = 0;
};

// Where alerts go (the output router in vigil run; a vector in tests). Must not block.
using Publisher = std::function<void(std::shared_ptr<const event::Alert>)>;

struct Deps {
  state::State& state;
  Publisher publish;
  std::string hostname;
};

class Pipeline {
 public:
  Pipeline(Deps deps, std::shared_ptr<const rules::Ruleset> rules);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void add_tap(EventTap* tap);  // REQUIRES: tap outlives the pipeline
  void process(event::Event& ev);
  void set_ruleset(std::shared_ptr<const rules::Ruleset> r);
  std::shared_ptr<const rules::Ruleset> ruleset() const;

  struct Stats {
    std::uint64_t events = 0;
    std::uint64_t alerts = 0;
  };
  Stats stats() const { return {events_.load(), alerts_.load()}; }

 private:
  Deps deps_;
  std::vector<EventTap*> taps_;
  std::shared_ptr<const rules::Ruleset> rules_;  // pipeline thread only
  mutable std::mutex pending_mu_;
  std::shared_ptr<const rules::Ruleset> pending_;  // guarded by pending_mu_
  std::atomic<bool> has_pending_{false};
  std::vector<event::Alert> scratch_;  // reused per event: no allocation when nothing fires
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> alerts_{0};
};

}  // namespace vigil::pipeline
