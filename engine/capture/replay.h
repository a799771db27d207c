// Replay: a capture fed through the same pipeline as live events, and the taps
// that record a live run (capture writer, flight recorder).
//
//   state::State st(state::Config{.live = false});
//   capture::Replayer rp(st, opts);
//   pipeline::Pipeline pl({st, rp.gate(publish), host}, ruleset);
//   pl.add_tap(&rp);
//   auto stats = rp.run(*reader, pl);
//
// For each record: state records (the NVIDIA inventory included) go to
// state.upsert_*/remove_pod, events to pipeline.process(). Because the rule engine and the state are pure functions
// of what they are fed, a replay of a live run's capture with the same rules
// gives the live run's alerts field for field (uuid included).
//
// Filters choose which events are *reported* (alerts published, events
// printed); every event still updates the state so context stays exact.
// Events before `since` only update the state (the rules do not run for them);
// reading stops at the first event after `until`.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/capture/flight_recorder.h"
#include "engine/capture/reader.h"
#include "engine/capture/writer.h"
#include "engine/pipeline/pipeline.h"
#include "engine/state/state.h"
#include "engine/util/result.h"

namespace vigil::rules {
class Ruleset;
}

namespace vigil::capture {

// The state now (its NVIDIA inventory included), for the first records of each
// capture file.
Snapshot snapshot_of(const state::State& st);

// Records every event of the pipeline (vigil run --capture). The writer must
// also be the state's listener (directly or through ListenerFanout).
class CaptureTap final : public pipeline::EventTap {
 public:
  explicit CaptureTap(CaptureWriter& w) : w_(w) {}
  void on_event(const event::Event& ev) override;
  void on_alert(const event::Event&, event::Alert&) override {}
  // The first write error (writing stops there; detection goes on).
  const Status& status() const { return status_; }

 private:
  CaptureWriter& w_;
  Status status_;
};

// Feeds the flight recorder with each event and its context, and lets it name
// its capture in alerts at or above its priority.
class FlightRecorderTap final : public pipeline::EventTap {
 public:
  // Hands `fr` the state's current NVIDIA inventory (on_nvidia): the state
  // reads it before the recorder becomes its listener.
  FlightRecorderTap(FlightRecorder& fr, const state::State& st);
  void on_event(const event::Event& ev) override;
  void on_alert(const event::Event& ev, event::Alert& alert) override;

 private:
  FlightRecorder& fr_;
  const state::State& st_;
};

// One state listener slot, several listeners (capture writer + flight recorder).
class ListenerFanout final : public state::StateListener {
 public:
  void add(state::StateListener* l) {
    if (l) ls_.push_back(l);
  }
  void on_process(const state::Process& p) override {
    for (auto* l : ls_) l->on_process(p);
  }
  void on_container(const state::Container& c) override {
    for (auto* l : ls_) l->on_container(c);
  }
  void on_pod(const state::Pod& p) override {
    for (auto* l : ls_) l->on_pod(p);
  }
  void on_pod_removed(const std::string& uid) override {
    for (auto* l : ls_) l->on_pod_removed(uid);
  }
  void on_nvidia(const state::NvidiaInfo& n) override {
    for (auto* l : ls_) l->on_nvidia(n);
  }

 private:
  std::vector<state::StateListener*> ls_;
};

// Compiles a Falco condition (vigil replay/capture --filter) into a one-rule
// Ruleset that matches exactly the events the condition accepts.
Result<std::shared_ptr<const rules::Ruleset>> compile_filter(const std::string& condition);
// True when `filter` (from compile_filter) accepts the event of `ctx`.
bool filter_accepts(const rules::Ruleset& filter, const state::EvalContext& ctx);

struct ReplayOptions {
  std::uint64_t since_ns = 0;  // 0: from the start
  std::uint64_t until_ns = 0;  // 0: to the end
  std::string container;       // container id or a prefix of it ("" = any)
  std::string pod;             // "name" or "namespace/name" ("" = any)
  std::shared_ptr<const rules::Ruleset> filter;  // compile_filter(); null = any
  // Called for each reported event after the pipeline processed it.
  std::function<void(const event::Event&, const state::EvalContext&)> on_selected;
  // Called every ~64K records with (bytes read, total bytes or 0, events).
  std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> progress;
};

struct ReplayStats {
  std::uint64_t records = 0;
  std::uint64_t events = 0;          // events read
  std::uint64_t state_records = 0;
  std::uint64_t reported = 0;        // events that passed the filters
  std::uint64_t skipped_records = 0; // unknown record types in the file
  bool truncated = false;            // the capture was cut off mid-write
};

class Replayer final : public pipeline::EventTap {
 public:
  Replayer(state::State& st, ReplayOptions opts);

  // Wraps the publisher so that alerts of filtered-out events are dropped.
  pipeline::Publisher gate(pipeline::Publisher next);
  // Whether the event being processed passed the filters (for other taps).
  bool selected() const { return current_selected_; }
  // Reads the whole capture into `pl`. An Error names the file and offset.
  Result<ReplayStats> run(CaptureReader& reader, pipeline::Pipeline& pl);

  // pipeline::EventTap
  void on_event(const event::Event& ev) override;
  void on_alert(const event::Event&, event::Alert&) override {}

 private:
  bool selected(const event::Event& ev, const state::EvalContext& ctx) const;

  state::State& st_;
  ReplayOptions opts_;
  bool current_selected_ = true;
  std::uint64_t reported_ = 0;
};

}  // namespace vigil::capture
