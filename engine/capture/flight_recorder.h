// The flight recorder: keeps the last few seconds of events in memory and,
// when an alert at or above a configured priority fires, or an alert tagged
// `prevented` or `responded` (docs/prevention.md) whatever its priority,
// writes a capture of
// the window before the alert and a configured time after it, limited to the
// alert's pod (its container outside Kubernetes, its process tree on the host).
// The alert names the file: alert.extra {"capture", "<path>"}.
//
//   capture::FlightRecorder fr(opts);                  // starts the writer thread
//   fr.on_event(ev, ctx);                              // every event (pipeline thread)
//   fr.on_alert(ev, ctx, alert);                       // every alert, before publishing
//   fr.finish();                                       // at shutdown: write what is pending
//
// Each capture begins with the node's NVIDIA inventory (the last on_nvidia),
// so GPU allocations and gpu.* fields resolve on replay as they did live.
//
// Bounds: the window holds at most opts.max_bytes of encoded events (plus a
// bounded cache of the state records they need and one NVIDIA inventory); at most opts.max_captures
// captures are collecting or waiting to be written at once (an alert beyond
// that gets no capture and is counted in stats().dropped); the directory keeps
// at most opts.keep files and opts.max_disk_bytes bytes (oldest removed first).
//
// Never blocks detection: files are compressed and written on the recorder's
// own thread; the pipeline thread only copies encoded bytes.
//
// Files: opts.dir is made 0700 if missing (util::make_dirs); each capture is
// written 0640 to NAME.tmp (never through a link: a link there fails that
// capture, counted in stats().failed), then renamed to NAME.
//
// Times are event times (Header::ts_ns), so the recorder behaves the same in
// replay and in tests. A capture whose "after" window has not ended is
// completed by the first event past it, or by finish().
//
// Thread-safety: on_event/on_alert/finish from one thread (the pipeline's);
// stats() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/capture/format.h"
#include "engine/event/alert.h"
#include "engine/state/model.h"
#include "engine/state/state.h"

namespace vigil::capture {

struct FlightRecorderOptions {
  bool enabled = true;
  std::string dir = "/var/lib/vigil/flight";
  std::uint64_t window_ns = 30'000'000'000;                   // kept before an alert
  std::uint64_t after_ns = 5'000'000'000;                     // recorded after an alert
  std::size_t max_bytes = 16u << 20;                          // memory for the window (encoded events)
  std::size_t max_state_entries = 16384;                      // cached processes/containers/pods, each
  event::Priority min_priority = event::Priority::kCritical;  // this or more severe
  std::size_t keep = 20;                                      // capture files kept in dir
  std::uint64_t max_disk_bytes = 256ull << 20;                // bytes of capture files kept in dir
  std::size_t max_captures = 4;                               // collecting + queued at once
  int zstd_level = 3;
  FileInfo info = {};  // header; describe_host() when left empty
};

class FlightRecorder final : public state::StateListener {
 public:
  struct Stats {
    std::uint64_t events = 0;    // events seen
    std::uint64_t evicted = 0;   // events dropped from the window (too old or over max_bytes)
    std::uint64_t captures = 0;  // capture files written
    std::uint64_t dropped = 0;   // alerts that got no capture (limits reached)
    std::uint64_t failed = 0;    // capture files that could not be written
    std::uint64_t removed = 0;   // old capture files removed to respect keep/max_disk_bytes
    std::size_t window_bytes = 0;
  };

  explicit FlightRecorder(FlightRecorderOptions opts);
  ~FlightRecorder() override;  // finish()es
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // `ctx` is the state's view of this event (proc/container/pod may be null).
  void on_event(const event::Event& ev, const state::EvalContext& ctx);
  // Starts a capture for an alert at or above min_priority, or tagged
  // `prevented` or `responded` at any priority; adds
  // alert.extra {"capture", path}. The capture includes `ev` itself.
  void on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert);
  // state::StateListener: out-of-band state changes (pipeline thread).
  void on_container(const state::Container& c) override;
  void on_pod(const state::Pod& p) override;
  void on_pod_removed(const std::string& uid) override;
  void on_process(const state::Process& p) override;
  // The node's NVIDIA devices: written first in every later capture, and into
  // the captures still collecting (in order with their events).
  void on_nvidia(const state::NvidiaInfo& n) override;

  // Completes the captures still collecting, waits until every queued capture
  // is on disk. Later calls to on_event/on_alert are ignored.
  void finish();
  // Waits until every capture already handed to the writer thread is on disk
  // (captures still collecting their "after" window are not waited for).
  void drain();

  Stats stats() const;

 private:
  struct Entry;
  struct Pending;
  struct Job;

  void evict(std::uint64_t now_ts);
  void prune_state(std::uint64_t oldest_ts);
  void remember_state(const event::Event& ev, const state::EvalContext& ctx);
  bool matches(const Pending& p, const Entry& e) const;
  void add_to_pending(Pending& p, const Entry& e);
  void complete(Pending& p);
  void writer_loop();
  void write_job(Job& job);
  void enforce_disk_limits();

  FlightRecorderOptions opts_;
  std::deque<Entry> window_;  // pipeline thread only
  std::size_t window_bytes_ = 0;
  std::uint64_t newest_ts_ = 0;
  struct Cached;
  std::unordered_map<std::uint32_t, std::unique_ptr<Cached>> processes_;
  std::unordered_map<std::string, std::unique_ptr<Cached>> containers_;  // by id
  std::unordered_map<std::string, std::unique_ptr<Cached>> pods_;        // by uid
  std::unordered_map<std::uint64_t, std::string> cgroup_to_container_;
  std::optional<state::NvidiaInfo> nvidia_;  // the last on_nvidia
  std::vector<std::unique_ptr<Pending>> pending_;
  std::uint64_t seq_ = 0;
  bool finished_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::unique_ptr<Job>> queue_;  // guarded by mu_
  bool writing_ = false;                    // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::atomic<std::uint64_t> events_{0}, evicted_{0}, captures_{0}, dropped_{0}, failed_{0}, removed_{0};
  std::atomic<std::size_t> window_bytes_pub_{0};
  std::thread thread_;
};

}  // namespace vigil::capture
