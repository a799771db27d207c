#include "outputs/sink.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <bit>
#include <exception>

namespace vigil::outputs {
namespace {

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool any_of_tags(const std::vector<std::string>& want, const std::vector<std::string>& tags) {
  for (const auto& t : tags) {
    if (contains(want, t)) return true;
  }
  return false;
}

}  // namespace

std::string_view error_class_name(ErrorClass c) {
  switch (c) {
    case ErrorClass::kConnect: return "connect";
    case ErrorClass::kTimeout: return "timeout";
    case ErrorClass::kTls: return "tls";
    case ErrorClass::kThrottled: return "throttled";
    case ErrorClass::kHttpServer: return "http_5xx";
    case ErrorClass::kHttpClient: return "http_4xx";
    case ErrorClass::kRejected: return "rejected";
    case ErrorClass::kOther: return "other";
  }
  return "other";
}

std::string_view drop_reason_name(DropReason r) {
  switch (r) {
    case DropReason::kQueueFull: return "queue_full";
    case DropReason::kRetriesExhausted: return "retries_exhausted";
    case DropReason::kRejected: return "rejected";
    case DropReason::kSpoolFull: return "spool_full";
    case DropReason::kSpoolError: return "spool_error";
    case DropReason::kTooLarge: return "too_large";
    case DropReason::kShutdown: return "shutdown";
    case DropReason::kInternal: return "internal";
  }
  return "internal";
}

std::uint64_t SinkStats::drops_total() const {
  std::uint64_t t = 0;
  for (std::uint64_t n : drops) t += n;
  return t;
}

std::string SinkStats::describe_drops() const {
  std::string out;
  for (std::size_t i = 0; i < kDropReasonCount; ++i) {
    if (drops[i] == 0) continue;
    if (!out.empty()) out += ' ';
    out += drop_reason_name(static_cast<DropReason>(i));
    out += '=' + std::to_string(drops[i]);
  }
  return out;
}

Filter::Verdict Filter::check(const event::Alert& a, std::chrono::steady_clock::time_point now) {
  if (a.heartbeat) return Verdict::kPass;  // filtered out, its absence would look like a dead agent
  if (o_.aggregate ? a.repeat : a.aggregate.has_value()) return Verdict::kOtherForm;
  if (o_.min_priority && static_cast<int>(a.priority) > static_cast<int>(*o_.min_priority)) {
    return Verdict::kFiltered;
  }
  if (!o_.rules_include.empty() && !contains(o_.rules_include, a.rule)) return Verdict::kFiltered;
  if (contains(o_.rules_exclude, a.rule)) return Verdict::kFiltered;
  if (!o_.tags_include.empty() && !any_of_tags(o_.tags_include, a.tags)) return Verdict::kFiltered;
  if (!o_.tags_exclude.empty() && any_of_tags(o_.tags_exclude, a.tags)) return Verdict::kFiltered;
  if (o_.rate_per_s <= 0) return Verdict::kPass;
  std::lock_guard lk(mu_);
  if (last_.time_since_epoch().count() != 0) {
    const double secs = std::chrono::duration<double>(now - last_).count();
    if (secs > 0) tokens_ = std::min(o_.burst, tokens_ + secs * o_.rate_per_s);
  }
  last_ = now;
  if (tokens_ < 1.0) return Verdict::kRateLimited;
  tokens_ -= 1.0;
  return Verdict::kPass;
}

std::size_t alert_bytes(const event::Alert& a) {
  std::size_t n =
      sizeof(event::Alert) + a.rule.size() + a.output.size() + a.hostname.size() + a.source.size() + a.uuid.size();
  for (const auto& t : a.tags) n += t.size() + sizeof(std::string);
  for (const auto& [k, v] : a.output_fields) {
    n += k.size() + sizeof(std::pair<std::string, event::FieldValue>);
    if (const auto* s = std::get_if<std::string>(&v)) n += s->size();
    if (const auto* l = std::get_if<std::vector<std::string>>(&v)) {
      for (const auto& e : *l) n += e.size() + sizeof(std::string);
    }
  }
  for (const auto& [k, v] : a.extra) n += k.size() + v.size() + 2 * sizeof(std::string);
  return n;
}

Sink::Sink(SinkOptions o, std::unique_ptr<Transport> t, std::shared_ptr<spdlog::logger> log,
           std::unique_ptr<Spool> spool)
    : o_(std::move(o)),
      transport_(std::move(t)),
      log_(std::move(log)),
      spool_(std::move(spool)),
      filter_(o_.filter),
      rng_(std::random_device{}()) {
  if (o_.retry.max_attempts < 1) o_.retry.max_attempts = 1;
  if (o_.batch.max_events < 1) o_.batch.max_events = 1;
  if (spool_) {
    spool_depth_ = spool_->count();
    spool_bytes_ = spool_->bytes();
  }
}

Sink::~Sink() {
  if (worker_.joinable()) shutdown(std::chrono::steady_clock::now());
}

void Sink::attach_spool(std::unique_ptr<Spool> spool) {
  spool_ = std::move(spool);
  if (spool_) {
    spool_depth_ = spool_->count();
    spool_bytes_ = spool_->bytes();
  }
}

void Sink::start() {
  if (spool_) journal_ = std::thread([this] { run_journal(); });
  worker_ = std::thread([this] { run(); });
}

void Sink::offer(const std::shared_ptr<const event::Alert>& a, std::size_t bytes) noexcept {
  switch (filter_.check(*a, std::chrono::steady_clock::now())) {
    case Filter::Verdict::kFiltered: filtered_.fetch_add(1, std::memory_order_relaxed); return;
    case Filter::Verdict::kRateLimited: rate_limited_.fetch_add(1, std::memory_order_relaxed); return;
    case Filter::Verdict::kOtherForm: return;
    case Filter::Verdict::kPass: break;
  }
  {
    std::lock_guard lk(mu_);
    if (stopping_) {
      drop(DropReason::kShutdown, 1);
      return;
    }
    auto full = [&] {
      return !queue_.empty() && (queue_.size() >= o_.queue_max_events || queue_bytes_ + bytes > o_.queue_max_bytes);
    };
    if (full()) {
      if (o_.overflow == Overflow::kDropNewest) {
        drop(DropReason::kQueueFull, 1);
        return;
      }
      while (full()) {  // drop_oldest: make room for this alert
        drop(DropReason::kQueueFull, 1);
        queue_bytes_ -= queue_.front().bytes;
        queue_.pop_front();
      }
    }
    try {
      queue_.push_back(Item{a, bytes, steady_ns()});
    } catch (...) {  // out of memory: counted, never propagated to the pipeline
      drop(DropReason::kInternal, 1);
      return;
    }
    queue_bytes_ += bytes;
  }
  cv_.notify_one();
}

void Sink::shutdown(std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lk(mu_);
    if (!stopping_) {
      stopping_ = true;
      deadline_ = deadline;
    }
  }
  cv_.notify_all();
  wal_cv_.notify_all();
  if (!worker_.joinable()) {
    log_drops();
    return;
  }
  {
    // A send that outlives the deadline (a stalled peer) is interrupted.
    std::unique_lock lk(mu_);
    if (!cv_.wait_until(lk, deadline, [this] { return done_; })) {
      lk.unlock();
      transport_->interrupt();
    }
  }
  worker_.join();
  if (journal_.joinable()) journal_.join();
  log_drops();
}

