// Asks the container runtime (cri.h) about the Kubernetes containers vigil
// meets before their pod is known, on a thread of its own, and hands the
// answers to the pipeline thread as pods (from_runtime) to upsert.
//
//   CriResolver r({.socket = "/run/containerd/containerd.sock"});
//   r.start();
//   state.set_unnamed_container_hook([&](const Container& c) { r.request(c.id); });
//   runner.add_feed("cri", r.wake_fd(), [&] { r.drain(state); });
//
// request() never blocks: it queues the id (at most max_queue, counted when
// full) unless it is queued or was answered already (the last max_known
// ids). The thread asks ContainerStatus, then the pod's sandbox (once per
// pod, cached), with a timeout per call; a failed call is retried after
// retry_after, at most `attempts` times in all. Each answer queued writes
// wake_fd() (an eventfd), so an idle loop applies it at once.
// start()/stop()/request()/drain()/stats() are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/state/cri.h"
#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::state {

class State;

class CriResolver {
 public:
  struct Options {
    std::string socket;
    std::chrono::milliseconds timeout{2000};  // per call
    std::chrono::milliseconds retry_after{250};
    int attempts = 3;
    std::size_t max_queue = 1024;   // ids waiting to be asked
    std::size_t max_known = 16384;  // ids answered, remembered so they are not asked again
    std::size_t max_pods = 4096;    // sandboxes cached by pod uid
  };
  struct Stats {
    std::uint64_t requests = 0;   // ids queued
    std::uint64_t found = 0;      // containers the runtime named
    std::uint64_t not_found = 0;  // not known to it, or not Kubernetes containers
    std::uint64_t errors = 0;     // failed calls
    std::uint64_t gave_up = 0;    // ids given up after `attempts` failed calls
    std::uint64_t dropped = 0;    // ids not queued: the queue was full
    std::uint64_t pending = 0;    // queued now
    std::string last_error;
  };

  explicit CriResolver(Options opts);
  ~CriResolver();
  CriResolver(const CriResolver&) = delete;
  CriResolver& operator=(const CriResolver&) = delete;

  // Starts the thread. Error when already started or no eventfd could be made.
  Status start();
  // Stops and joins the thread (also done by the destructor); a call under way
  // ends within its timeout.
  void stop();
  void request(const std::string& container_id);
  // Upserts the pods answered since the last drain (pipeline thread).
  // Returns true when any was.
  bool drain(State& state);
  int wake_fd() const { return wake_fd_; }
  Stats stats() const;

 private:
  struct Pending {
    std::string id;
    int tries = 0;
    std::chrono::steady_clock::time_point not_before{};
  };
  void run();
  // One attempt for `p`: true when it is settled (answered or not found).
  bool resolve(Pending& p, std::vector<Pod>& out);
  void remember(const std::string& id);

  Options opts_;
  CriClient client_;                                          // the thread's only
  std::unordered_map<std::string, CriPodSandbox> sandboxes_;  // the thread's only
  std::deque<std::string> sandbox_order_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;               // guarded by mu_
  std::unordered_set<std::string> queued_;  // guarded by mu_
  std::unordered_set<std::string> known_;   // guarded by mu_
  std::deque<std::string> known_order_;     // guarded by mu_
  std::vector<Pod> answers_;                // guarded by mu_
  std::atomic<bool> has_answers_{false};
  Stats stats_;  // guarded by mu_
  int wake_fd_ = -1;
};

}  // namespace vigil::state
