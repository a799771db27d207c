// The container runtime's view of a Kubernetes container, over the CRI
// (runtime.v1.RuntimeService, gRPC on the runtime's unix socket: containerd's
// /run/containerd/containerd.sock, CRI-O's /run/crio/crio.sock).
//
// The kubelet creates every pod sandbox and container through the CRI with
// the pod's name, namespace and uid and the container's name as labels, so
// the runtime can name a container's pod before the container's first
// instruction runs, and while the API server is away. Two calls per new
// container: ContainerStatus (its labels, image and start), and once per pod
// ListPodSandbox by the pod uid label (the pod's own labels and annotations).
//
//   CriClient cri("/run/containerd/containerd.sock");
//   auto c = cri.container(id);          // blocking, bounded by the timeout
//   auto p = cri.pod_sandbox(c->pod_uid);
//   Pod pod = pod_from_cri(*p, *c);      // from_runtime
//
// Everything the runtime sends is bounded (message size, label counts and
// string lengths) before it reaches the State. Blocking: never call it on
// the event loop (cri_resolver.h runs it on a thread of its own).
// Thread-safety: one CriClient per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::state {

// The sockets tried, in order, when none is configured.
inline constexpr const char* kCriSockets[] = {"/run/containerd/containerd.sock", "/run/crio/crio.sock",
                                              "/var/run/containerd/containerd.sock", "/var/run/crio/crio.sock"};

// The kubelet's labels on CRI sandboxes and containers.
inline constexpr const char* kLabelPodName = "io.kubernetes.pod.name";
inline constexpr const char* kLabelPodNamespace = "io.kubernetes.pod.namespace";
inline constexpr const char* kLabelPodUid = "io.kubernetes.pod.uid";
inline constexpr const char* kLabelContainerName = "io.kubernetes.container.name";

// Bounds on what the runtime sends.
inline constexpr std::size_t kCriMaxMessage = 4u << 20;
inline constexpr std::size_t kCriMaxLabels = 256;
inline constexpr std::size_t kCriMaxString = 4096;

struct CriContainer {
  std::string id;
  std::string name;  // io.kubernetes.container.name, else the CRI metadata name
  std::string image;
  std::string image_ref;
  std::int64_t started_at_ns = 0;
  std::string pod_uid;
  std::string pod_name;
  std::string pod_ns;
};

struct CriPodSandbox {
  std::string id;
  std::string uid;
  std::string name;
  std::string ns;
  std::map<std::string, std::string> labels;  // the pod's own (io.kubernetes.* removed)
  std::map<std::string, std::string> annotations;
};

class CriClient {
 public:
  explicit CriClient(std::string socket_path, std::chrono::milliseconds timeout = std::chrono::seconds(2));
  ~CriClient();
  CriClient(const CriClient&) = delete;
  CriClient& operator=(const CriClient&) = delete;

  const std::string& socket_path() const { return socket_; }
  // The runtime's name and version ("containerd 1.6.20"): a cheap check that
  // the socket speaks CRI v1.
  Result<std::string> version();
  // A container by its id: nullopt when the runtime does not know it or it
  // is not a Kubernetes container (no pod uid label). An error is a failed
  // call (socket, timeout, protocol).
  Result<std::optional<CriContainer>> container(const std::string& id);
  // The ready (else the newest) sandbox of the pod with uid `pod_uid`;
  // nullopt when there is none.
  Result<std::optional<CriPodSandbox>> pod_sandbox(const std::string& pod_uid);

 private:
  struct Impl;
  std::string socket_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Impl> impl_;
};

// The State's record of a pod as the runtime knows it (from_runtime), with
// the one container `c` (the sandbox may be absent: then labels and
// annotations are empty).
Pod pod_from_cri(const CriPodSandbox* sandbox, const CriContainer& c);

}  // namespace vigil::state
