#include "engine/runtime/runner.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>

#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"

namespace vigil::runtime {
namespace {

constexpr std::uint64_t kSignalTag = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kReloadTag = kSignalTag - 1;
// add_fd()'s fds: kFdTagBase - index (sources are tagged by their index from 0).
constexpr std::uint64_t kFdTagBase = kSignalTag - 2;
constexpr std::size_t kMaxFds = 64;
// add_feed()'s wake fds: kFeedTagBase - index.
constexpr std::uint64_t kFeedTagBase = kFdTagBase - kMaxFds;
constexpr std::size_t kMaxFeeds = 16;
// A source without an fd that gave nothing is polled again after this long.
constexpr int kIdlePollMs = 10;

// Adds fd to the epoll set, readable events tagged with `tag`; false with errno set.
bool watch(int epoll_fd, int fd, std::uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

std::uint64_t wall_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
    case SIGIO: return "SIGIO";
    case SIGPWR: return "SIGPWR";
    default: return "signal";
  }
}

}  // namespace

std::uint64_t RunReport::drops_total() const {
  std::uint64_t t = 0;
  for (const SourceDrops& s : drops) t += s.drops.total();
  return t;
}

std::string RunReport::describe_drops() const {
  std::string out;
  for (const SourceDrops& s : drops) {
    for (const auto& [reason, n] : s.drops.by_reason) {
      if (n == 0) continue;
      out += (out.empty() ? "" : " ") + s.source + "/" + reason + "=" + std::to_string(n);
    }
  }
  return out.empty() ? "none" : out;
}

Runner::Runner(RunnerOptions opts) : opts_(std::move(opts)), log_(opts_.log) {
  if (opts_.budget == 0) opts_.budget = 1;
}

Runner::~Runner() {
  abandon_reload();
  close_sources();
  if (reload_fd_ >= 0) close(reload_fd_);
  if (signal_fd_ >= 0) close(signal_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Result<std::unique_ptr<Runner>> Runner::create(RunnerOptions opts) {
  std::unique_ptr<Runner> r(new Runner(std::move(opts)));
  r->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (r->epoll_fd_ < 0) return Error::runtime(std::string("runner: epoll: ") + std::strerror(errno));
  r->reload_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->reload_fd_ < 0) return Error::runtime(std::string("runner: eventfd: ") + std::strerror(errno));
  if (!watch(r->epoll_fd_, r->reload_fd_, kReloadTag)) {
    return Error::runtime(std::string("runner: epoll_ctl: ") + std::strerror(errno));
  }
  if (r->opts_.signals) {
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    // Signals whose default action would end vigil and that it has no use
    // for: read and ignored, so that a stray or hostile one does not blind
    // the node (the sensor reports who sent it: the vigil_signal event).
    for (int sig : {SIGUSR1, SIGUSR2, SIGALRM, SIGIO, SIGPWR}) sigaddset(&sigs, sig);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    r->signal_fd_ = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (r->signal_fd_ < 0) return Error::runtime(std::string("runner: signalfd: ") + std::strerror(errno));
    if (!watch(r->epoll_fd_, r->signal_fd_, kSignalTag)) {
      return Error::runtime(std::string("runner: epoll_ctl: ") + std::strerror(errno));
    }
  }
  return r;
}

void Runner::add_source(std::unique_ptr<source::EventSource> source, bool essential) {
  if (!source) return;
  const int fd = source->wait_fd();
  if (fd >= 0) {
    if (!watch(epoll_fd_, fd, slots_.size()) && log_) {
      // Still polled every turn (as a source without an fd would be).
      log_->warn("runner: cannot wait on {}'s fd: {}", source->name(), std::strerror(errno));
    }
  }
  std::lock_guard<std::mutex> l(sources_mu_);
  slots_.push_back({std::move(source), essential});
}

void Runner::add_tick(std::string name, std::chrono::nanoseconds every, std::function<void(std::uint64_t)> fn) {
  ticks_.push_back(
      {std::move(name), static_cast<std::uint64_t>(std::max<std::int64_t>(every.count(), 0)), std::move(fn)});
}

void Runner::stop(int exit_code, std::string reason) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = exit_code;
  reason_ = std::move(reason);
}

void Runner::on_signal(int signo) {
  if (signo == SIGHUP) {
    request_reload("SIGHUP");
    return;
  }
  if (signo != SIGINT && signo != SIGTERM) {
    if (log_) log_->warn("{}: ignored", signal_name(signo));
    return;
  }
  if (log_) log_->info("{}: stopping", signal_name(signo));
  stop(0, signal_name(signo));
}

