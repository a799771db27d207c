// A sink: one configured output (filters -> bounded queue -> worker thread ->
// format -> transport), with its counters.
//
//   Sink s(options, std::move(transport), log);
//   s.start();
//   s.offer(alert, bytes);      // never blocks: queued, filtered or dropped
//   s.shutdown(deadline);       // drain what can be sent before the deadline
//
// Delivery semantics (docs/outputs.md):
//   - offer() applies the filters (minimum priority, rules/tags include and
//     exclude, token-bucket rate limit) and pushes into a queue bounded in
//     events and bytes. A full queue drops the newest (default) or the oldest
//     alert and counts it in `dropped`.
//   - The worker sends batches (max events / bytes / delay). kRetry is
//     retried with capped exponential backoff and full jitter (or the peer's
//     Retry-After); without a spool, after max_attempts the batch is given up
//     and counted in `failed`. kFatal is given up at once (`failed`).
//   - With a spool, the spool is the sink's write-ahead log: a journal
//     thread appends every queued alert to it at once (fdatasync at most
//     every spool.sync_interval), and the worker sends from the log's head
//     and commits what was delivered. Nothing is given up for a transient
//     failure; a restart sends what the log holds first (at-least-once; the
//     uuid lets receivers de-duplicate). A kill -9 loses only the alerts not
//     yet appended (the queue between offer() and the journal); a power loss
//     also those appended since the last fdatasync.
//   - Every alert lost after the filters is counted under one DropReason and
//     logged (rate-limited).
//
// Thread-safety: offer() and stats() may be called from any thread;
// start()/shutdown() from the owner only. Owns its transport, worker and
// journal threads (SIGPIPE is blocked on the worker thread: a closed peer is an EPIPE).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/event/alert.h"
#include "outputs/format.h"
#include "outputs/spool.h"
#include "outputs/transport.h"

namespace spdlog {
class logger;
}

namespace vigil::outputs {

enum class Overflow : std::uint8_t { kDropNewest, kDropOldest };

struct FilterOptions {
  std::optional<event::Priority> min_priority;  // pass this priority and more severe
  std::vector<std::string> rules_include;       // empty: all rules
  std::vector<std::string> rules_exclude;
  std::vector<std::string> tags_include;  // empty: all; else any tag in the list
  std::vector<std::string> tags_exclude;  // any tag in the list suppresses
  double rate_per_s = 0;                  // 0: no rate limit
  double burst = 0;                       // bucket size (>= 1 when limited)
  // true: summaries of repeated alerts, not the repeats; false: every
  // repeat (Alert::repeat) and no summary (Alert::aggregate).
  bool aggregate = true;
};

// Decides whether a sink takes an alert. Thread-safe.
class Filter {
 public:
  // kOtherForm: the alert is a repeat for outputs that do not aggregate, or
  // a summary for those that do, and this sink has the other form (not
  // counted: the sink gets the same incident its own way).
  enum class Verdict : std::uint8_t { kPass, kFiltered, kRateLimited, kOtherForm };
  explicit Filter(FilterOptions o) : o_(std::move(o)), tokens_(o_.burst) {}
  Verdict check(const event::Alert& a, std::chrono::steady_clock::time_point now);

