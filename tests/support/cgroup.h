// Kubelet-style cgroups for tests: the directories the kubelet (systemd
// cgroup driver) and containerd make for a pod's container, under the cgroup
// v2 root of this machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::support {

// Where the cgroup v2 hierarchy's root is mounted (from
// /proc/self/mountinfo); "" when there is none.
std::string cgroup2_root();

// The pod's QoS class, which decides the kubelet's slice levels.
enum class QosClass {
  kGuaranteed,  // kubepods.slice/kubepods-pod<uid_>.slice
  kBestEffort,  // kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice
};

// kubepods.slice/.../kubepods-...-pod<uid_>.slice/cri-containerd-<id>.scope
// under the cgroup v2 root (the pod uid's dashes written as '_', as the
// systemd driver does), made for the test. The levels it made are removed in
// reverse order on destruction; a level that existed before, or that another
// rig still uses, stays.
class PodCgroup {
 public:
  PodCgroup(const std::string& pod_uid, const std::string& container_id, QosClass qos = QosClass::kBestEffort);
  ~PodCgroup();
  PodCgroup(const PodCgroup&) = delete;
  PodCgroup& operator=(const PodCgroup&) = delete;

  bool ok() const { return error_.empty() && id_ != 0; }
  // Why it could not be made ("" when ok()).
  const std::string& error() const { return error_; }
  // The container's cgroup directory (the .scope).
  const std::string& scope() const { return scope_; }
  // The container cgroup's id (the inode of its directory), as BPF programs
  // see it; 0 when it could not be made.
  std::uint64_t id() const { return id_; }

 private:
  std::vector<std::string> created_;
  std::string scope_;
  std::string error_;
  std::uint64_t id_ = 0;
};

}  // namespace vigil::support
