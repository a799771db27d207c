// Containers from cgroup v2 paths, and the cgroup v2 hierarchy itself.
//
// parse_cgroup_path() recognises the cgroup layouts of containerd, CRI-O,
// Docker and podman under both the systemd and the cgroupfs cgroup drivers:
//
//   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
//   /kubepods.slice/kubepods-pod<uid_>.slice/crio-<id>.scope
//   /kubepods/burstable/pod<uid>/<id>            (containerd, cgroupfs driver)
//   /kubepods/besteffort/pod<uid>/crio-<id>      (CRI-O, cgroupfs driver)
//   /system.slice/docker-<id>.scope   /docker/<id>
//   /machine.slice/libpod-<id>.scope[/container]   /libpod_parent/libpod-<id>
//
// The innermost container wins (kind-style nesting: a kubelet inside Docker).
// <id> must be 64 lower-case hex digits and <uid> a UUID; anything else is not
// a container. conmon scopes (crio-conmon-*, libpod-conmon-*) are not
// containers. All functions here are pure or touch only the paths given;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::state {

struct CgroupMatch {
  std::string id;       // 64 hex
  std::string runtime;  // one of ContainerRuntime
  std::string pod_uid;  // dashed UUID, "" outside Kubernetes
  bool operator==(const CgroupMatch&) const = default;
};

std::optional<CgroupMatch> parse_cgroup_path(std::string_view path);

// The mount point of the cgroup v2 hierarchy from the text of
// /proc/self/mountinfo (octal escapes decoded). Prefers a mount of the
// hierarchy's root ("/"); nullopt when there is no cgroup2 mount.
std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo);

// The cgroup v2 path of a process from the text of /proc/<pid>/cgroup (the
// "0::<path>" line); nullopt when the process has no v2 line.
std::optional<std::string> cgroup_v2_path(std::string_view proc_cgroup);

// The cgroup id of a directory (its inode number), 0 when it cannot be read.
std::uint64_t cgroup_id_of(const std::string& dir);

// Walks the cgroup tree under root depth-first, calling visit(relative_path,
// cgroup_id) for each directory ("/" for the root itself) until visit returns
// false or max_dirs directories were seen. Never follows symlinks; bounded in
// depth (kMaxCgroupDepth). Returns the number of directories visited.
constexpr int kMaxCgroupDepth = 32;
std::size_t walk_cgroups(const std::string& root, std::size_t max_dirs,
                         const std::function<bool(const std::string&, std::uint64_t)>& visit);

}  // namespace vigil::state
