// Runner: the one event loop of `vigil run`, `vigil capture` and `vigil
// replay`. It owns the sources and drives each event through the pipeline;
// the CLI only turns flags and configuration into RunnerOptions, sources,
// ticks and taps.
//
//   auto runner = runtime::Runner::create(opts);   // first: blocks the signals
//   ... start threads, build the state, outputs, pipeline ...
//   (*runner)->add_source(std::move(sensor));
//   (*runner)->add_tick("capture flush", 0ns, [&](std::uint64_t) { writer.tick(); });
//   runtime::RunReport rep = (*runner)->run(pipeline);
//   (*runner)->close_sources();                    // detach probes, then flush outputs
//
// One turn of the loop: wait (epoll over the sources' wait_fd()s and the
// signalfd, at most opts.max_wait; no wait while a source has more to give),
// apply the feeds, poll every ready source for up to opts.budget events each,
// in the order they were added (each source's events stay in its order; a
// flooding source cannot starve the others; the feeds are applied again
// before each further source), read signals, run the ticks that are due,
// then check the stop conditions. Each event goes to pipeline.process()
// before the source's emit returns, so a source may hand state to the state
// (a capture's state records) between events and have it land in order.
//
// Feeds (add_feed) are state that another thread hands over, such as the
// pod watcher's pods: what was queued before a source is polled is applied
// before the events that poll hands over, so an event never loses to a pod
// announced before it; and a feed's eventfd wakes the loop, so an idle loop
// applies it at once, not at the end of opts.max_wait.
//
// Stops when: SIGINT/SIGTERM (exit 0); every source is done (0); an
// essential source failed (exit 1, or 2 when its error is bad input such as a
// corrupt capture; a source added as not essential, such as a plugin, is
// logged and dropped and the rest go on); opts.duration_ns of the runner's
// clock passed (0); opts.stop_when returned true (0); stop() was called.
//
// The runner's clock counts ns from the start of run(), following the
// sources' clocks (now_ns(): the wall clock for live sources, event time for
// a capture; 0 while a source does not know its time yet): it advances by
// the forward steps of the largest source clock, so a wall clock set back
// does not stall the ticks. Ticks and the duration are measured on it.
//
// Drops: every opts.drop_report the runner logs the events the sources lost
// since the last report (by source and reason); the report of run() has the
// totals for the shutdown line.
//
// Reload: SIGHUP (or request_reload(), e.g. from a file watch) starts
// opts.reload on a thread of the runner's own, so the loop goes on handing
// events to the rules in force while the new ones compile. When it is done
// the loop swaps the result in between two events: the ruleset, then the
// result's commit (the caller's other parts, such as the outputs), in one
// step (an error keeps everything as it was, and is logged and counted). A
// SIGHUP during a compile is coalesced: one more reload starts when the
// current one ends, so the files as they are after the last signal are the
// ones compiled. When run() ends during a compile, the compile's cancel flag
// is set and run() waits for it to return.
//
// Thread-safety: one thread (the one that calls run()); every callback but
// opts.reload runs on it (a Reloaded's commit too). Ownership: the runner
// owns its sources; the pipeline passed to run() must outlive the call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/source/source.h"
#include "engine/util/result.h"

namespace vigil::pipeline {
class Pipeline;
}
namespace vigil::rules {
class Ruleset;
}