void Sink::drop(DropReason r, std::uint64_t n) noexcept {
  if (n == 0) return;
  drops_[static_cast<std::size_t>(r)].fetch_add(n, std::memory_order_relaxed);
  if (!log_) return;
  const std::uint64_t now = steady_ns();
  std::uint64_t last = drop_log_ns_.load(std::memory_order_relaxed);
  const auto every =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(o_.drop_log_interval).count());
  if (last != 0 && now - last < every) return;
  // One thread wins the interval; the others only count.
  if (!drop_log_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  log_drops();
}

void Sink::log_drops() noexcept {
  try {
    std::lock_guard lk(drop_log_mu_);
    std::string what;
    std::uint64_t delta = 0, total = 0;
    for (std::size_t i = 0; i < kDropReasonCount; ++i) {
      const std::uint64_t now = drops_[i].load(std::memory_order_relaxed);
      const std::uint64_t d = now - drops_logged_[i];
      drops_logged_[i] = now;
      total += now;
      if (d == 0) continue;
      delta += d;
      if (!what.empty()) what += ' ';
      what += std::string(drop_reason_name(static_cast<DropReason>(i))) + '=' + std::to_string(d);
    }
    if (delta == 0 || !log_) return;
    log_->warn("output {}: {} alerts dropped ({}); {} dropped since start", o_.name, delta, what, total);
  } catch (...) {  // logging must never take the pipeline down
  }
}

