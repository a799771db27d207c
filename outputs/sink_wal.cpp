// A sink with a spool: the spool is a write-ahead log between the queue and
// the destination (see sink.h).
//
//   offer() -> queue -> journal thread: format, append, fdatasync (batched)
//                                     -> log -> worker: peek, send, pop (commit)
//
// The journal never waits on the destination, so the queue in memory stays
// near empty however slow the destination is; what a kill -9 can lose is that
// queue. Lock order: mu_ is never taken while spool_mu_ is held.
#include <spdlog/logger.h>

#include <algorithm>
#include <exception>

#include "outputs/sink.h"

namespace vigil::outputs {

// Journal thread only. Appends `msgs` in order; what the log refuses is
// counted by reason.
void Sink::append_to_wal(std::vector<Message>& msgs) {
  std::uint64_t ok = 0;
  std::lock_guard sl(spool_mu_);
  for (Message& m : msgs) {
    if (Status st = spool_->append(m); st) {
      ++ok;
      continue;
    } else {
      switch (spool_->last_refusal()) {
        case Spool::Refusal::kFull: drop(DropReason::kSpoolFull, 1); break;
        case Spool::Refusal::kTooLarge: drop(DropReason::kTooLarge, 1); break;
        default:
          drop(DropReason::kSpoolError, 1);
          if (log_) log_->warn("output {}: spool: {}", o_.name, st.error().message);
      }
    }
  }
  spooled_.fetch_add(ok, std::memory_order_relaxed);
  spool_depth_ = spool_->count();
  spool_bytes_ = spool_->bytes();
}

void Sink::run_journal() {
  using Clock = std::chrono::steady_clock;
  auto last_sync = Clock::now();
  bool unsynced = false;
  auto sync = [&] {
    spool_->sync();  // only this thread writes or replaces the tail file
    last_sync = Clock::now();
    unsynced = false;
  };
  std::unique_lock lk(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (unsynced && Clock::now() >= last_sync + o_.spool.sync_interval) {
        lk.unlock();
        sync();
        lk.lock();
        continue;
      }
      if (stopping_) break;
      auto ready = [this] { return stopping_ || !queue_.empty(); };
      if (unsynced) cv_.wait_until(lk, last_sync + o_.spool.sync_interval, ready);
      else cv_.wait(lk, ready);
      continue;
    }
    std::deque<Item> items;
    items.swap(queue_);
    queue_bytes_ = 0;
    lk.unlock();
    try {
      std::vector<Message> msgs;
      msgs.reserve(items.size());
      for (const Item& it : items) msgs.push_back(to_message(it));
      items.clear();
      append_to_wal(msgs);
      unsynced = true;
      if (Clock::now() >= last_sync + o_.spool.sync_interval) sync();
    } catch (const std::exception& e) {  // out of memory: this batch is lost, counted
      drop(DropReason::kInternal, std::max<std::size_t>(1, items.size()));
      if (log_) log_->error("output {}: {}", o_.name, e.what());
    }
    lk.lock();
    wal_cv_.notify_all();  // under mu_: the worker cannot miss it
  }
  lk.unlock();
  if (unsynced) sync();
  lk.lock();
  journal_done_ = true;
  wal_cv_.notify_all();
}

// The worker with a spool: sends the log's head with backoff until the log
// is empty, then waits for the journal. At shutdown it delivers until the
// deadline; what is left stays in the log for the next start.
void Sink::run_wal_sender() {
  using Clock = std::chrono::steady_clock;
  int attempt = 0;
  auto next_try = Clock::now();
  std::unique_lock lk(mu_);
  for (;;) {
    if (stopping_ && past_deadline()) break;
    if (spool_depth_.load() == 0) {
      if (stopping_ && journal_done_) break;
      auto until = stopping_ ? deadline_ : Clock::time_point::max();
      wal_cv_.wait_until(
          lk, until, [this] { return spool_depth_.load() > 0 || (stopping_ && (journal_done_ || past_deadline())); });
      continue;
    }
    if (Clock::now() < next_try) {
      auto until = stopping_ ? std::min(next_try, deadline_) : next_try;
      wal_cv_.wait_until(lk, until, [this] { return stopping_ && past_deadline(); });
      continue;
    }
    // Give a batch a moment to fill.
    if (o_.batch.max_delay.count() > 0 && spool_depth_.load() < o_.batch.max_events && !stopping_) {
      wal_cv_.wait_until(lk, Clock::now() + o_.batch.max_delay,
                         [this] { return stopping_ || spool_depth_.load() >= o_.batch.max_events; });
    }
    lk.unlock();
    std::vector<Message> batch;
    {
      std::lock_guard sl(spool_mu_);
      batch = spool_->peek(o_.batch.max_events, o_.batch.max_bytes);
      spool_depth_ = spool_->count();
      spool_bytes_ = spool_->bytes();
    }
    if (batch.empty()) {
      lk.lock();
      continue;
    }
    SendResult r = transport_->send(batch);
    count_error(r);
    std::size_t done = std::min(r.delivered, batch.size());
    if (r.code == SendCode::kOk) done = batch.size();
    record_sent(std::span<const Message>(batch.data(), done));
    if (r.code == SendCode::kFatal && done < batch.size()) {
      const std::size_t n = std::min(r.rejected, batch.size() - done);
      drop(DropReason::kRejected, n);
      if (log_) log_->warn("output {}: giving up on {} alerts: {}", o_.name, n, r.error);
      done += n;
    }
    if (done > 0) {
      std::lock_guard sl(spool_mu_);
      if (Status st = spool_->pop(done); !st && log_) {
        log_->warn("output {}: spool: {}", o_.name, st.error().message);
      }
      spool_depth_ = spool_->count();
      spool_bytes_ = spool_->bytes();
    }
    if (r.code == SendCode::kRetry) {
      retried_.fetch_add(1, std::memory_order_relaxed);
      const auto wait = r.retry_after.count() > 0 ? r.retry_after : backoff(attempt++);
      next_try = Clock::now() + wait;
      if (log_ && attempt == 1) log_->warn("output {}: {} (kept in the spool)", o_.name, r.error);
    } else {
      attempt = 0;
      next_try = Clock::now();
    }
    lk.lock();
  }
  lk.unlock();
  transport_->close();
}

}  // namespace vigil::outputs