namespace vigil::runtime {

// What a reload produced: the rules, and what else goes in force with them.
struct Reloaded {
  std::shared_ptr<const rules::Ruleset> rules;  // never null in a success
  // Runs on the loop thread right after the rules are swapped in, before the
  // next event (the outputs of `vigil run`); may be empty. Must not fail.
  std::function<void()> commit;
  std::string summary;  // added to the "reloaded" log line ("outputs: kept stdout-0")
};

struct RunnerOptions {
  std::size_t budget = 4096;                // events per source per turn
  std::chrono::milliseconds max_wait{100};  // longest wait for a source
  // SIGINT/SIGTERM stop and SIGHUP reloads, through a signalfd. The signals
  // are blocked in the thread that calls create(): create the runner before
  // any other thread starts, so every thread inherits the mask.
  // SIGUSR1, SIGUSR2, SIGALRM, SIGIO and SIGPWR, which would end the
  // process by default, are read too and ignored (logged).
  bool signals = true;
  std::uint64_t duration_ns = 0;         // stop after this much runner time (0: never)
  std::function<bool()> stop_when;       // checked every turn (capture --size)
  std::chrono::seconds drop_report{10};  // 0: no periodic drop report
  // SIGHUP: a new ruleset for the pipeline (and a commit of the caller's
  // own); an error keeps everything in force. Runs on the runner's reload
  // thread, one call at a time; it should give up soon once `cancel` is true
  // (rules::LoadOptions::cancel). Unset: SIGHUP is logged and ignored.
  std::function<Result<Reloaded>(const std::atomic<bool>& cancel)> reload;
  std::shared_ptr<spdlog::logger> log;  // null: nothing is logged
};

struct SourceDrops {
  std::string source;
  source::Drops drops;
};

struct RunReport {
  int exit_code = 0;               // 0 clean stop; 1 runtime failure; 2 bad input (a source's error)
  std::string reason;              // "SIGTERM", "done", "duration", "stop_when", a failure
  std::optional<Error> error;      // set when a source failed
  std::uint64_t events = 0;        // events the sources handed over
  std::vector<SourceDrops> drops;  // per source, cumulative
  std::uint64_t drops_total() const;
  // "bpf/ringbuf_full=3 kmsg/lost=1" (nonzero reasons), "none" when nothing was lost.
  std::string describe_drops() const;
};

// What the reloads did so far (SIGHUP or a watched file changed).
struct ReloadStats {
  std::uint64_t succeeded = 0;
  std::uint64_t failed = 0;
  std::int64_t last_unix_s = 0;  // when the last one ended; 0: none yet
  bool last_ok = true;
  std::string last_error;  // the last failure's message ("" if none)
};

// One source as the loop last saw it (published at most every 200 ms, and
// at once when its health changes), with its backlog read now.
struct SourceStatus {
  std::string name;
  bool essential = true;
  source::EventSource::Health health = source::EventSource::Health::kRunning;
  std::string failure;
  std::uint64_t events = 0;  // handed to the pipeline so far
  source::Drops drops;
  std::optional<source::Backlog> backlog;  // read when status() is called
};

// The loop's heartbeat and its sources, for /metrics and /healthz.
struct LoopStatus {
  bool running = false;  // inside run()
  std::uint64_t turns = 0;
  std::chrono::steady_clock::time_point last_turn{};  // the end of the last turn
  std::vector<SourceStatus> sources;
};

class Runner {
 public:
  // An error when the signalfd cannot be made.
  static Result<std::unique_ptr<Runner>> create(RunnerOptions opts);
  ~Runner();  // closes the sources; restores nothing (the signals stay blocked)
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // REQUIRES: before run(). Sources are polled in the order added. The
  // failure of an `essential` source stops the run; any other is dropped.
  void add_source(std::unique_ptr<source::EventSource> source, bool essential = true);
  // `fn(now_ns)` runs every `every` of the runner's clock (0: every turn),
  // on the loop thread, first at `every` after run() starts (every turn: at
  // the first turn).
  void add_tick(std::string name, std::chrono::nanoseconds every, std::function<void(std::uint64_t now_ns)> fn);

  // Runs until a stop condition (see the file comment).
  RunReport run(pipeline::Pipeline& pipe);

  // Ends run() after the current turn with `exit_code` (the first call wins).
  // From the loop thread (a tick, a tap, a source).
  void stop(int exit_code, std::string reason);
  // What a signal read from the signalfd does (SIGINT/SIGTERM: stop;
  // SIGHUP: reload). Public so that tests need no real signals.
  void on_signal(int signo);

  // Starts a reload as SIGHUP does (coalesced with one in progress); `why`
  // names the cause in the log ("SIGHUP", "vigil.yaml changed"). Loop thread.
  void request_reload(const std::string& why);
  // State fed from another thread: `apply` runs on the loop thread at the
  // start of every turn and before each source is polled (so it should cost
  // little when nothing is queued), and the loop wakes when `wake_fd` (an
  // eventfd owned by the caller, open until run() returns; -1: none) is
  // written. The runner reads the eventfd before it calls `apply`, so a
  // write made while `apply` runs wakes the next turn. REQUIRES: before
  // run(). An error when epoll refuses the fd.
  Status add_feed(std::string name, int wake_fd, std::function<void()> apply);
  // Calls `on_readable` on the loop thread whenever `fd` (owned by the
  // caller, open until run() returns) is readable: a file watch's inotify
  // fd. REQUIRES: before run(). An error when epoll refuses the fd.
  Status add_fd(std::string name, int fd, std::function<void()> on_readable);

