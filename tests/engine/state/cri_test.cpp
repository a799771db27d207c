// The CRI metadata source against a stand-in runtime: a gRPC server of
// runtime.v1.RuntimeService (generated from the same upstream .proto) on a
// unix socket, answering as containerd does for the labels the kubelet sets.
#include "engine/state/cri.h"

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "engine/rpc/proto/cri/api.grpc.pb.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/state.h"
#include "tests/engine/state/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::state {
namespace {

namespace rt = ::runtime::v1;
using support::TempDir;

const std::string kId = "3b7a1c0f9e4d2a6b8c5e7f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";
const std::string kId2 = "a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8";
const std::string kUid = "5d0c2a9e-1f3b-4c6d-8e7f-9a0b1c2d3e4f";

// A runtime that knows the containers and sandboxes it is given.
class StandInRuntime final : public rt::RuntimeService::Service {
 public:
  void add_container(const std::string& id, const std::string& pod_uid, const std::string& pod, const std::string& ns,
                     const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    rt::ContainerStatus& s = containers_[id];
    s.set_id(id);
    s.mutable_metadata()->set_name(name);
    s.mutable_image()->set_image("registry.local/infer:1.2");
    s.set_image_ref("registry.local/infer@sha256:0123");
    s.set_started_at(1'700'000'000'000'000'000);
    auto& l = *s.mutable_labels();
    if (!pod_uid.empty()) l[kLabelPodUid] = pod_uid;
    l[kLabelPodName] = pod;
    l[kLabelPodNamespace] = ns;
    l[kLabelContainerName] = name;
  }
  void add_sandbox(const std::string& id, const std::string& uid, const std::string& name, const std::string& ns,
                   bool ready, std::int64_t created) {
    std::lock_guard<std::mutex> lk(mu_);
    rt::PodSandbox sb;
    sb.set_id(id);
    sb.mutable_metadata()->set_uid(uid);
    sb.mutable_metadata()->set_name(name);
    sb.mutable_metadata()->set_namespace_(ns);
    sb.set_state(ready ? rt::SANDBOX_READY : rt::SANDBOX_NOTREADY);
    sb.set_created_at(created);
    (*sb.mutable_labels())["app"] = "infer";
    (*sb.mutable_labels())[kLabelPodUid] = uid;
    (*sb.mutable_annotations())["team"] = "ml";
    sandboxes_.push_back(sb);
  }
  std::atomic<int> status_calls{0};
  std::atomic<int> sandbox_calls{0};
  std::atomic<int> delay_ms{0};
  std::atomic<int> fail_next{0};  // calls answered UNAVAILABLE

  grpc::Status Version(grpc::ServerContext*, const rt::VersionRequest*, rt::VersionResponse* r) override {
    r->set_runtime_name("stand-in");
    r->set_runtime_version("1.0");
    return grpc::Status::OK;
  }
  grpc::Status ContainerStatus(grpc::ServerContext*, const rt::ContainerStatusRequest* req,
                               rt::ContainerStatusResponse* r) override {
    ++status_calls;
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    if (fail_next > 0) {
      --fail_next;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
    }
    std::lock_guard<std::mutex> lk(mu_);
    auto it = containers_.find(req->container_id());
    if (it == containers_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such container");
    *r->mutable_status() = it->second;
    return grpc::Status::OK;
  }
  grpc::Status ListPodSandbox(grpc::ServerContext*, const rt::ListPodSandboxRequest* req,
                              rt::ListPodSandboxResponse* r) override {
    ++sandbox_calls;
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& sb : sandboxes_) {
      bool match = true;
      for (const auto& [k, v] : req->filter().label_selector()) {
        auto it = sb.labels().find(k);
        match = match && it != sb.labels().end() && it->second == v;
      }
      if (match) *r->add_items() = sb;
    }
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::map<std::string, rt::ContainerStatus> containers_;
  std::vector<rt::PodSandbox> sandboxes_;
};

class Cri : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/cri.sock";
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    b.RegisterService(&runtime_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_) << "cannot serve on " << socket_;
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  }
  TempDir dir_{"vigil-cri"};
  std::string socket_;
  StandInRuntime runtime_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(Cri, NamesAContainersPodFromTheKubeletsLabels) {
  runtime_.add_container(kId, kUid, "infer-0", "ml", "server");
  runtime_.add_sandbox("sb-old", kUid, "infer-0", "ml", false, 1);
  runtime_.add_sandbox("sb-new", kUid, "infer-0", "ml", true, 2);
  CriClient cri(socket_);
  auto v = cri.version();
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, "stand-in 1.0");
  auto c = cri.container(kId);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(*c);
  EXPECT_EQ((*c)->pod_uid, kUid);
  EXPECT_EQ((*c)->pod_name, "infer-0");
  EXPECT_EQ((*c)->pod_ns, "ml");
  EXPECT_EQ((*c)->name, "server");
  EXPECT_EQ((*c)->image, "registry.local/infer:1.2");
  auto sb = cri.pod_sandbox(kUid);
  ASSERT_TRUE(sb) << sb.error().message;
  ASSERT_TRUE(*sb);
  EXPECT_EQ((*sb)->id, "sb-new") << "the ready sandbox of a restarted pod";
  EXPECT_EQ((*sb)->labels, (std::map<std::string, std::string>{{"app", "infer"}}))
      << "the pod's own labels, without the kubelet's";
  EXPECT_EQ((*sb)->annotations.at("team"), "ml");