 private:
  FilterOptions o_;
  std::mutex mu_;
  double tokens_;                                 // guarded by mu_
  std::chrono::steady_clock::time_point last_{};  // guarded by mu_
};

struct RetryOptions {
  int max_attempts = 5;  // sends per batch before giving up (no spool); >= 1
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{30000};
};

struct BatchOptions {
  std::size_t max_events = 1;
  std::size_t max_bytes = 1 << 20;
  std::chrono::milliseconds max_delay{0};  // wait this long to fill a batch
};

struct SpoolOptions {
  std::string dir;  // empty: no spool
  std::uint64_t max_bytes = 256ULL << 20;
  // fdatasync the log at most this often (0: after every batch appended).
  std::chrono::milliseconds sync_interval{100};
};

enum class KeyKind : std::uint8_t { kHostname, kRule, kPod };

// Why an alert that passed a sink's filters never reached its destination.
// Every such alert is counted under exactly one reason.
enum class DropReason : std::uint8_t {
  kQueueFull,         // the memory queue was full (events or bytes)
  kRetriesExhausted,  // no spool: max_attempts sends all met a transient failure
  kRejected,          // the destination refused it for good (4xx, too large)
  kSpoolFull,         // the spool had no room left (spool.max_bytes)
  kSpoolError,        // the spool could not be written (I/O error)
  kTooLarge,          // larger than a spool record may be (64 MiB)
  kShutdown,          // no spool: still queued or in flight at the shutdown
                      // deadline, or published after shutdown
  kInternal,          // out of memory or an exception in the worker
};
inline constexpr std::size_t kDropReasonCount = 8;
std::string_view drop_reason_name(DropReason r);

struct SinkOptions {
  std::string name;  // unique per router, e.g. "kafka-1"
  std::string type;  // stdout, file, syslog, webhook, kafka
  Format format = Format::kJson;
  std::size_t queue_max_events = 10000;
  std::size_t queue_max_bytes = 64ULL << 20;
  Overflow overflow = Overflow::kDropNewest;
  FilterOptions filter;
  BatchOptions batch;
  RetryOptions retry;
  SpoolOptions spool;
  // While alerts are being dropped, one warning per this interval with the
  // count since the last one (and a last one at shutdown).
  std::chrono::milliseconds drop_log_interval{10000};
};

// Counters of one sink (monotonic since start, except the depths).
struct SinkStats {
  std::string name;
  std::string type;
  std::uint64_t sent = 0;          // delivered to the destination
  std::uint64_t failed = 0;        // rejected, retries exhausted, internal error
  std::uint64_t retried = 0;       // send attempts that got kRetry
  std::uint64_t dropped = 0;       // queue full, spool full/error/too large, shutdown
  std::uint64_t spooled = 0;       // written to the disk spool
  std::uint64_t filtered = 0;      // not for this sink (priority/rules/tags)
  std::uint64_t rate_limited = 0;  // suppressed by the rate limit
  std::uint64_t queue_depth = 0;   // alerts waiting now
  std::uint64_t queue_bytes = 0;
  std::uint64_t spool_depth = 0;  // alerts in the spool now
  std::uint64_t spool_bytes = 0;
  std::int64_t last_success_unix_ms = 0;  // the last delivery; 0: none yet
  // publish-to-delivered latency of sent alerts, microseconds.
  std::uint64_t latency_count = 0;
  std::uint64_t latency_p50_us = 0;
  std::uint64_t latency_p99_us = 0;
  std::uint64_t latency_max_us = 0;
  // failed send attempts (retried or given up) by cause, indexed by ErrorClass
  std::array<std::uint64_t, kErrorClassCount> errors{};
  // Every alert lost after the filters, by reason (indexed by DropReason);
  // failed + dropped == drops_total().
  std::array<std::uint64_t, kDropReasonCount> drops{};
  std::uint64_t drops_total() const;
  // "queue_full=149 retries_exhausted=25", only non-zero reasons; "" if none.
  std::string describe_drops() const;
};

// Approximate bytes an alert holds in memory (the queue's byte budget).
std::size_t alert_bytes(const event::Alert& a);

class Sink {
 public:
  Sink(SinkOptions o, std::unique_ptr<Transport> t, std::shared_ptr<spdlog::logger> log,
       std::unique_ptr<Spool> spool = nullptr);
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void start();
  // Gives the sink its spool after construction (a reload opens it once the
  // sink that held it has stopped). REQUIRES: before start(). Alerts offered
  // before start() wait in the queue and go to the spool first.
  void attach_spool(std::unique_ptr<Spool> spool);
  void offer(const std::shared_ptr<const event::Alert>& a, std::size_t bytes) noexcept;
  void shutdown(std::chrono::steady_clock::time_point deadline);
  SinkStats stats() const;
  const SinkOptions& options() const { return o_; }

 private:
  struct Item {
    std::shared_ptr<const event::Alert> alert;
    std::size_t bytes;
    std::uint64_t enqueued_ns;
  };
  void run();
  void run_loop();        // no spool: send from the queue
  void run_wal_sender();  // spool: send from the log's head (sink_wal.cpp)
  void run_journal();     // spool: append the queue to the log (sink_wal.cpp)
  void append_to_wal(std::vector<Message>& msgs);
  Message to_message(const Item& it) const;
  std::chrono::milliseconds backoff(int attempt);
  void record_sent(std::span<const Message> msgs);
  bool past_deadline() const;
  // Counts n alerts lost for `r` and logs, rate-limited, while drops go on.
  void drop(DropReason r, std::uint64_t n) noexcept;
  void log_drops() noexcept;  // the counts since the last line, if any

  SinkOptions o_;
  std::unique_ptr<Transport> transport_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<Spool> spool_;  // guarded by spool_mu_ (after start)
  std::mutex spool_mu_;           // never held while mu_ is wanted
  Filter filter_;

  mutable std::mutex mu_;
  std::condition_variable cv_;                        // queue_ and done_ changes
  std::condition_variable wal_cv_;                    // spool: the log grew, or the journal finished
  std::deque<Item> queue_;                            // guarded by mu_
  std::size_t queue_bytes_ = 0;                       // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  bool done_ = false;                                 // guarded by mu_: the worker has finished
  bool journal_done_ = false;                         // guarded by mu_: the journal has finished
  std::chrono::steady_clock::time_point deadline_{};  // guarded by mu_
  std::thread worker_;
  std::thread journal_;  // only with a spool
  std::mt19937_64 rng_;  // worker only

  std::atomic<std::int64_t> last_success_unix_ms_{0};
  std::atomic<std::uint64_t> sent_{0}, retried_{0}, spooled_{0}, filtered_{0}, rate_limited_{0}, spool_depth_{0},
      spool_bytes_{0};
  std::array<std::atomic<std::uint64_t>, kDropReasonCount> drops_{};
  std::size_t in_hand_ = 0;  // worker only: taken from the queue, not yet accounted for
  // Rate-limited drop warnings: the time of the last one, and the counts it reported.
  std::atomic<std::uint64_t> drop_log_ns_{0};
  std::mutex drop_log_mu_;
  std::array<std::uint64_t, kDropReasonCount> drops_logged_{};  // guarded by drop_log_mu_
  // log2 buckets of latency in microseconds
  std::array<std::atomic<std::uint64_t>, 40> latency_{};
  std::atomic<std::uint64_t> latency_max_us_{0};
  std::array<std::atomic<std::uint64_t>, kErrorClassCount> errors_{};
  void count_error(const SendResult& r) {
    if (r.code != SendCode::kOk) {
      errors_[static_cast<std::size_t>(r.error_class)].fetch_add(1, std::memory_order_relaxed);
    }
  }
};

}  // namespace vigil::outputs
