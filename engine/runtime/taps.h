// The pipeline taps that record a run: the capture writer (vigil run
// --capture, vigil capture) and the flight recorder, and the fanout that lets
// both be the state's one listener.
//
// Ownership: each tap borrows what it feeds, which must outlive it.
// Thread-safety: the pipeline thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/capture/flight_recorder.h"
#include "engine/capture/writer.h"
#include "engine/pipeline/pipeline.h"
#include "engine/state/state.h"
#include "engine/util/result.h"

namespace vigil::rules {
class Filter;
}

namespace vigil::runtime {

// The state now (its NVIDIA inventory included), for the first records of each
// capture file.
capture::Snapshot snapshot_of(const state::State& st);

// Records the pipeline's events. The writer must also be the state's listener
// (directly or through ListenerFanout), so state records land in front of the
// events that need them. With a filter (vigil capture --filter), only the
// events it accepts are written; state records are always kept.
class CaptureTap final : public pipeline::EventTap {
 public:
  explicit CaptureTap(capture::CaptureWriter& w, const rules::Filter* filter = nullptr) : w_(w), filter_(filter) {}
  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;
  // The first write error (writing stops there; detection goes on).
  const Status& status() const { return status_; }
  std::uint64_t filtered_out() const { return filtered_out_; }

 private:
  capture::CaptureWriter& w_;
  const rules::Filter* filter_;
  Status status_;
  std::uint64_t filtered_out_ = 0;
};

// Feeds the flight recorder with each event and its context, and lets it name
// its capture in alerts at or above its priority.
class FlightRecorderTap final : public pipeline::EventTap {
 public:
  // Hands `fr` the state's current NVIDIA inventory (on_nvidia): the state
  // reads it before the recorder becomes its listener.
  FlightRecorderTap(capture::FlightRecorder& fr, const state::State& st);
  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;
  void on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert) override;

 private:
  capture::FlightRecorder& fr_;
};

// One state listener slot, several listeners (capture writer + flight recorder).
class ListenerFanout final : public state::StateListener {
 public:
  void add(state::StateListener* l) {
    if (l) ls_.push_back(l);
  }
  bool empty() const { return ls_.empty(); }
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

}  // namespace vigil::runtime