void Runner::request_reload(const std::string& why) {
  if (!opts_.reload || pipe_ == nullptr) {
    if (log_) log_->info("{}: nothing to reload", why);
    return;
  }
  if (reloading()) {
    if (!reload_again_ && log_) log_->info("{} during a reload: reloading again when this one ends", why);
    if (!reload_again_) again_why_ = why;
    reload_again_ = true;
    return;
  }
  start_reload(why);
}

Status Runner::add_fd(std::string name, int fd, std::function<void()> on_readable) {
  if (fds_.size() >= kMaxFds) return Error::runtime("runner: too many fds to wait on");
  if (!watch(epoll_fd_, fd, kFdTagBase - fds_.size())) {
    return Error::runtime("runner: cannot wait on " + name + ": " + std::strerror(errno));
  }
  fds_.push_back({std::move(name), fd, std::move(on_readable)});
  return {};
}

Status Runner::add_feed(std::string name, int wake_fd, std::function<void()> apply) {
  if (feeds_.size() >= kMaxFeeds) return Error::runtime("runner: too many feeds");
  if (wake_fd >= 0 && !watch(epoll_fd_, wake_fd, kFeedTagBase - feeds_.size())) {
    return Error::runtime("runner: cannot wait on " + name + ": " + std::strerror(errno));
  }
  feeds_.push_back({std::move(name), wake_fd, std::move(apply)});
  return {};
}

void Runner::apply_feeds() {
  for (Feed& f : feeds_) f.apply();
}

void Runner::start_reload(const std::string& why) {
  if (log_) log_->info("{}: reloading (detection goes on with the rules and outputs in force meanwhile)", why);
  reload_cancel_ = false;
  reload_started_ = std::chrono::steady_clock::now();
  reload_thread_ = std::thread([this] {
    std::optional<Result<Reloaded>> got;
    try {
      got.emplace(opts_.reload(reload_cancel_));
    } catch (const std::exception& e) {
      got.emplace(Error::runtime(std::string("the reload failed: ") + e.what()));
    }
    {
      std::lock_guard<std::mutex> l(reload_mu_);
      reload_result_ = std::move(got);
    }
    std::uint64_t one = 1;
    (void)!write(reload_fd_, &one, sizeof(one));
  });
}

void Runner::finish_reload() {
  std::optional<Result<Reloaded>> got;
  {
    std::lock_guard<std::mutex> l(reload_mu_);
    got.swap(reload_result_);
  }
  if (!got) return;
  // The thread writes reload_fd_ after storing its result: once it is joined
  // the write has happened and reading clears it.
  if (reload_thread_.joinable()) reload_thread_.join();
  std::uint64_t n = 0;
  (void)!read(reload_fd_, &n, sizeof(n));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - reload_started_).count();
  std::string error;
  if (!*got) error = got->error().message;
  else if (!(*got)->rules) error = "no ruleset";
  else if (!pipe_) error = "not running";
  const bool ok = error.empty();
  if (ok) {
    // One step between two events: the rules, then the rest.
    Reloaded& r = **got;
    pipe_->set_ruleset(r.rules);
    if (r.commit) r.commit();
    if (log_) {
      log_->info("rules reloaded: {} rules, compiled in {:.2f} s{}{}", r.rules->size(), secs,
                 r.summary.empty() ? "" : "; ", r.summary);
    }
  } else if (log_) {
    log_->error("reload failed, the previous rules and outputs stay in force: {}", error);
  }
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    ++(ok ? reload_stats_.succeeded : reload_stats_.failed);
    reload_stats_.last_ok = ok;
    reload_stats_.last_error = error;
    reload_stats_.last_unix_s =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  if (reload_again_ && !stopping_) {
    reload_again_ = false;
    start_reload(again_why_);
  }
}

void Runner::abandon_reload() {
  reload_again_ = false;
  if (!reload_thread_.joinable()) return;
  reload_cancel_ = true;
  if (log_) log_->info("stopping: cancelling the reload in progress");
  reload_thread_.join();
  std::uint64_t n = 0;
  (void)!read(reload_fd_, &n, sizeof(n));
  std::lock_guard<std::mutex> l(reload_mu_);
  reload_result_.reset();
}

ReloadStats Runner::reload_stats() const {
  std::lock_guard<std::mutex> l(stats_mu_);
  return reload_stats_;
}

LoopStatus Runner::status() const {
  LoopStatus st;
  st.running = running_.load(std::memory_order_relaxed);
  st.turns = turns_.load(std::memory_order_relaxed);
  st.last_turn =
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_turn_ns_.load(std::memory_order_relaxed)));
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    st.sources = published_;
  }
  std::lock_guard<std::mutex> l(sources_mu_);
  for (std::size_t i = 0; i < st.sources.size() && i < slots_.size(); ++i) {
    if (slots_[i].source) st.sources[i].backlog = slots_[i].source->backlog();
  }
  return st;
}

