// Replay: a capture file as an EventSource, and the selection of what a
// replay reports. With these, `vigil replay` is the same Runner and Pipeline
// as `vigil run`: because the rule engine and the state are pure functions of
// what they are fed, a replay of a live run's capture with the same rules
// gives the live run's alerts field for field (uuid included).
//
//   state::State st(state::Config{.live = false});
//   runtime::StateApplier sink(st);
//   auto src = std::make_unique<runtime::CaptureSource>(std::move(reader), sink, copts);
//   runtime::ReplaySelector sel(sopts);
//   pipeline::Pipeline pl({st, publish, host}, ruleset);
//   pl.set_selector(&sel);
//   runner.add_source(std::move(src));
//   runner.run(pl);
//
// Thread-safety: one thread (the runner's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/capture/format.h"
#include "engine/capture/reader.h"
#include "engine/pipeline/pipeline.h"
#include "engine/source/source.h"
#include "engine/state/state.h"

namespace vigil::rules {
class Filter;
}

namespace vigil::runtime {

// Where a capture's state records (processes, containers, pods, pod
// removals, the NVIDIA inventory) go. A source calls it between the events it
// emits, so each record lands before the events that follow it in the file
// (the runner processes an event before emit returns).
class StateSink {
 public:
  virtual ~StateSink() = default;
  virtual void on_state_record(capture::RecordData&& record) = 0;
};

// The StateSink of a state::State: upsert_*, remove_pod.
class StateApplier final : public StateSink {
 public:
  explicit StateApplier(state::State& st) : st_(st) {}
  void on_state_record(capture::RecordData&& record) override;

 private:
  state::State& st_;
};

struct CaptureSourceOptions {
  std::uint64_t until_ns = 0;  // done at the first event after this time (0: the end)
  // Called every ~64K records and at the end with (bytes read, total bytes or 0, events).
  std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> progress;
};

// Reads a capture file: events to the runner, state records to the sink, in
// file order. Done at the end (a capture cut off mid-write ends after its last
// whole block: truncated()), failed (bad input naming the file and offset) on
// a corrupt block. Its clock is the time of the last event read.
class CaptureSource final : public source::EventSource {
 public:
  struct Stats {
    std::uint64_t records = 0;
    std::uint64_t events = 0;
    std::uint64_t state_records = 0;
    std::uint64_t skipped_records = 0;  // record types this version does not know
  };

  CaptureSource(std::unique_ptr<capture::CaptureReader> reader, StateSink& sink, CaptureSourceOptions opts = {});

  std::string_view name() const override { return "capture"; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  std::uint64_t now_ns() const override { return last_ts_; }
  Health health() const override { return health_; }
  std::string failure() const override { return failure_; }
  std::vector<std::string> attached() const override { return {"capture"}; }

  const Stats& stats() const { return stats_; }
  const capture::CaptureReader& reader() const { return *reader_; }
  bool truncated() const { return reader_->truncated(); }

 private:
  void finish();
  std::unique_ptr<capture::CaptureReader> reader_;
  StateSink& sink_;
  CaptureSourceOptions opts_;
  capture::Record rec_;
  Stats stats_;
  std::uint64_t last_ts_ = 0;
  Health health_ = Health::kRunning;
  std::string failure_;
};

struct SelectOptions {
  std::uint64_t since_ns = 0;                   // events before: state only, no rules (0: from the start)
  std::string container;                        // container id or a prefix of it ("" = any)
  std::string pod;                              // "name" or "namespace/name" ("" = any)
  std::shared_ptr<const rules::Filter> filter;  // null = any
  // Called for each selected event, before the rules run on it.
  std::function<void(const event::Event&, const state::EvalContext&)> on_selected;
};

// Which events a replay reports (their alerts published, the events printed):
// --since, --container, --pod, --filter. Every event still updates the state
// (the pipeline does that either way), so context stays exact.
class ReplaySelector final : public pipeline::Selector {
 public:
  explicit ReplaySelector(SelectOptions opts) : opts_(std::move(opts)) {}
  bool select(const event::Event& ev, const state::EvalContext& ctx) override;
  std::uint64_t reported() const { return reported_; }

 private:
  bool matches(const state::EvalContext& ctx) const;
  SelectOptions opts_;
  std::uint64_t reported_ = 0;
};

}  // namespace vigil::runtime
