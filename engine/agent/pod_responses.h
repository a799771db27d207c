// The pod responses (docs/prevention.md, "Responses"): a pod labelled
// quarantined, or deleted, through the Kubernetes API server, after an alert.
//
//   label:      PATCH /api/v1/namespaces/NS/pods/NAME, a JSON merge patch that
//               adds the label vigil.dev/quarantined: "true" and the annotation
//               vigil.dev/quarantine-rule: RULE (a NetworkPolicy can select
//               the label to isolate the pod);
//   delete_pod: DELETE /api/v1/namespaces/NS/pods/NAME with a precondition on
//               the pod's uid (a new pod of the same name is never deleted).
//
// The pipeline thread only offers a job; one worker thread sends them, one
// at a time, each bounded in time (connect and whole-request timeouts). The
// queue is bounded: a job offered when it is full is dropped (offer returns
// false; the caller counts it). `done` runs on the worker thread after each
// request, with "" or the error.
//
// Ownership and threads: offer() from one thread at a time (the pipeline's);
// the destructor stops the worker, cancels the request in flight and drops
// the jobs still queued.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "engine/net/http_client.h"
#include "engine/rules/prevention.h"
#include "engine/state/k8s_config.h"

namespace vigil::agent {

struct PodResponseJob {
  std::string rule;
  rules::Response response = rules::kResponseLabel;  // kResponseLabel or kResponseDeletePod
  std::string ns, name, uid;
};

class PodResponder {
 public:
  static constexpr std::size_t kDefaultCapacity = 64;
  using Done = std::function<void(const PodResponseJob&, const std::string& error)>;

  PodResponder(state::K8sConfig cfg, Done done, std::size_t capacity = kDefaultCapacity);
  ~PodResponder();
  PodResponder(const PodResponder&) = delete;
  PodResponder& operator=(const PodResponder&) = delete;

  // Queues a job; false when the queue is full (the job is dropped).
  bool offer(PodResponseJob job);
  // Waits until the queue is empty and no request is in flight (tests).
  void wait_idle();

  // The request a job sends (tests read it).
  net::HttpRequest request(const PodResponseJob& job, std::string& body) const;

 private:
  void loop();

  state::K8sConfig cfg_;
  Done done_;
  std::size_t capacity_;
  net::HttpClient client_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<PodResponseJob> queue_;  // guarded by mu_
  bool busy_ = false;                 // guarded by mu_
  bool stop_ = false;                 // guarded by mu_
  std::thread thread_;
};

}  // namespace vigil::agent
