// The Kubernetes API stand-in of the state tests
// (tests/engine/state/k8s_stub.py) as a child process of a test, serving
// HTTPS on loopback with a server certificate for 127.0.0.1 signed by a CA
// made for the test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace vigil::support {

// The stand-in's fixed script: LIST (pod a), WATCH (ADDED b, MODIFIED a,
// drop), WATCH (410 Gone), LIST (a, then c on a second page), WATCH (DELETED
// a, BOOKMARK, then open). After that script pod "c" (namespace "ml", uid
// kStablePodUid, container "main" with id stable_container_id()) is the one
// pod that stays; tests attribute to it. Needs python3 and openssl; the
// working directory must be the repository root. Stopped on destruction.
class K8sStub {
 public:
  static constexpr const char* kNode = "gpu-node-1";
  static constexpr const char* kStablePodUid = "cccccccc-0000-4000-8000-000000000003";
  static constexpr const char* kStablePodName = "c";
  static constexpr const char* kStablePodNamespace = "ml";
  static std::string stable_container_id() { return std::string(64, 'c'); }

  K8sStub() = default;
  ~K8sStub();
  K8sStub(const K8sStub&) = delete;
  K8sStub& operator=(const K8sStub&) = delete;

  // Makes the certificates and the token file in `dir` (which must outlive
  // this object) and starts the stand-in. Returns "" on success, else why it
  // could not start (a reason to skip the test). `stable_pod_gpus` (e.g. "1"
  // or "0,1"), when not empty, gives pod "c"'s container those GPUs
  // (NVIDIA_VISIBLE_DEVICES and an nvidia.com/gpu limit of as many); by
  // default it has none.
  std::string start(const TempDir& dir, const std::string& stable_pod_gpus = "");

  // Before start(): the stand-in waits this long before it announces pod
  // "c" (the second page of its second LIST), as an API server that learns
  // of a pod late.
  void set_stable_pod_delay(std::chrono::milliseconds d) { stable_pod_delay_ = d; }

  std::string url() const { return "https://127.0.0.1:" + port_; }
  std::string ca() const { return dir_ + "/ca.crt"; }
  std::string token_file() const { return dir_ + "/token"; }

  // The `vigil run` (and `vigil capture`) options that point it at this stand-in.
  std::vector<std::string> vigil_args() const;
  // A vigil configuration file's k8s section for this stand-in (api,
  // ca_file, token_file, node_name), the -c counterpart of vigil_args().
  std::string config_yaml() const;

  // Waits until the watcher has gone through the script up to its third
  // WATCH (so it has listed pod "c"); false on timeout.
  bool wait_script_done(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // The stand-in's request log (one JSON object per request; a PATCH or
  // DELETE of a pod is logged with kind "patch" or "delete", its path,
  // content_type, body and auth, and answered 200 with the pod).
  std::string requests() const;

 private:
  std::string dir_;
  std::string port_;
  pid_t pid_ = -1;
  std::chrono::milliseconds stable_pod_delay_{0};
};

}  // namespace vigil::support
