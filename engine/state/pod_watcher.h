// Pods of this node from the Kubernetes API: LIST, then WATCH
// /api/v1/pods?fieldSelector=spec.nodeName=<node> from the list's
// resourceVersion, handling ADDED/MODIFIED/DELETED/BOOKMARK and ERROR
// (410 Gone → relist), reconnecting with capped exponential backoff and full
// jitter. HTTP through net::HttpClient; every response is bounded in size.
//
//   auto cfg = k8s_config_discover({});   // in-cluster, or an error saying why not
//   PodWatcher w(*cfg);
//   w.start();
//   runner.add_feed("pods", w.wake_fd(), [&] { w.drain(state); });  // on the pipeline thread
//
// Ownership and threads: PodWatcher owns one thread that talks to the API
// server (and to the kubelet's pod-resources socket) and a bounded queue of
// updates; drain() is called by the pipeline thread (the one that owns the
// State) and applies queued updates to it. Each update queued writes
// wake_fd(), an eventfd, so an idle loop wakes to apply it before the events
// that follow. start()/stop()/drain()/stats() are thread-safe. When the queue
// overflows the watcher drops what is queued and relists, so the State
// converges instead of missing a deletion.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/net/http_client.h"
#include "engine/state/k8s_config.h"
#include "engine/state/model.h"
#include "engine/state/podresources.h"
#include "engine/util/result.h"

namespace vigil::state {

class State;

// One update for the State.
struct PodUpdate {
  enum class Kind { kUpsert, kDelete, kSync };
  Kind kind = Kind::kUpsert;
  Pod pod;                // kUpsert
  std::string uid;        // kDelete
  std::vector<Pod> pods;  // kSync: the complete set after a LIST
};

class PodWatcher {
 public:
  struct Stats {
    std::uint64_t lists = 0;
    std::uint64_t watches = 0;
    std::uint64_t events = 0;        // watch events applied
    std::uint64_t relists_gone = 0;  // 410 Gone
    std::uint64_t errors = 0;        // failed requests
    std::uint64_t overflows = 0;     // queue overflows (each forces a relist)
    std::uint64_t pod_resources_calls = 0;
    std::uint64_t pod_resources_errors = 0;
    bool synced = false;    // a LIST succeeded at least once
    bool watching = false;  // a WATCH request is open now
    std::string last_error;
  };

  explicit PodWatcher(K8sConfig cfg);
  ~PodWatcher();
  PodWatcher(const PodWatcher&) = delete;
  PodWatcher& operator=(const PodWatcher&) = delete;

  // Starts the watcher thread. Error when already started, the URL is not
  // https/http, or no eventfd could be made.
  Status start();
  // Stops and joins the thread (also done by the destructor). Interrupts a
  // blocked request within about a second.
  void stop();
  // Applies every queued update to the State (pipeline thread). A sync
  // replaces the whole pod set: pods that vanished are removed. Returns true
  // when anything changed.
  bool drain(State& state);
  // Readable (an eventfd: read it to clear) when an update was queued since
  // it was last read; -1 before start(). The runner reads it (add_feed).
  int wake_fd() const { return wake_fd_; }
  Stats stats() const;

 private:
  enum class WatchEnd { kClosed, kGone, kError, kStopped, kResync };
  void run();
  bool list(std::string* rv);
  WatchEnd watch(std::string* rv);
  // A GET of path (with its query) on the API server.
  net::HttpRequest request(std::string path_and_query) const;
  bool push(PodUpdate u);
  void sleep_backoff(int failures);
  void note_error(std::string msg);
  // Fills gpu_devices from the kubelet pod-resources API (watcher thread).
  void annotate(Pod& pod);

  K8sConfig cfg_;
  net::HttpClient http_;        // the API server; watcher thread only (cancel() from stop())
  PodResourcesClient kubelet_;  // asked while a WATCH is streaming
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> overflow_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PodUpdate> queue_;  // guarded by mu_
  Stats stats_;                  // guarded by mu_
  std::mt19937_64 rng_;          // backoff jitter; watcher thread only
  // Last pod-resources answer; watcher thread only.
  std::vector<ContainerDeviceIds> assignments_;
  std::chrono::steady_clock::time_point assignments_at_{};
  bool assignments_valid_ = false;
  bool started_ = false;
  int wake_fd_ = -1;  // set by start(), closed by the destructor
};

}  // namespace vigil::state
