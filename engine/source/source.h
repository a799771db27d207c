// EventSource: where events come from. The live BPF sensor, the /dev/kmsg
// reader, a capture file being replayed and a plugin's source all implement
// it, and one Runner (engine/runtime/runner.h) drives any set of them through
// the pipeline. It sits below both: a source depends on it, never on the runtime.
//
//   class MySource final : public source::EventSource { ... };
//   runner.add_source(std::make_unique<MySource>(...));
//
// Contract:
// - poll() hands over the events waiting now, at most `budget` of them, and
//   never blocks for long: the runner waits on wait_fd() (epoll) between
//   polls. A source with no fd (wait_fd() < 0) is polled every loop turn.
// - Events go to `emit` in the source's order; the runner passes them to the
//   pipeline on its own thread (the only thread that calls a source, except
//   where a source says otherwise).
// - A source that has nothing more to give (a capture at its end, a plugin
//   that returned EOF) reports kDone; one that broke reports kFailed with a
//   one-line reason. The runner stops when every source is done, or (by
//   option) when any has failed.
// - drops() counts the events this source lost, by reason, cumulatively.
//
// Thread-safety: one thread (the runner's) unless a source documents more.
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/event/event.h"
#include "engine/util/result.h"

namespace vigil::source {

// Lost events by reason ("ringbuf_full", "queue_full", ...), cumulative.
struct Drops {
  std::vector<std::pair<std::string, std::uint64_t>> by_reason;
  std::uint64_t total() const {
    std::uint64_t t = 0;
    for (const auto& [_, n] : by_reason) t += n;
    return t;
  }
  void add(std::string reason, std::uint64_t n) { by_reason.emplace_back(std::move(reason), n); }
};

// What waits in a source's buffer (the BPF ring buffer, a plugin's queue),
// read without the source's thread: the metrics endpoint and the health
// check see a stuck reader even while the loop is stuck.
struct Backlog {
  std::uint64_t pending = 0;   // waiting to be read now
  std::uint64_t capacity = 0;  // what the buffer holds at most (0: unknown)
  std::uint64_t consumed = 0;  // read so far (monotonic)
  std::uint64_t produced = 0;  // written so far (monotonic)
  const char* unit = "bytes";  // of all four: "bytes" or "events"
};

class EventSource {
 public:
  enum class Health { kRunning, kDone, kFailed };
  using Emit = std::function<void(event::Event&&)>;

  virtual ~EventSource() = default;

  // "bpf", "kmsg", "capture", "plugin:nvml": for logs and metrics.
  virtual std::string_view name() const = 0;

  // Readable when events (or work such as a timer) wait; -1 when the source
  // has no fd and is polled each turn. Stable for the source's life.
  virtual int wait_fd() const { return -1; }

  // Hands up to `budget` waiting events to `emit`; returns how many, or an
  // Error (which also makes health() kFailed).
  virtual Result<std::size_t> poll(std::size_t budget, const Emit& emit) = 0;

  // The source's clock, ns since the Unix epoch: the wall clock for live
  // sources, the time of the last event read for a capture. Ticks (capture
  // flushes, drop reports) follow it.
  virtual std::uint64_t now_ns() const {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
  }

  virtual Health health() const { return Health::kRunning; }
  virtual std::string failure() const { return {}; }  // why kFailed

  virtual Drops drops() const { return {}; }

  // ANY THREAD, also while poll() runs on the loop thread. nullopt: the
  // source has no buffer it can measure.
  virtual std::optional<Backlog> backlog() const { return std::nullopt; }

  // What it attached or opened, for the "ready" line ("tp:sched_process_exec",
  // "kmsg:/dev/kmsg", "plugin:nvml").
  virtual std::vector<std::string> attached() const { return {}; }
};

}  // namespace vigil::source