  Pod p = pod_from_cri(&**sb, **c);
  EXPECT_TRUE(p.from_runtime);
  EXPECT_EQ(p.name, "infer-0");
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].id, kId);
  EXPECT_EQ(p.containers[0].name, "server");
}

TEST_F(Cri, ContainersItDoesNotKnowOrOutsideKubernetesAreNotFound) {
  runtime_.add_container(kId2, "", "x", "y", "plain");
  CriClient cri(socket_);
  auto unknown = cri.container(kId);
  ASSERT_TRUE(unknown) << unknown.error().message;
  EXPECT_FALSE(*unknown);
  auto plain = cri.container(kId2);
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_FALSE(*plain) << "no pod uid label: not a Kubernetes container";
  auto sb = cri.pod_sandbox(kUid);
  ASSERT_TRUE(sb);
  EXPECT_FALSE(*sb);
}

TEST_F(Cri, AMissingSocketAndASlowRuntimeAreErrorsThatNameTheSocket) {
  CriClient gone(dir_.path() + "/absent.sock", std::chrono::milliseconds(300));
  auto r = gone.container(kId);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("absent.sock"), std::string::npos) << r.error().message;

  runtime_.add_container(kId, kUid, "infer-0", "ml", "server");
  runtime_.delay_ms = 1500;
  CriClient cri(socket_, std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  auto slow = cri.container(kId);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(slow);
  EXPECT_LT(took, std::chrono::milliseconds(1200)) << "the call's deadline bounds it";
  runtime_.delay_ms = 0;
}

bool wait_readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

Container pod_container(const std::string& id) {
  Container c;
  c.id = id;
  c.runtime = "containerd";
  c.pod_uid = kUid;
  return c;
}

TEST_F(Cri, TheResolverNamesANewContainersPodInTheState) {
  runtime_.add_container(kId, kUid, "infer-0", "ml", "server");
  runtime_.add_container(kId2, kUid, "infer-0", "ml", "sidecar");
  runtime_.add_sandbox("sb", kUid, "infer-0", "ml", true, 1);
  State st(testing::replay_config());
  CriResolver r({.socket = socket_});
  ASSERT_TRUE(r.start());
  st.set_unnamed_container_hook([&](const Container& c) { r.request(c.id); });
  st.upsert_container(pod_container(kId));
  st.upsert_container(pod_container(kId2));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (wait_readable(r.wake_fd(), 100)) {
      std::uint64_t n;
      [[maybe_unused]] auto rd = ::read(r.wake_fd(), &n, sizeof n);
    }
    r.drain(st);
    const Pod* p = st.pod(kUid);
    if (p && p->containers.size() == 2) break;
  }
  const Pod* p = st.pod(kUid);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "infer-0");
  EXPECT_EQ(p->ns, "ml");
  EXPECT_EQ(p->labels.at("app"), "infer");
  ASSERT_EQ(p->containers.size(), 2u) << "both containers of the pod";
  ASSERT_TRUE(st.container(kId));
  EXPECT_EQ(st.container(kId)->name, "server");
  EXPECT_EQ(st.container(kId2)->name, "sidecar");
  EXPECT_EQ(runtime_.sandbox_calls.load(), 1) << "the sandbox is asked once per pod";

  // Met again (a container record upserted anew): not asked again.
  st.upsert_container(pod_container(kId));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(runtime_.status_calls.load(), 2);
  EXPECT_EQ(r.stats().found, 2u);
}