bool Sink::past_deadline() const { return std::chrono::steady_clock::now() >= deadline_; }

Message Sink::to_message(const Item& it) const {
  const event::Alert& a = *it.alert;
  Message m;
  m.body = format_alert(o_.format, a);
  m.uuid = a.uuid;
  m.rule = a.rule;
  m.priority = std::string(event::priority_name(a.priority));
  m.hostname = a.hostname;
  for (const auto& [k, v] : a.output_fields) {
    if (k == "k8s.pod.name") {
      if (const auto* s = std::get_if<std::string>(&v)) m.pod = *s;
      break;
    }
  }
  m.enqueued_ns = it.enqueued_ns;
  m.time_ns = a.time_ns;
  return m;
}

std::chrono::milliseconds Sink::backoff(int attempt) {
  // Capped exponential backoff with full jitter: uniform in [0, min(cap, base*2^n)].
  const auto base = std::max<std::int64_t>(1, o_.retry.initial_backoff.count());
  const auto cap = std::max<std::int64_t>(base, o_.retry.max_backoff.count());
  const int shift = std::min(attempt, 30);
  const std::int64_t ceiling = std::min<std::int64_t>(cap, base << shift);
  std::uniform_int_distribution<std::int64_t> d(0, ceiling);
  return std::chrono::milliseconds(d(rng_));
}

void Sink::record_sent(std::span<const Message> msgs) {
  sent_.fetch_add(msgs.size(), std::memory_order_relaxed);
  last_success_unix_ms_.store(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count(),
      std::memory_order_relaxed);
  const std::uint64_t now = steady_ns();
  for (const auto& m : msgs) {
    if (m.enqueued_ns == 0 || now < m.enqueued_ns) continue;
    const std::uint64_t us = (now - m.enqueued_ns) / 1000;
    const std::size_t b = std::min<std::size_t>(std::bit_width(us), latency_.size() - 1);
    latency_[b].fetch_add(1, std::memory_order_relaxed);
    std::uint64_t prev = latency_max_us_.load(std::memory_order_relaxed);
    while (us > prev && !latency_max_us_.compare_exchange_weak(prev, us)) {}
  }
}

