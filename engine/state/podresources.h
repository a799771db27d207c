// The kubelet pod-resources API (v1.PodResourcesLister/List, gRPC over the
// unix socket /var/lib/kubelet/pod-resources/kubelet.sock): which device ids
// (GPU or MIG UUIDs, "<uuid>::<replica>" under time-slicing) each container
// of each pod on the node was given.
//
// The client is generated from the kubelet's upstream api.proto
// (engine/rpc) and spoken through Debian's gRPC; every answer is bounded in
// size (the call's maximum message) and in entries.
//
// Pure functions except list_pod_resources() and PodResourcesClient, which
// perform calls. Thread-safe, except a PodResourcesClient (one thread calls
// list(); cancel() from any).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::state {

constexpr const char* kPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

struct ContainerDeviceIds {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string resource;  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ...
  std::vector<std::string> device_ids;
  bool operator==(const ContainerDeviceIds&) const = default;
};

// Decodes a serialized v1.ListPodResourcesResponse. Unknown fields are
// skipped; malformed input (bad varints, lengths past the end, groups) is an
// error. At most max_entries entries are returned, each with at most 1024
// device ids, every string cut to 1024 bytes.
Result<std::vector<ContainerDeviceIds>> decode_list_pod_resources(std::string_view msg,
                                                                  std::size_t max_entries = 65536);

// Calls List on the socket. Error when the socket is absent or the call fails.
Result<std::vector<ContainerDeviceIds>> list_pod_resources(const std::string& socket_path,
                                                           std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                                           std::size_t max_bytes = 16u << 20);

// The same as a client whose call another thread can cut short (the pod
// watcher's stop()).
class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                              std::size_t max_bytes = 16u << 20);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;
  Result<std::vector<ContainerDeviceIds>> list(const std::string& socket_path);
  // Ends a call under way (it returns an error) and every later one.
  void cancel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sets PodContainer::gpu_devices of pod from the NVIDIA resources
// ("nvidia.com/...") assigned to its containers (matched by namespace, pod
// name and container name). Returns true when anything changed.
bool apply_pod_resources(Pod& pod, const std::vector<ContainerDeviceIds>& assignments);

}  // namespace vigil::state