TEST_F(Cri, AFailedCallIsRetriedAndAFullQueueIsCounted) {
  runtime_.add_container(kId, kUid, "infer-0", "ml", "server");
  runtime_.fail_next = 1;
  CriResolver r({.socket = socket_, .retry_after = std::chrono::milliseconds(50), .max_queue = 2});
  ASSERT_TRUE(r.start());
  r.request(kId);
  State st(testing::replay_config());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!st.pod(kUid) && std::chrono::steady_clock::now() < deadline) {
    wait_readable(r.wake_fd(), 100);
    r.drain(st);
  }
  ASSERT_TRUE(st.pod(kUid)) << "answered on the second try";
  EXPECT_EQ(r.stats().errors, 1u);
  EXPECT_EQ(r.stats().found, 1u);
  r.stop();

  CriResolver full({.socket = socket_, .max_queue = 2});  // not started: nothing leaves the queue
  full.request("a");
  full.request("b");
  full.request("c");
  full.request("a");
  EXPECT_EQ(full.stats().pending, 2u);
  EXPECT_EQ(full.stats().dropped, 1u);
}

// What the runtime says completes a pod's record and never replaces the API
// server's; the API's record replaces the runtime's and keeps the container
// ids it does not list yet; a pod known only from the runtime judges no GPU
// allocation.
TEST(CriPods, RuntimeAndApiRecordsMerge) {
  State st(testing::replay_config());
  Container c = pod_container(kId);
  st.upsert_container(c);
  CriContainer rc{
      .id = kId, .name = "server", .image = "img:1", .pod_uid = kUid, .pod_name = "infer-0", .pod_ns = "ml"};
  st.upsert_pod(pod_from_cri(nullptr, rc));
  ASSERT_TRUE(st.pod(kUid));
  EXPECT_TRUE(st.pod(kUid)->from_runtime);
  EXPECT_EQ(st.container(kId)->name, "server");

  Pod api;
  api.uid = kUid;
  api.name = "infer-0";
  api.ns = "ml";
  api.labels = {{"app", "infer"}};
  PodContainer pc;
  pc.name = "server";
  pc.image = "img:1";
  pc.gpu_limit = 1;  // no id yet: the API has not seen the container start
  api.containers.push_back(pc);
  st.upsert_pod(api);
  ASSERT_TRUE(st.pod(kUid));
  EXPECT_FALSE(st.pod(kUid)->from_runtime);
  ASSERT_EQ(st.pod(kUid)->containers.size(), 1u);
  EXPECT_EQ(st.pod(kUid)->containers[0].id, kId) << "the runtime's id kept";
  EXPECT_EQ(st.pod(kUid)->containers[0].gpu_limit, 1);

  CriContainer late{.id = kId2, .name = "sidecar", .pod_uid = kUid, .pod_name = "infer-0", .pod_ns = "ml"};
  st.upsert_pod(pod_from_cri(nullptr, late));
  ASSERT_TRUE(st.pod(kUid));
  EXPECT_FALSE(st.pod(kUid)->from_runtime) << "the runtime completes, never replaces";
  EXPECT_EQ(st.pod(kUid)->labels.at("app"), "infer");
  EXPECT_EQ(st.pod(kUid)->containers.size(), 2u);
}

}  // namespace
}  // namespace vigil::state