  // Destroys the sources (detaching probes, closing files). run() may not be
  // called again.
  void close_sources();

  // Whether a reload is in progress: compiling, or done and not yet swapped
  // in (loop thread).
  bool reloading() const { return reload_thread_.joinable(); }
  // Waits until the compile in progress (if any) has returned; its result is
  // applied at the start of the next turn. From the loop thread (tests).
  void wait_reload_ForTest();

  // What every source attached or opened, for the "ready" line.
  std::vector<std::string> attached() const;
  std::uint64_t now_ns() const { return clock_ns_; }
  // Any thread (the metrics endpoint).
  ReloadStats reload_stats() const;
  // Any thread (the metrics endpoint, the health check).
  LoopStatus status() const;

 private:
  explicit Runner(RunnerOptions opts);
  struct Tick {
    std::string name;
    std::uint64_t every_ns;
    std::function<void(std::uint64_t)> fn;
    std::uint64_t due_ns = 0;
  };
  struct Slot {
    std::unique_ptr<source::EventSource> source;
    bool essential = true;
    bool ready = false;          // its fd was readable, or it has more to give
    bool active = true;          // not done, not failed
    std::uint64_t reported = 0;  // lost events already in a drop report
    std::uint64_t events = 0;    // handed to the pipeline
    source::EventSource::Health health = source::EventSource::Health::kRunning;  // at the last publish
  };
  // Each turn: the heartbeat, and the sources' status when due (or forced).
  void publish_status(bool force);
  void advance_clock();
  void poll_source(Slot& s, const source::EventSource::Emit& emit);
  void apply_feeds();
  void report_drops(bool final_report, RunReport& rep);
  int wait_ms() const;
  void start_reload(const std::string& why);
  void finish_reload();   // applies a finished compile's result, if there is one
  void abandon_reload();  // cancels and waits for the compile in progress

  RunnerOptions opts_;
  std::shared_ptr<spdlog::logger> log_;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<Tick> ticks_;
  pipeline::Pipeline* pipe_ = nullptr;  // during run()
  bool stopping_ = false;
  int exit_code_ = 0;
  std::string reason_;
  std::optional<Error> error_;
  std::uint64_t clock_ns_ = 0;     // the runner's clock
  std::uint64_t last_raw_ns_ = 0;  // the sources' clock at the last advance
  std::uint64_t last_drop_report_ns_ = 0;
  bool more_ = false;  // some source has more to give now
  // Reload: the compile runs on reload_thread_, which stores its result and
  // writes reload_fd_ (an eventfd the loop waits on) when done.
  int reload_fd_ = -1;
  std::thread reload_thread_;
  std::atomic<bool> reload_cancel_{false};
  std::mutex reload_mu_;
  std::optional<Result<Reloaded>> reload_result_;  // guarded by reload_mu_
  std::chrono::steady_clock::time_point reload_started_;
  bool reload_again_ = false;  // a SIGHUP came during the compile
  std::string again_why_;      // what asked for it
  struct FdWatch {
    std::string name;
    int fd;
    std::function<void()> on_readable;
  };
  std::vector<FdWatch> fds_;  // tagged kFdTagBase - index in the epoll set
  struct Feed {
    std::string name;
    int wake_fd;  // -1: none
    std::function<void()> apply;
  };
  std::vector<Feed> feeds_;  // wake fds tagged kFeedTagBase - index
  mutable std::mutex stats_mu_;
  ReloadStats reload_stats_;  // guarded by stats_mu_
  // status(): the loop publishes into published_ (guarded by stats_mu_);
  // sources_mu_ guards the slots' source pointers against close_sources()
  // and add_source() while another thread reads their backlog.
  mutable std::mutex sources_mu_;
  std::vector<SourceStatus> published_;
  std::size_t published_size_ = 0;  // slots at the last publish (loop thread)
  std::chrono::steady_clock::time_point last_publish_{};
  std::atomic<bool> running_{false};
  std::atomic<std::uint64_t> turns_{0};
  std::atomic<std::int64_t> last_turn_ns_{0};  // steady clock
};

}  // namespace vigil::runtime
