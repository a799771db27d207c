#include "engine/state/cri.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <utility>

#include "engine/rpc/proto/cri/api.grpc.pb.h"

namespace vigil::state {

namespace rt = ::runtime::v1;

namespace {

std::string bounded(const std::string& s) { return s.size() <= kCriMaxString ? s : s.substr(0, kCriMaxString); }

template <typename M>
std::map<std::string, std::string> bounded_map(const M& m, bool drop_kubelet_keys) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m) {
    if (out.size() >= kCriMaxLabels) break;
    if (drop_kubelet_keys && k.rfind("io.kubernetes.", 0) == 0) continue;
    out.emplace(bounded(k), bounded(v));
  }
  return out;
}

template <typename M>
std::string label(const M& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : bounded(it->second);
}

void with_deadline(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

Error call_error(const char* what, const std::string& socket, const grpc::Status& st) {
  return Error::runtime(std::string("CRI ") + what + " on " + socket + ": " + bounded(st.error_message()) +
                        " (gRPC code " + std::to_string(static_cast<int>(st.error_code())) + ")");
}

}  // namespace

struct CriClient::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<rt::RuntimeService::Stub> stub;
};

CriClient::CriClient(std::string socket_path, std::chrono::milliseconds timeout)
    : socket_(std::move(socket_path)), timeout_(timeout), impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(kCriMaxMessage));
  args.SetMaxSendMessageSize(1 << 20);
  // One runtime on one node: no retries, proxies or load balancing of gRPC's own.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  impl_->channel = grpc::CreateCustomChannel("unix:" + socket_, grpc::InsecureChannelCredentials(), args);
  impl_->stub = rt::RuntimeService::NewStub(impl_->channel);
}

CriClient::~CriClient() = default;

Result<std::string> CriClient::version() {
  grpc::ClientContext ctx;
  with_deadline(ctx, timeout_);
  rt::VersionRequest req;
  req.set_version("v1");
  rt::VersionResponse resp;
  grpc::Status st = impl_->stub->Version(&ctx, req, &resp);
  if (!st.ok()) return call_error("Version", socket_, st);
  return bounded(resp.runtime_name()) + " " + bounded(resp.runtime_version());
}

Result<std::optional<CriContainer>> CriClient::container(const std::string& id) {
  grpc::ClientContext ctx;
  with_deadline(ctx, timeout_);
  rt::ContainerStatusRequest req;
  req.set_container_id(id);
  rt::ContainerStatusResponse resp;
  grpc::Status st = impl_->stub->ContainerStatus(&ctx, req, &resp);
  if (st.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<CriContainer>();
  if (!st.ok()) return call_error("ContainerStatus", socket_, st);
  const rt::ContainerStatus& s = resp.status();
  CriContainer c;
  c.id = bounded(s.id());
  c.pod_uid = label(s.labels(), kLabelPodUid);
  if (c.id != id || c.pod_uid.empty()) return std::optional<CriContainer>();
  c.pod_name = label(s.labels(), kLabelPodName);
  c.pod_ns = label(s.labels(), kLabelPodNamespace);
  c.name = label(s.labels(), kLabelContainerName);
  if (c.name.empty()) c.name = bounded(s.metadata().name());
  c.image = bounded(s.image().image());
  c.image_ref = bounded(s.image_ref());
  c.started_at_ns = s.started_at();
  return std::optional<CriContainer>(std::move(c));
}

Result<std::optional<CriPodSandbox>> CriClient::pod_sandbox(const std::string& pod_uid) {
  grpc::ClientContext ctx;
  with_deadline(ctx, timeout_);
  rt::ListPodSandboxRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kLabelPodUid] = pod_uid;
  rt::ListPodSandboxResponse resp;
  grpc::Status st = impl_->stub->ListPodSandbox(&ctx, req, &resp);
  if (!st.ok()) return call_error("ListPodSandbox", socket_, st);
  // A pod restarted by the kubelet has several sandboxes: the ready one,
  // else the newest.
  const rt::PodSandbox* best = nullptr;
  for (const auto& sb : resp.items()) {
    if (sb.metadata().uid() != pod_uid) continue;
    auto rank = [](const rt::PodSandbox& x) {
      return std::make_pair(x.state() == rt::SANDBOX_READY ? 1 : 0, x.created_at());
    };
    if (!best || rank(sb) > rank(*best)) best = &sb;
  }
  if (!best) return std::optional<CriPodSandbox>();
  CriPodSandbox p;
  p.id = bounded(best->id());
  p.uid = bounded(best->metadata().uid());
  p.name = bounded(best->metadata().name());
  p.ns = bounded(best->metadata().namespace_());
  p.labels = bounded_map(best->labels(), true);
  p.annotations = bounded_map(best->annotations(), false);
  return std::optional<CriPodSandbox>(std::move(p));
}

Pod pod_from_cri(const CriPodSandbox* sandbox, const CriContainer& c) {
  Pod p;
  p.from_runtime = true;
  p.uid = c.pod_uid;
  p.name = c.pod_name;
  p.ns = c.pod_ns;
  if (sandbox && sandbox->uid == c.pod_uid) {
    if (p.name.empty()) p.name = sandbox->name;
    if (p.ns.empty()) p.ns = sandbox->ns;
    p.labels = sandbox->labels;
    p.annotations = sandbox->annotations;
  }
  PodContainer pc;
  pc.name = c.name;
  pc.image = c.image;
  pc.id = c.id;
  pc.started_at_ns = c.started_at_ns;
  p.containers.push_back(std::move(pc));
  return p;
}

}  // namespace vigil::state