void Runner::publish_status(bool force) {
  // The heartbeat, then the sources' counts when due: one clock read a turn.
  const auto now = std::chrono::steady_clock::now();
  turns_.store(turns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // loop thread only
  last_turn_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
                      std::memory_order_relaxed);
  bool changed = force || published_size_ != slots_.size();
  for (Slot& s : slots_) {
    if (!s.source) continue;
    const source::EventSource::Health h = s.source->health();
    if (h != s.health) changed = true;
    s.health = h;
  }
  if (!changed && now - last_publish_ < std::chrono::milliseconds(200)) return;
  last_publish_ = now;
  std::vector<SourceStatus> out;
  out.reserve(slots_.size());
  for (const Slot& s : slots_) {
    SourceStatus ss;
    ss.essential = s.essential;
    ss.events = s.events;
    if (s.source) {
      ss.name = std::string(s.source->name());
      ss.health = s.health;
      if (s.health == source::EventSource::Health::kFailed) ss.failure = s.source->failure();
      ss.drops = s.source->drops();
    }
    out.push_back(std::move(ss));
  }
  published_size_ = slots_.size();
  std::lock_guard<std::mutex> l(stats_mu_);
  published_ = std::move(out);
}

void Runner::wait_reload_ForTest() {
  if (reload_thread_.joinable()) reload_thread_.join();
}

void Runner::close_sources() {
  std::lock_guard<std::mutex> l(sources_mu_);
  for (Slot& s : slots_) {
    if (s.source && s.source->wait_fd() >= 0 && epoll_fd_ >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s.source->wait_fd(), nullptr);
    }
    s.source.reset();
    s.active = false;
  }
}

std::vector<std::string> Runner::attached() const {
  std::vector<std::string> out;
  for (const Slot& s : slots_) {
    if (!s.source) continue;
    for (std::string& a : s.source->attached()) out.push_back(std::move(a));
  }
  return out;
}

void Runner::advance_clock() {
  // 0 is a clock not known yet (a capture before its first event).
  std::uint64_t raw = 0;
  bool any = false;
  for (const Slot& s : slots_) {
    if (!s.source) continue;
    raw = std::max(raw, s.source->now_ns());
    any = true;
  }
  if (!any) raw = wall_ns();
  if (raw == 0) return;
  if (last_raw_ns_ != 0 && raw > last_raw_ns_) clock_ns_ += raw - last_raw_ns_;
  last_raw_ns_ = raw;
}

int Runner::wait_ms() const {
  if (more_ || stopping_) return 0;
  std::int64_t ms = opts_.max_wait.count();
  for (const Slot& s : slots_) {
    if (s.active && s.source->wait_fd() < 0) ms = std::min<std::int64_t>(ms, kIdlePollMs);
  }
  for (const Tick& t : ticks_) {
    if (t.every_ns == 0) continue;
    const std::int64_t left =
        t.due_ns > clock_ns_ ? static_cast<std::int64_t>((t.due_ns - clock_ns_ + 999999) / 1000000) : 0;
    ms = std::min(ms, left);
  }
  return static_cast<int>(std::max<std::int64_t>(ms, 0));
}

void Runner::poll_source(Slot& s, const source::EventSource::Emit& emit) {
  source::EventSource& src = *s.source;
  auto got = src.poll(opts_.budget, emit);
  if (got) s.events += *got;
  s.ready = false;
  std::optional<Error> err;
  if (!got) {
    err = got.error();
  } else if (*got >= opts_.budget || (src.wait_fd() < 0 && *got > 0)) {
    s.ready = true;  // more may be waiting: no wait before the next turn
    more_ = true;
  }
  if (!err) {
    switch (src.health()) {
      case source::EventSource::Health::kRunning: return;
      case source::EventSource::Health::kDone:
        if (log_) log_->info("source {}: done", src.name());
        s.active = false;
        s.ready = false;
        if (src.wait_fd() >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, src.wait_fd(), nullptr);
        return;
      case source::EventSource::Health::kFailed: err = Error::runtime(src.failure()); break;
    }
  }
  s.active = false;
  s.ready = false;
  if (src.wait_fd() >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, src.wait_fd(), nullptr);
  Error e = *err;
  e.message = std::string(src.name()) + ": " + (e.message.empty() ? "failed" : e.message);
  if (s.essential) {
    if (!stopping_) error_ = e;
    stop(e.kind == Error::Kind::kBadInput ? 2 : 1, e.message);
  } else if (log_) {
    log_->error("source {} failed; the other sources go on: {}", src.name(), e.message);
  }
}

