#include "engine/plugin/source.h"

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace vigil::plugin {
namespace {

constexpr std::size_t kMaxEventName = 63;

std::uint64_t wall_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

struct PluginQueued {
  std::uint64_t ts_ns;
  std::uint32_t pid, tid;
  std::int32_t gpu_minor;
  std::string name;
  std::string data;
};

namespace {

// An event of the queue as the pipeline gets it.
event::Event to_event(const Plugin& p, PluginQueued q) {
  event::Event ev;
  ev.hdr.type = event::Type::kPlugin;
  ev.hdr.ts_ns = q.ts_ns;
  ev.hdr.pid = q.pid;
  ev.hdr.tid = q.tid;
  event::PluginData d;
  d.plugin = p.name();
  d.source = p.event_source();
  d.name = std::move(q.name);
  d.gpu_minor = q.gpu_minor;
  d.data = std::move(q.data);
  ev.data = std::move(d);
  return ev;
}

}  // namespace

class PluginSource::Impl {
 public:
  using Queued = PluginQueued;

  Plugin* plugin = nullptr;
  SourceOptions opts;
  std::shared_ptr<spdlog::logger> log;
  int efd = -1;

  std::mutex mu;
  std::condition_variable exited_cv;
  std::deque<Queued> queue;     // guarded by mu
  std::size_t queue_bytes = 0;  // guarded by mu
  std::uint64_t pushed = 0;     // guarded by mu: events queued so far
  std::uint64_t popped = 0;     // guarded by mu: events handed to poll() so far
  bool exited = false;          // guarded by mu: the thread has returned
  std::string failure;          // guarded by mu

  std::atomic<bool> stop{false};
  std::atomic<bool> eof{false};
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> queue_full{0};  // dropped: the queue was full
  std::atomic<std::uint64_t> oversize{0};    // dropped: data over VIGIL_PLUGIN_MAX_EVENT_DATA
  std::atomic<std::uint64_t> malformed{0};   // dropped: no name, name too long, NULL data

  ~Impl() {
    if (efd >= 0) close(efd);
  }

  void wake() {
    std::uint64_t one = 1;
    (void)!write(efd, &one, sizeof(one));
  }

  // The source thread.
  void run() {
    while (!stop.load(std::memory_order_acquire)) {
      const vigil_event* evs = nullptr;
      std::uint32_t n = 0;
      const vigil_rc rc = plugin->next_batch(opts.batch, opts.timeout_ms, &evs, &n);
      if (rc == VIGIL_RC_OK || rc == VIGIL_RC_TIMEOUT) {
        if (n > opts.batch) n = opts.batch;  // a plugin that ignores `max` gets read up to it
        if (n > 0 && evs) take(evs, n);
        continue;
      }
      if (rc == VIGIL_RC_EOF) {
        eof.store(true, std::memory_order_release);
      } else {
        std::string why = plugin->last_error();
        if (rc != VIGIL_RC_FAILURE) why = "next_batch returned unknown code " + std::to_string(static_cast<int>(rc));
        std::lock_guard<std::mutex> lock(mu);
        failure = why.empty() ? "next_batch failed with no reason given" : why;
        failed.store(true, std::memory_order_release);
      }
      break;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      exited = true;
    }
    exited_cv.notify_all();
    wake();  // the runner sees done/failed promptly
  }

  void take(const vigil_event* evs, std::uint32_t n) {
    const std::uint64_t now = wall_ns();
    std::size_t added = 0;
    std::lock_guard<std::mutex> lock(mu);
    for (std::uint32_t i = 0; i < n; ++i) {
      const vigil_event& e = evs[i];
      if (e.data_len > VIGIL_PLUGIN_MAX_EVENT_DATA) {
        oversize.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      std::size_t name_len = e.name ? strnlen(e.name, kMaxEventName + 1) : 0;
      if (name_len == 0 || name_len > kMaxEventName || (e.data_len > 0 && !e.data)) {
        malformed.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (queue.size() >= opts.queue_events || queue_bytes + e.data_len > opts.queue_bytes) {
        queue_full.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      Queued q{e.ts_ns ? e.ts_ns : now,       e.pid,
               e.tid ? e.tid : e.pid,         e.gpu_minor < -1 ? -1 : e.gpu_minor,
               std::string(e.name, name_len), std::string(reinterpret_cast<const char*>(e.data), e.data_len)};
      queue_bytes += q.data.size();
      queue.push_back(std::move(q));
      ++pushed;
      ++added;
    }
    if (added) wake();
  }
};

Result<std::unique_ptr<PluginSource>> PluginSource::start(Plugin& plugin, SourceOptions opts,
                                                          std::shared_ptr<spdlog::logger> log) {
  if (!plugin.is_source()) return Error::bad_input("plugin '" + plugin.name() + "' is not an event source");
  if (!plugin.initialised()) return Error::runtime("plugin '" + plugin.name() + "' is not initialised");
  if (opts.batch == 0 || opts.batch > VIGIL_PLUGIN_MAX_BATCH) opts.batch = VIGIL_PLUGIN_MAX_BATCH;
  std::unique_ptr<PluginSource> s(new PluginSource());
  s->name_ = "plugin:" + plugin.name();
  auto impl = std::make_shared<Impl>();
  impl->plugin = &plugin;
  impl->opts = opts;
  impl->log = std::move(log);
  impl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->efd < 0) return Error::runtime(std::string("plugin source: eventfd: ") + std::strerror(errno));
  s->impl_ = impl;
  std::thread([impl] { impl->run(); }).detach();  // joined through `exited` (stop())
  return s;
}

int PluginSource::wait_fd() const { return impl_->efd; }

Result<std::size_t> PluginSource::poll(std::size_t budget, const Emit& emit) {
  std::uint64_t drain = 0;
  (void)!read(impl_->efd, &drain, sizeof(drain));
  std::deque<Impl::Queued> batch;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    while (!impl_->queue.empty() && batch.size() < budget) {
      impl_->queue_bytes -= impl_->queue.front().data.size();
      batch.push_back(std::move(impl_->queue.front()));
      impl_->queue.pop_front();
      ++impl_->popped;
    }
    if (!impl_->queue.empty()) {
      std::uint64_t one = 1;  // more waits: stay readable
      (void)!write(impl_->efd, &one, sizeof(one));
    }
  }
  for (Impl::Queued& q : batch) emit(to_event(*impl_->plugin, std::move(q)));
  return batch.size();
}

std::vector<event::Event> PluginSource::peek(std::size_t max) const {
  std::vector<event::Event> out;
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const Impl::Queued& q : impl_->queue) {
    if (out.size() >= max) break;
    out.push_back(to_event(*impl_->plugin, q));
  }
  return out;
}

source::EventSource::Health PluginSource::health() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->queue.empty()) return Health::kRunning;  // what came before the end is delivered first
  if (impl_->failed.load()) return Health::kFailed;
  if (impl_->eof.load()) return Health::kDone;
  return Health::kRunning;
}

std::string PluginSource::failure() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->failure;
}

source::Drops PluginSource::drops() const {
  source::Drops d;
  d.add("queue_full", impl_->queue_full.load());
  d.add("oversize", impl_->oversize.load());
  d.add("malformed", impl_->malformed.load());
  return d;
}

std::optional<source::Backlog> PluginSource::backlog() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  source::Backlog b;
  b.pending = impl_->queue.size();
  b.capacity = impl_->opts.queue_events;
  b.consumed = impl_->popped;
  b.produced = impl_->pushed;
  b.unit = "events";
  return b;
}

void PluginSource::stop() {
  if (!impl_ || impl_->stop.exchange(true)) return;
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (!impl_->exited_cv.wait_for(lock, impl_->opts.stop_grace, [&] { return impl_->exited; })) {
    // The plugin is stuck inside next_batch: leave its thread (it holds the
    // shared state) and keep the library loaded, so nothing is freed under it.
    if (impl_->log) {
      impl_->log->warn("{}: next_batch did not return within {} ms of the stop; leaving it running", name_,
                       impl_->opts.stop_grace.count());
    }
    impl_->plugin->abandon();
  }
}

PluginSource::~PluginSource() { stop(); }

}  // namespace vigil::plugin
