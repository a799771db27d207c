// The kubelet pod-resources API (v1.PodResourcesLister/List, gRPC over the
// unix socket /var/lib/kubelet/pod-resources/kubelet.sock): which device ids
// (GPU or MIG UUIDs, "<uuid>::<replica>" under time-slicing) each container
// of each pod on the node was given.
//
// gRPC is spoken directly through net::HttpClient (HTTP/2 with prior
// knowledge over the unix socket) and a small bounded protobuf decoder for the four messages
// involved, so no gRPC/protobuf runtime is needed.
//
// Pure functions except list_pod_resources(), which performs one request.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/net/http_client.h"
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
// skipped; malformed input (bad varints, lengths past the end, group wire
// types) is an error. At most max_entries entries are returned.
Result<std::vector<ContainerDeviceIds>> decode_list_pod_resources(std::string_view msg,
                                                                  std::size_t max_entries = 65536);

// A gRPC length-prefixed message frame (uncompressed).
std::string grpc_frame(std::string_view msg);
// The first message of a gRPC response body; error when the body is not a
// complete uncompressed frame.
Result<std::string> grpc_first_message(std::string_view body);

// Calls List on the socket. Error when the socket is absent or the call fails.
Result<std::vector<ContainerDeviceIds>> list_pod_resources(const std::string& socket_path,
                                                           std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                                           std::size_t max_bytes = 16u << 20);
// The same through a caller's client (whose cancel() interrupts the call).
Result<std::vector<ContainerDeviceIds>> list_pod_resources(net::HttpClient& client, const std::string& socket_path,
                                                           std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                                           std::size_t max_bytes = 16u << 20);

// Sets PodContainer::gpu_devices of pod from the NVIDIA resources
// ("nvidia.com/...") assigned to its containers (matched by namespace, pod
// name and container name). Returns true when anything changed.
bool apply_pod_resources(Pod& pod, const std::vector<ContainerDeviceIds>& assignments);

}  // namespace vigil::state