void Sink::run() {
  // A peer that closes its end must cost a write error (EPIPE), never the
  // process: SIGPIPE is blocked on this worker thread (TLS libraries write
  // with plain write(2)).
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  // The worker must not die: an exception (out of memory while formatting)
  // costs the batch in hand, counted as failed, and the loop goes on.
  for (;;) {
    try {
      if (spool_) run_wal_sender();
      else run_loop();
      break;
    } catch (const std::exception& e) {
      if (!spool_) drop(DropReason::kInternal, std::max<std::size_t>(1, in_hand_));
      in_hand_ = 0;  // with a spool the batch is still in the log
      if (log_) log_->error("output {}: {}", o_.name, e.what());
    } catch (...) {
      if (!spool_) drop(DropReason::kInternal, std::max<std::size_t>(1, in_hand_));
      in_hand_ = 0;
    }
  }
  {
    std::lock_guard lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

void Sink::run_loop() {
  std::unique_lock lk(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) break;
      cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
      continue;
    }
    // Give a batch a moment to fill.
    if (o_.batch.max_delay.count() > 0 && queue_.size() < o_.batch.max_events && !stopping_) {
      const auto until = std::chrono::steady_clock::now() + o_.batch.max_delay;
      cv_.wait_until(lk, until, [this] {
        return stopping_ || queue_.size() >= o_.batch.max_events || queue_bytes_ >= o_.batch.max_bytes;
      });
    }
    std::vector<Item> items;
    std::size_t bytes = 0;
    while (!queue_.empty() && items.size() < o_.batch.max_events &&
           (items.empty() || bytes + queue_.front().bytes <= o_.batch.max_bytes)) {
      bytes += queue_.front().bytes;
      queue_bytes_ -= queue_.front().bytes;
      items.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    in_hand_ = items.size();
    lk.unlock();

    std::vector<Message> msgs;
    msgs.reserve(items.size());
    for (const auto& it : items) msgs.push_back(to_message(it));
    items.clear();
    std::size_t done = 0;
    for (int attempt = 0;;) {
      std::span<const Message> rest(msgs.data() + done, msgs.size() - done);
      SendResult r = transport_->send(rest);
      count_error(r);
      std::size_t n = std::min(r.delivered, rest.size());
      if (r.code == SendCode::kOk) n = rest.size();
      record_sent(rest.subspan(0, n));
      done += n;
      in_hand_ = msgs.size() - done;
      if (r.code == SendCode::kOk || done == msgs.size()) break;
      if (r.code == SendCode::kFatal) {
        const std::size_t rejected = std::min(r.rejected, msgs.size() - done);
        drop(DropReason::kRejected, rejected);
        if (log_) log_->warn("output {}: giving up on {} alerts: {}", o_.name, rejected, r.error);
        done += rejected;
        in_hand_ = msgs.size() - done;
        if (done == msgs.size()) break;
        attempt = 0;
        continue;  // the rest of the batch was not rejected: send it
      }
      retried_.fetch_add(1, std::memory_order_relaxed);
      if (++attempt >= o_.retry.max_attempts) {
        drop(DropReason::kRetriesExhausted, msgs.size() - done);
        if (log_)
          log_->warn("output {}: giving up on {} alerts after {} attempts: {}", o_.name, msgs.size() - done, attempt,
                     r.error);
        break;
      }
      const auto wait = r.retry_after.count() > 0 ? r.retry_after : backoff(attempt - 1);
      std::unique_lock wl(mu_);
      auto until = std::chrono::steady_clock::now() + wait;
      if (stopping_) until = std::min(until, deadline_);
      cv_.wait_until(wl, until, [&] { return stopping_ && past_deadline(); });
      if (stopping_ && past_deadline()) {
        drop(DropReason::kShutdown, msgs.size() - done);
        break;
      }
    }
    in_hand_ = 0;
    lk.lock();
    if (stopping_ && past_deadline()) break;
  }
  // Out of time (or done): whatever is still queued is counted.
  std::deque<Item> left;
  left.swap(queue_);
  queue_bytes_ = 0;
  lk.unlock();
  drop(DropReason::kShutdown, left.size());
  transport_->close();
}

SinkStats Sink::stats() const {
  SinkStats s;
  s.name = o_.name;
  s.type = o_.type;
  s.sent = sent_.load();
  s.last_success_unix_ms = last_success_unix_ms_.load();
  s.retried = retried_.load();
  for (std::size_t i = 0; i < kDropReasonCount; ++i) {
    s.drops[i] = drops_[i].load(std::memory_order_relaxed);
    switch (static_cast<DropReason>(i)) {
      case DropReason::kRejected:
      case DropReason::kRetriesExhausted:
      case DropReason::kInternal: s.failed += s.drops[i]; break;
      default: s.dropped += s.drops[i];
    }
  }
  s.spooled = spooled_.load();
  s.filtered = filtered_.load();
  s.rate_limited = rate_limited_.load();
  s.spool_depth = spool_depth_.load();
  s.spool_bytes = spool_bytes_.load();
  {
    std::lock_guard lk(mu_);
    s.queue_depth = queue_.size();
    s.queue_bytes = queue_bytes_;
  }
  std::array<std::uint64_t, 40> h{};
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = latency_[i].load(std::memory_order_relaxed);
    s.latency_count += h[i];
  }
  auto pct = [&](double p) -> std::uint64_t {
    if (s.latency_count == 0) return 0;
    const auto want = static_cast<std::uint64_t>(p * static_cast<double>(s.latency_count - 1)) + 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      seen += h[i];
      if (seen >= want) return i == 0 ? 0 : (1ULL << i) - 1;  // bucket's upper bound
    }
    return 0;
  };
  s.latency_p50_us = pct(0.50);
  s.latency_p99_us = pct(0.99);
  s.latency_max_us = latency_max_us_.load();
  for (std::size_t i = 0; i < kErrorClassCount; ++i) s.errors[i] = errors_[i].load();
  return s;
}

}  // namespace vigil::outputs
