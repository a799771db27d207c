#include "engine/state/podresources.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <atomic>
#include <mutex>

#include "engine/rpc/proto/podresources/api.grpc.pb.h"

namespace vigil::state {
namespace {

namespace pr = ::v1;

constexpr std::size_t kMaxPodResourcesString = 1024;
constexpr std::size_t kMaxIdsPerDevice = 1024;

std::string bounded(const std::string& s) {
  return s.size() <= kMaxPodResourcesString ? s : s.substr(0, kMaxPodResourcesString);
}

std::vector<ContainerDeviceIds> entries_of(const pr::ListPodResourcesResponse& resp, std::size_t max) {
  std::vector<ContainerDeviceIds> out;
  for (const auto& pod : resp.pod_resources()) {
    for (const auto& c : pod.containers()) {
      for (const auto& d : c.devices()) {
        if (out.size() >= max) return out;
        ContainerDeviceIds e{
            bounded(pod.namespace_()), bounded(pod.name()), bounded(c.name()), bounded(d.resource_name()), {}};
        for (const auto& id : d.device_ids()) {
          if (e.device_ids.size() >= kMaxIdsPerDevice) break;
          e.device_ids.push_back(bounded(id));
        }
        out.push_back(std::move(e));
      }
    }
  }
  return out;
}

}  // namespace

Result<std::vector<ContainerDeviceIds>> decode_list_pod_resources(std::string_view msg, std::size_t max_entries) {
  pr::ListPodResourcesResponse resp;
  if (!resp.ParseFromArray(msg.data(), static_cast<int>(msg.size()))) {
    return Error::bad_input("pod-resources: malformed ListPodResourcesResponse");
  }
  return entries_of(resp, max_entries);
}

struct PodResourcesClient::Impl {
  std::chrono::milliseconds timeout;
  std::size_t max_bytes;
  std::mutex mu;
  grpc::ClientContext* active = nullptr;  // guarded by mu
  bool cancelled = false;                 // guarded by mu
};

PodResourcesClient::PodResourcesClient(std::chrono::milliseconds timeout, std::size_t max_bytes)
    : impl_(std::make_unique<Impl>()) {
  impl_->timeout = timeout;
  impl_->max_bytes = max_bytes;
}

PodResourcesClient::~PodResourcesClient() = default;

void PodResourcesClient::cancel() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->cancelled = true;
  if (impl_->active) impl_->active->TryCancel();
}

Result<std::vector<ContainerDeviceIds>> PodResourcesClient::list(const std::string& socket_path) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Error::runtime("pod-resources: no socket at " + socket_path);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(impl_->max_bytes));
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  auto stub = pr::PodResourcesLister::NewStub(
      grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + impl_->timeout);
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->cancelled) return Error::runtime("pod-resources: cancelled");
    impl_->active = &ctx;
  }
  pr::ListPodResourcesRequest req;
  pr::ListPodResourcesResponse resp;
  grpc::Status s = stub->List(&ctx, req, &resp);
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->active = nullptr;
  }
  if (!s.ok()) {
    return Error::runtime("pod-resources: List on unix:" + socket_path + ": " + bounded(s.error_message()) +
                          " (gRPC code " + std::to_string(static_cast<int>(s.error_code())) + ")");
  }
  return entries_of(resp, 65536);
}

Result<std::vector<ContainerDeviceIds>> list_pod_resources(const std::string& socket_path,
                                                           std::chrono::milliseconds timeout, std::size_t max_bytes) {
  PodResourcesClient client(timeout, max_bytes);
  return client.list(socket_path);
}

bool apply_pod_resources(Pod& pod, const std::vector<ContainerDeviceIds>& assignments) {
  bool changed = false;
  for (auto& pc : pod.containers) {
    std::vector<std::string> ids;
    for (const auto& a : assignments) {
      if (a.pod_namespace != pod.ns || a.pod_name != pod.name || a.container != pc.name) continue;
      if (a.resource.rfind("nvidia.com/", 0) != 0) continue;
      for (const auto& id : a.device_ids) {
        if (ids.size() < kMaxIdsPerDevice) ids.push_back(id);
      }
    }
    if (ids != pc.gpu_devices) {
      pc.gpu_devices = std::move(ids);
      changed = true;
    }
  }
  return changed;
}

}  // namespace vigil::state
