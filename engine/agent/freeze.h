// The freeze response (docs/prevention.md, "Responses"): a container's cgroup
// frozen after an alert. cgroup v2: `1` written to its cgroup.freeze; on a
// hybrid host where the container's processes are in a cgroup v1 freezer
// hierarchy (the runtime's v1 cgroups), `FROZEN` written to its freezer.state.
//
//   CgroupFreezer f(discover_freeze_roots());
//   FreezeOutcome o = f.freeze(container.id, container.cgroup_path, container.cgroup_id, pid);
//
// What it never freezes: a cgroup whose path does not name the container (the
// host, a pod's slice, a runtime's service), the root, a cgroup holding pid 1
// or vigil (or an ancestor of theirs, by path; and by its own cgroup.procs,
// which must be readable), a path with `.` or `..` components.
// The files are opened one directory at a time with openat and O_NOFOLLOW
// from the hierarchy's mount: a link anywhere on the way fails the freeze.
// On cgroup v2 the directory opened must be the cgroup the events named (its
// inode is the cgroup id).
//
// Pure but for the files under the roots it is given; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vigil::agent {

struct FreezeRoots {
  std::string cgroup2;         // the cgroup v2 mount ("" none)
  std::string freezer;         // the cgroup v1 freezer hierarchy's mount ("" none)
  std::string proc = "/proc";  // where /proc/<pid>/cgroup, /proc/1 and /proc/self are read
  std::uint32_t self_pid = 0;  // vigil's pid, as cgroup.procs lists it
};

// The roots of this host, from /proc/self/mountinfo.
FreezeRoots discover_freeze_roots();
// The mount point of the cgroup v1 hierarchy with the freezer controller in
// mountinfo text; "" when there is none (or its path needs unescaping).
std::string find_freezer_mount(std::string_view mountinfo);

struct FreezeOutcome {
  enum class Result : std::uint8_t {
    kFrozen,   // written (the kernel freezes the tasks asynchronously)
    kRefused,  // a safety rule said no (detail says which)
    kFailed,   // a file could not be opened or written (detail: which and why)
  };
  Result result = Result::kFailed;
  std::string detail;  // kFrozen: "cgroup v2 /path" or "cgroup v1 freezer /path"
};

class CgroupFreezer {
 public:
  explicit CgroupFreezer(FreezeRoots roots);
  // Freezes the container `container_id` (64 hex). `cgroup_path` is its
  // cgroup v2 path ("/kubepods.slice/.../cri-containerd-<id>.scope", as the
  // state has it), `cgroup_id` that cgroup's id (0: not checked), `pid` a
  // process in it: where its /proc/<pid>/cgroup puts it in a v1 freezer
  // cgroup of the container, that one is frozen instead.
  FreezeOutcome freeze(const std::string& container_id, const std::string& cgroup_path, std::uint64_t cgroup_id,
                       std::uint32_t pid) const;

 private:
  FreezeRoots roots_;
};

}  // namespace vigil::agent
