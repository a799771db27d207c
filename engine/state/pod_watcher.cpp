#include "engine/state/pod_watcher.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

#include "engine/state/pod_json.h"
#include "engine/state/state.h"

namespace vigil::state {
namespace {

using nlohmann::json;

constexpr auto kListTimeout = std::chrono::seconds(120);

}  // namespace

PodWatcher::PodWatcher(K8sConfig cfg) : cfg_(std::move(cfg)), rng_(std::random_device{}()) {}

PodWatcher::~PodWatcher() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status PodWatcher::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return Error::runtime("pod watcher already started");
  if (cfg_.api_url.rfind("https://", 0) != 0 && cfg_.api_url.rfind("http://", 0) != 0) {
    return Error::bad_input("Kubernetes API URL must be http(s)://...: '" + cfg_.api_url + "'");
  }
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Error::runtime(std::string("pod watcher: eventfd: ") + std::strerror(errno));
  started_ = true;
  stop_ = false;
  thread_ = std::thread([this] { run(); });
  return Status::ok_status();
}

void PodWatcher::stop() {
  stop_ = true;
  http_.cancel();
  kubelet_.cancel();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

PodWatcher::Stats PodWatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PodWatcher::note_error(std::string msg) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.errors;
  stats_.last_error = std::move(msg);
}

bool PodWatcher::push(PodUpdate u) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= cfg_.queue_capacity && u.kind != PodUpdate::Kind::kSync) {
      // Dropping one update could lose a deletion: drop them all and relist.
      queue_.clear();
      ++stats_.overflows;
      overflow_ = true;
      return false;
    }
    if (u.kind == PodUpdate::Kind::kSync) queue_.clear();  // a full set supersedes the rest
    queue_.push_back(std::move(u));
  }
  // After the update is queued: the loop that wakes finds it. Never blocks
  // (nonblocking; a counter near its limit is already readable).
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  return true;
}

bool PodWatcher::drain(State& state) {
  // Called before every poll of the loop: nothing queued costs a lock and no
  // allocation (an empty deque allocates).
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty()) return false;
  std::deque<PodUpdate> work;
  work.swap(queue_);
  lock.unlock();
  for (auto& u : work) {
    switch (u.kind) {
      case PodUpdate::Kind::kUpsert: state.upsert_pod(std::move(u.pod)); break;
      case PodUpdate::Kind::kDelete: state.remove_pod(u.uid); break;
      case PodUpdate::Kind::kSync: {
        std::unordered_set<std::string> keep;
        for (const auto& p : u.pods) keep.insert(p.uid);
        // A pod known only from the container runtime may be newer than
        // the list: the API's own DELETE or record settles it.
        for (const auto& p : state.pods()) {
          if (!keep.count(p.uid) && !p.from_runtime) state.remove_pod(p.uid);
        }
        for (auto& p : u.pods) state.upsert_pod(std::move(p));
        break;
      }
    }
  }
  return !work.empty();
}

net::HttpRequest PodWatcher::request(std::string path_and_query) const {
  net::HttpRequest r = api_request(cfg_, path_and_query);
  r.accept_encoding = true;
  return r;
}

bool PodWatcher::list(std::string* rv) {
  std::vector<Pod> pods;
  std::string cont;
  for (int page = 0; page < 1000; ++page) {
    std::string query = "/api/v1/pods?limit=100&fieldSelector=" + net::url_encode("spec.nodeName=" + cfg_.node_name);
    if (!cont.empty()) query += "&continue=" + net::url_encode(cont);
    net::HttpRequest req = request(std::move(query));
    req.timeout = kListTimeout;
    req.max_body = cfg_.max_list_bytes;
    net::HttpResult res = http_.perform(req);
    if (stop_) return false;
    if (!res.success()) {
      note_error("LIST pods: " + res.describe());
      return false;
    }
    json j = json::parse(res.body, nullptr, false);
    const json* items = json_member(j, "items");
    if (j.is_discarded() || !items || !items->is_array()) {
      note_error("LIST pods: " + res.target + ": malformed response");
      return false;
    }
    for (const auto& item : *items) {
      if (pods.size() >= cfg_.max_pods) break;
      auto p = pod_from_json(item);
      if (!p) continue;
      annotate(*p);
      pods.push_back(std::move(*p));
    }
    const json* meta = json_member(j, "metadata");
    std::string next = meta ? json_string(*meta, "continue") : "";
    if (meta) *rv = json_string(*meta, "resourceVersion");
    if (next.empty()) break;
    cont = next;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lists;
    stats_.synced = true;
  }
  PodUpdate u;
  u.kind = PodUpdate::Kind::kSync;
  u.pods = std::move(pods);
  overflow_ = false;
  push(std::move(u));
  return true;
}

