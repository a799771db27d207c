// A stand-in kubelet pod-resources API: a gRPC server of
// v1.PodResourcesLister (generated from the kubelet's upstream .proto) on a
// unix socket, answering List with the assignments it is given.
//
//   StandInKubelet k;
//   ASSERT_TRUE(k.start(dir + "/kubelet.sock", {{"ml", "vllm-0", "server", "nvidia.com/gpu", {"GPU-aaa"}}}));
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/rpc/proto/podresources/api.grpc.pb.h"
#include "engine/state/podresources.h"

namespace vigil::state::testing {

class StandInKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  ~StandInKubelet() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  }
  bool start(const std::string& socket, std::vector<ContainerDeviceIds> assignments) {
    assignments_ = std::move(assignments);
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
    return server_ != nullptr;
  }
  std::atomic<int> lists{0};

  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* r) override {
    ++lists;
    for (const auto& a : assignments_) {
      auto* pod = r->add_pod_resources();
      pod->set_name(a.pod_name);
      pod->set_namespace_(a.pod_namespace);
      auto* c = pod->add_containers();
      c->set_name(a.container);
      auto* d = c->add_devices();
      d->set_resource_name(a.resource);
      for (const auto& id : a.device_ids) d->add_device_ids(id);
    }
    return grpc::Status::OK;
  }

 private:
  std::vector<ContainerDeviceIds> assignments_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace vigil::state::testing
