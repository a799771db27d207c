// A real container runtime for end-to-end tests: Debian's containerd, started
// by the test with its CRI plugin on a private socket, root and state under a
// temporary directory, two images built here and imported (a pause image and
// an application image: a static busybox, tests/e2e/cri_image.py), and pods
// made through the CRI exactly as the kubelet makes them (the same labels,
// the cgroupfs driver's /kubepods/besteffort/pod<uid> parent, the host's
// network so that no CNI is needed). Nothing is downloaded.
//
//   Containerd ctd;
//   if (std::string why = ctd.start(dir.path()); !why.empty()) GTEST_SKIP() << why;
//   auto pod = ctd.run_pod("infer-0", "ml", uid);
//   std::string id = ctd.start_container(*pod, "server", {"/bin/cat", "/etc/shadow"});
//
// The destructor removes every pod it made, stops containerd and unmounts
// what it left under the directory. run_pod, start_container and remove_pod
// may be called from several threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace vigil::e2e {

class Containerd {
 public:
  struct Pod {
    std::string sandbox_id;
    std::string uid;
    std::string name;
    std::string ns;
  };

  Containerd();
  ~Containerd();
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  // Starts containerd under `dir` and imports the images: "" when it runs,
  // else why it cannot (no containerd, no busybox-static, no cgroup v2...).
  std::string start(const std::string& dir);
  const std::string& socket() const { return socket_; }
  // RunPodSandbox as the kubelet calls it; nullopt (with the error in
  // last_error()) when the runtime refused.
  std::optional<Pod> run_pod(const std::string& name, const std::string& ns, const std::string& uid);
  // CreateContainer + StartContainer in `pod`: its id, "" on failure.
  std::string start_container(const Pod& pod, const std::string& name, const std::vector<std::string>& command);
  // StopPodSandbox + RemovePodSandbox.
  bool remove_pod(const Pod& pod);
  std::string last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string dir_;
  std::string socket_;
  std::string error_;
  support::Child daemon_;
  std::vector<Pod> pods_;
};

}  // namespace vigil::e2e