PodWatcher::WatchEnd PodWatcher::watch(std::string* rv) {
  bool gone = false;
  bool failed = false;
  auto on_line = [&](std::string_view line) {
    json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      note_error("WATCH pods: malformed event");
      failed = true;
      return false;
    }
    std::string type = json_string(j, "type");
    const json* obj = json_member(j, "object");
    if (!obj) {
      failed = true;
      return false;
    }
    if (type == "ERROR") {
      const json* code = json_member(*obj, "code");
      if (code && code->is_number_integer() && code->get<std::int64_t>() == 410) {
        gone = true;
      } else {
        note_error("WATCH pods: error event: " + json_string(*obj, "message"));
        failed = true;
      }
      return false;
    }
    const json* meta = json_member(*obj, "metadata");
    std::string new_rv = meta ? json_string(*meta, "resourceVersion") : "";
    if (type == "BOOKMARK") {
      if (!new_rv.empty()) *rv = new_rv;
      return true;
    }
    auto pod = pod_from_json(*obj);
    if (!pod) return true;  // an object we cannot use; keep watching
    PodUpdate u;
    if (type == "ADDED" || type == "MODIFIED") {
      u.kind = PodUpdate::Kind::kUpsert;
      annotate(*pod);
      u.pod = std::move(*pod);
    } else if (type == "DELETED") {
      u.kind = PodUpdate::Kind::kDelete;
      u.uid = pod->uid;
    } else {
      return true;
    }
    if (!new_rv.empty()) *rv = new_rv;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.events;
    }
    return push(std::move(u));  // false on overflow: end the watch and relist
  };

  net::HttpRequest req =
      request("/api/v1/pods?watch=1&allowWatchBookmarks=true&fieldSelector=" +
              net::url_encode("spec.nodeName=" + cfg_.node_name) + "&resourceVersion=" + net::url_encode(*rv) +
              "&timeoutSeconds=" + std::to_string(cfg_.watch_timeout_s));
  // A silent watch (no event, no bookmark) for this long is a dead connection.
  req.timeout = std::chrono::seconds(cfg_.watch_timeout_s + 60);
  req.idle_timeout = std::chrono::seconds(cfg_.watch_timeout_s + 30);
  req.max_body = cfg_.max_event_bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
    stats_.watching = true;
  }
  net::HttpResult res = http_.stream_lines(req, on_line);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.watching = false;
  }
  if (stop_) return WatchEnd::kStopped;
  if (overflow_) return WatchEnd::kResync;
  if (gone || res.status == 410) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.relists_gone;
    return WatchEnd::kGone;
  }
  if (failed) return WatchEnd::kError;
  if (res.failure == net::HttpFailure::kTooLarge) {
    note_error("WATCH pods: " + res.describe());
    return WatchEnd::kResync;
  }
  if (!res.success()) {
    note_error("WATCH pods: " + res.describe());
    return WatchEnd::kError;
  }
  return WatchEnd::kClosed;
}

void PodWatcher::annotate(Pod& pod) {
  if (cfg_.pod_resources_socket.empty()) return;
  bool wants = false;
  for (const auto& c : pod.containers) {
    if (c.gpu_limit > 0 || c.nvidia_visible_devices.rfind("/", 0) == 0) wants = true;
  }
  if (!wants) return;
  auto now = std::chrono::steady_clock::now();
  if (!assignments_valid_ || now - assignments_at_ >= cfg_.pod_resources_refresh) {
    struct stat st {};
    if (::stat(cfg_.pod_resources_socket.c_str(), &st) != 0) return;  // no kubelet API here
    assignments_at_ = now;
    auto r = kubelet_.list(cfg_.pod_resources_socket);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.pod_resources_calls;
    if (r) {
      assignments_ = std::move(*r);
      assignments_valid_ = true;
    } else {
      ++stats_.pod_resources_errors;
      stats_.last_error = r.error().message;
    }
  }
  if (assignments_valid_) apply_pod_resources(pod, assignments_);
}

void PodWatcher::sleep_backoff(int failures) {
  using std::chrono::milliseconds;
  std::int64_t cap = cfg_.backoff_max.count();
  std::int64_t base = cfg_.backoff_initial.count();
  std::int64_t ceiling = base;
  for (int i = 1; i < failures && ceiling < cap; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, cap);
  // Jitter in [ceiling/2, ceiling], so a fleet of agents does not reconnect in step.
  std::uniform_int_distribution<std::int64_t> dist(ceiling / 2, std::max<std::int64_t>(ceiling, 1));
  std::int64_t wait_ms = dist(rng_);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, milliseconds(wait_ms), [this] { return stop_.load(); });
}

void PodWatcher::run() {
  std::string rv;
  bool need_list = true;
  int failures = 0;
  while (!stop_) {
    if (need_list) {
      if (!list(&rv)) {
        if (stop_) break;
        sleep_backoff(++failures);
        continue;
      }
      need_list = false;
      failures = 0;
    }
    auto began = std::chrono::steady_clock::now();
    switch (watch(&rv)) {
      case WatchEnd::kStopped: return;
      case WatchEnd::kClosed:
        // The server ended the watch; continue from rv. A server that ends
        // every watch at once must not be hammered in a tight loop.
        if (std::chrono::steady_clock::now() - began < std::chrono::seconds(1)) {
          sleep_backoff(++failures);
        } else {
          failures = 0;
        }
        break;
      case WatchEnd::kGone:
      case WatchEnd::kResync: need_list = true; break;
      case WatchEnd::kError:
        sleep_backoff(++failures);
        // Repeated failures from one resourceVersion: start again from a LIST.
        if (failures >= 3) need_list = true;
        break;
    }
  }
}

}  // namespace vigil::state