void Runner::report_drops(bool final_report, RunReport& rep) {
  std::uint64_t new_total = 0, all = 0;
  std::string detail;
  if (final_report) rep.drops.clear();
  for (Slot& s : slots_) {
    if (!s.source) continue;
    source::Drops d = s.source->drops();
    const std::uint64_t total = d.total();
    all += total;
    if (total > s.reported) {
      new_total += total - s.reported;
      for (const auto& [reason, n] : d.by_reason) {
        if (n)
          detail +=
              (detail.empty() ? "" : " ") + std::string(s.source->name()) + "/" + reason + "=" + std::to_string(n);
      }
      s.reported = total;
    }
    if (final_report) rep.drops.push_back({std::string(s.source->name()), std::move(d)});
  }
  if (!final_report && new_total > 0 && log_) {
    log_->warn("lost {} events in the last {} s ({} in all): {}", new_total, opts_.drop_report.count(), all, detail);
  }
}

RunReport Runner::run(pipeline::Pipeline& pipe) {
  RunReport rep;
  pipe_ = &pipe;
  const source::EventSource::Emit emit = [&](event::Event&& ev) {
    ++rep.events;
    pipe.process(ev);
  };
  clock_ns_ = 0;
  last_raw_ns_ = 0;
  advance_clock();
  const std::uint64_t start = clock_ns_;
  for (Tick& t : ticks_) t.due_ns = start + t.every_ns;
  last_drop_report_ns_ = start;
  const std::uint64_t drop_every = static_cast<std::uint64_t>(opts_.drop_report.count()) * 1000000000ull;

  publish_status(true);
  running_.store(true, std::memory_order_relaxed);
  while (!stopping_) {
    epoll_event evs[16];
    const int n = epoll_wait(epoll_fd_, evs, 16, wait_ms());
    if (n < 0 && errno != EINTR) {
      error_ = Error::runtime(std::string("runner: epoll_wait: ") + std::strerror(errno));
      stop(1, error_->message);
      break;
    }
    bool signalled = false;
    // A finished compile is swapped in before this turn's events.
    finish_reload();
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.u64 == kSignalTag) {
        signalled = true;
      } else if (evs[i].data.u64 == kReloadTag) {
        // handled above
      } else if (evs[i].data.u64 <= kFeedTagBase && kFeedTagBase - evs[i].data.u64 < feeds_.size()) {
        // Cleared before the feed is applied below: a later write wakes the next turn.
        std::uint64_t count = 0;
        (void)!read(feeds_[kFeedTagBase - evs[i].data.u64].wake_fd, &count, sizeof(count));
      } else if (evs[i].data.u64 <= kFdTagBase && kFdTagBase - evs[i].data.u64 < fds_.size()) {
        fds_[kFdTagBase - evs[i].data.u64].on_readable();
      } else if (evs[i].data.u64 < slots_.size()) {
        slots_[evs[i].data.u64].ready = true;
      }
    }
    more_ = false;
    // What the feeds queued before a poll lands before the events it hands over.
    apply_feeds();
    bool polled = false;
    for (Slot& s : slots_) {
      if (!s.active || !s.source) continue;
      if (!s.ready && s.source->wait_fd() >= 0) continue;
      if (polled) apply_feeds();
      polled = true;
      poll_source(s, emit);
    }
    if (signalled) {
      signalfd_siginfo si{};
      while (read(signal_fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
        on_signal(static_cast<int>(si.ssi_signo));
      }
    }
    advance_clock();
    for (Tick& t : ticks_) {
      if (t.every_ns != 0 && clock_ns_ < t.due_ns) continue;
      t.fn(clock_ns_);
      if (t.every_ns != 0) t.due_ns = clock_ns_ + t.every_ns;
    }
    if (drop_every && clock_ns_ - last_drop_report_ns_ >= drop_every) {
      last_drop_report_ns_ = clock_ns_;
      report_drops(false, rep);
    }
    if (std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.active && s.source; })) {
      stop(0, "done");
    }
    if (opts_.duration_ns && clock_ns_ - start >= opts_.duration_ns) stop(0, "duration");
    if (opts_.stop_when && opts_.stop_when()) stop(0, "stop_when");
    publish_status(false);
  }
  running_.store(false, std::memory_order_relaxed);
  publish_status(true);
  abandon_reload();
  report_drops(true, rep);
  rep.exit_code = exit_code_;
  rep.reason = reason_;
  rep.error = error_;
  pipe_ = nullptr;
  return rep;
}

}  // namespace vigil::runtime
