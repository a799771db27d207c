// Pods of this node from the Kubernetes API: LIST, then WATCH
// /api/v1/pods?fieldSelector=spec.nodeName=<node> from the list's
// resourceVersion, handling ADDED/MODIFIED/DELETED/BOOKMARK and ERROR
// (410 Gone → relist), reconnecting with capped exponential backoff and full
// jitter. libcurl over HTTPS; every response is bounded in size.
//
//   auto cfg = k8s_config_discover({});   // in-cluster, or nullopt-like error
//   PodWatcher w(*cfg);
//   w.start();
//   while (running) { w.drain(state); ... }   // on the pipeline thread
//
// Ownership and threads: PodWatcher owns one thread that talks to the API
// server and a bounded queue of updates; drain() is called by the pipeline
// thread (the one that owns the State) and applies queued updates to it.
// start()/stop()/drain()/stats() are thread-safe. When the queue overflows the
// watcher drops what is queued and relists, so the State converges instead of
// missing a deletion. With no API server at all, no watcher is created and the
// k8s fields stay empty.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "engine/state/model.h"
#include "engine/state/podresources.h"
#include "engine/util/result.h"

namespace vigil::state {

class State;

struct K8sConfig {
  std::string api_url;         // "https://10.96.0.1:443" (no trailing slash)
  std::string token;           // bearer token (kubeconfig "token")
  std::string token_file;      // re-read at every connection (rotated service-account tokens)
  std::string ca_file;         // PEM CA bundle; "" = system CAs
  std::string ca_pem;          // PEM CA given inline (kubeconfig certificate-authority-data)
  std::string client_cert_file;
  std::string client_key_file;
  std::string client_cert_pem;  // inline (client-certificate-data)
  std::string client_key_pem;   // inline (client-key-data)
  bool insecure = false;        // skip TLS verification (tests only)
  std::string node_name;        // pods of this node only
  std::size_t max_list_bytes = 16u << 20;   // one LIST page (pages of at most 100 pods)
  std::size_t max_event_bytes = 2u << 20;   // one WATCH event line (etcd keeps objects < 1.5 MiB)
  std::size_t max_pods = 4096;              // pods kept from one LIST
  std::size_t queue_capacity = 4096;        // updates waiting for drain()
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::seconds connect_timeout{10};
  int watch_timeout_s = 300;                // server-side timeoutSeconds of one WATCH
  // The kubelet pod-resources socket, asked which GPU ids each GPU container
  // got ("" = never ask). Absent socket: silently skipped.
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::chrono::milliseconds pod_resources_refresh{2000};  // at most one List per interval
};

// Where the pod source comes from. Explicit settings win over the kubeconfig,
// which wins over in-cluster discovery.
struct K8sOptions {
  std::string api_url;      // --k8s-api URL
  std::string token_file;
  std::string ca_file;
  bool insecure = false;
  std::string kubeconfig;   // path of a kubeconfig file
  std::string node_name;    // "" = NODE_NAME, else the hostname
  // For tests: environment and service-account directory to use.
  std::map<std::string, std::string> env_for_test;
  bool use_env_for_test = false;
  std::string sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// The API server to talk to, or an error saying why there is none (not in a
// cluster and nothing configured: Error::runtime; a broken kubeconfig:
// Error::bad_input).
Result<K8sConfig> k8s_config_discover(const K8sOptions& opt);
// The current context of a kubeconfig file's text (base_dir resolves relative paths).
Result<K8sConfig> k8s_config_from_kubeconfig(std::string_view yaml, const std::string& base_dir);

// A Pod from the JSON text of a v1.Pod. Container ids lose their runtime
// prefix ("containerd://"). Strings, maps and lists are bounded; annotations
// with huge values (last-applied-configuration) are skipped.
Result<Pod> parse_pod_json(std::string_view json);

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
    bool synced = false;             // a LIST succeeded at least once
    std::string last_error;
  };

  explicit PodWatcher(K8sConfig cfg);
  ~PodWatcher();
  PodWatcher(const PodWatcher&) = delete;
  PodWatcher& operator=(const PodWatcher&) = delete;

  // Starts the watcher thread. Error when already started or the URL is not https/http.
  Status start();
  // Stops and joins the thread (also done by the destructor). Interrupts a
  // blocked request within about a second.
  void stop();
  // Applies every queued update to the State (pipeline thread). A sync
  // replaces the whole pod set: pods that vanished are removed. Returns true
  // when anything changed.
  bool drain(State& state);
  Stats stats() const;

 private:
  enum class WatchEnd { kClosed, kGone, kError, kStopped, kResync };
  void run();
  bool list(std::string* rv);
  WatchEnd watch(std::string* rv);
  bool push(PodUpdate u);
  void sleep_backoff(int failures);
  void note_error(std::string msg);
  std::string bearer_token() const;
  // Fills gpu_devices from the kubelet pod-resources API (watcher thread).
  void annotate(Pod& pod);

  K8sConfig cfg_;
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
};

}  // namespace vigil::state
