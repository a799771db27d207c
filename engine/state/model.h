// What vigil knows about the node's processes, containers and pods: plain data
// records kept by the state component (engine/state), written into capture
// files, and read by the rule engine through EvalContext.
//
// Thread-safety: these are values. The state component decides who may hold
// pointers to them and for how long (see EvalContext below).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/event.h"

namespace vigil::state {

// An fd of a process that refers to an NVIDIA device node (major 195, the
// nvidia-uvm major, or a node named nvidia*). Learnt from open events and from
// /proc/<pid>/fd at start. There is no close event: an entry lives until the
// fd number is reused for another open, the process execs (close-on-exec fds)
// or exits.
struct GpuFd {
  std::int32_t fd = -1;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  bool cloexec = false;
  bool operator==(const GpuFd&) const = default;
};

// A process as the state knows it: its rows of the process facts table
// (engine/event/process_facts.h), which says what each member is, and the
// NVIDIA device fds it holds.
struct Process {
  VG_PROCESS_FACTS(VG_FACT_MEMBER_PROCESS)
  // prior_cmdlines: at most kMaxPriorImages, each cut to kMaxPriorImageBytes.
  static constexpr std::size_t kMaxPriorImages = 4;
  static constexpr std::size_t kMaxPriorImageBytes = 512;
  // Its NVIDIA device fds; bounded (State: kMaxGpuFds). Not a recorded fact:
  // what it holds now, learnt again from its open events.
  std::vector<GpuFd> gpu_fds;
  // The name its main thread gave itself after the exec (prctl(PR_SET_NAME),
  // a write to /proc/self/comm), as its latest event from that thread
  // carried it; "" while it is the one the exec set. Not a recorded fact:
  // learnt again from its events. Read for events that carry no comm of the
  // process (a plugin's sample of it).
  std::string comm_now;

  // The process record (capture files, rule tests): v(name, member) for each
  // fact in record order, each after v.revision(n), n the record revision that
  // appended it (0: the first format).
  template <class V, class Self>
  static void fields(V& v, Self& d) {
#define VIGIL_PROCESS_FIELD(T, name, init, exec, rec, opts) \
  VG_FACT_IN_PROCESS_##rec(v.revision(VG_FACT_REV_##rec); v(#name, d.name);)
    VG_PROCESS_FACTS(VIGIL_PROCESS_FIELD)
#undef VIGIL_PROCESS_FIELD
  }
};

struct ContainerRuntime {
  static constexpr const char* kContainerd = "containerd";
  static constexpr const char* kCrio = "cri-o";
  static constexpr const char* kDocker = "docker";
  static constexpr const char* kPodman = "podman";
};

struct Container {
  std::string id;               // the full 64-hex id
  std::string runtime;          // one of ContainerRuntime
  std::string pod_uid;          // "" when not a Kubernetes pod
  std::string cgroup_path;      // relative to the cgroup v2 root
  std::uint64_t cgroup_id = 0;  // the cgroup v2 id events carry
  // Filled from the pod spec/status once the pod is known:
  std::string name;   // the container's name in its pod
  std::string image;  // "registry/repo:tag"
  std::string image_id;
  bool privileged = false;
};

struct PodContainer {
  std::string name;
  std::string image;
  std::string id;                        // from status.containerStatuses (runtime prefix removed)
  std::int64_t gpu_limit = 0;            // resources.limits["nvidia.com/gpu"] (+ gpu.shared, mig-*)
  std::string nvidia_visible_devices;    // env NVIDIA_VISIBLE_DEVICES, "" if unset
  std::vector<std::string> gpu_devices;  // device ids from the kubelet pod-resources API
  bool privileged = false;
  // status.containerStatuses[].state.running.startedAt, ns since the epoch;
  // 0 when the container is not running or the API did not say.
  std::int64_t started_at_ns = 0;
};

struct Pod {
  std::string uid;
  std::string name;
  std::string ns;
  std::string node;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<PodContainer> containers;
  std::string resource_version;
  // The pod's controller, from metadata.ownerReferences (the entry with
  // controller: true, else the first); both "" when the pod has none.
  std::string owner_kind;  // "ReplicaSet", "StatefulSet", "DaemonSet", "Job", ...
  std::string owner_name;
  // Known only from the container runtime (the CRI labels the kubelet set
  // when it created the pod's sandbox and containers: name, namespace, uid,
  // labels, annotations, container names, images and ids), not yet from the
  // API server: no spec, so no GPU allocation is judged from it. The API
  // server's record replaces it when it arrives.
  bool from_runtime = false;
};

// One GPU as the driver describes it in /proc/driver/nvidia/gpus/<pci>/information.
struct GpuInfo {
  std::string uuid;         // "GPU-8f6e..."
  std::string pci;          // "0000:3b:00.0"
  std::uint32_t minor = 0;  // its /dev/nvidia<minor>
  std::string model;
  bool operator==(const GpuInfo&) const = default;
};

// What the node's NVIDIA driver exposes, read once at start (live) and
// reported to the StateListener so a replay sees the same devices.
struct NvidiaInfo {
  std::uint32_t uvm_major = 0;       // dynamic major of nvidia-uvm (/proc/devices), 0 if absent
  std::uint32_t caps_major = 0;      // dynamic major of nvidia-caps, 0 if absent
  std::uint32_t nvlink_major = 0;    // dynamic major of nvidia-nvlink, 0 if absent
  std::uint32_t nvswitch_major = 0;  // dynamic major of nvidia-nvswitch, 0 if absent
  std::vector<GpuInfo> gpus;         // sorted by PCI address (NVML's index order)
  bool operator==(const NvidiaInfo&) const = default;
};

// The GPUs a container was given, from its pod spec (nvidia.com/gpu limit),
// its NVIDIA_VISIBLE_DEVICES and the kubelet pod-resources device ids.
struct GpuAllocation {
  bool any = false;                   // it was given GPU access at all (driver nodes allowed)
  bool all = false;                   // every GPU ("all")
  std::vector<std::uint32_t> minors;  // resolved /dev/nvidia<minor> it may open, sorted
  std::vector<std::string> devices;   // the device ids as given ("0", "GPU-...", "MIG-...")
  bool unresolved = false;            // some ids could not be mapped to a minor
  std::int64_t limit = 0;             // nvidia.com/gpu limit
};

class StateView;
class BaselineView;

// Everything the rule engine may read for one event, resolved once by the
// state component before rules run. Pointers are null when unknown (a process
// vigil never saw, a host process, a pod the API has not reported).
// Lifetime: valid only while the pipeline thread processes this one event.
struct EvalContext {
  const event::Event* ev = nullptr;
  const Process* proc = nullptr;
  const Container* container = nullptr;
  const Pod* pod = nullptr;
  const PodContainer* pod_container = nullptr;  // this container's entry in pod->containers
  const StateView* state = nullptr;             // for ancestry and per-pod facts
  const BaselineView* baseline = nullptr;       // per-workload baselines; null when they are off
};

// Per-workload baselines (engine/baseline, docs/baselines.md) as the rules
// read them: the profile of the event's workload and whether the event's own
// fact (the program it runs, the destination it connects to, the file it
// opens for writing, the GPU class it allocates) is in it.
enum class BaselinePhase : std::uint8_t { kNone, kLearning, kLocked };
enum class BaselineFact : std::uint8_t { kExe, kDestination, kFile, kGpuClass };
enum class BaselineAnswer : std::uint8_t {
  kNoValue,  // no locked profile, or the event has no such fact
  kIn,       // the locked profile has it
  kOut,      // the locked profile does not: a deviation
};
class BaselineView {
 public:
  virtual ~BaselineView() = default;
  // Before the rules, once per event (the pipeline calls it when baselines
  // are on): finds the event's workload, locks a profile whose learning time
  // is over, and learns the event's facts into a profile still learning.
  virtual void observe(const EvalContext& ctx) noexcept = 0;
  // About the event last observed (ctx is that event's).
  virtual BaselinePhase phase(const EvalContext& ctx) const noexcept = 0;
  virtual std::string_view workload(const EvalContext& ctx) const noexcept = 0;
  virtual BaselineAnswer has(const EvalContext& ctx, BaselineFact fact) const noexcept = 0;
};

// Read access to the whole state, for fields that need more than the event's
// own process (ancestors, DNS names a pod resolved, GPU allocations).
class StateView {
 public:
  virtual ~StateView() = default;
  virtual const Process* process(std::uint32_t pid) const = 0;
  // The DNS name this pod (or host network namespace) last resolved to `addr`,
  // or "" when none is remembered.
  virtual std::string_view dns_name_for(const EvalContext& ctx, const event::IpAddr& addr) const = 0;

  // GPU allocation of the event's container; null for host processes and for
  // containers whose pod is not known.
  virtual const GpuAllocation* gpu_allocation(const EvalContext& ctx) const { return nullptr; }
  // Whether the event's process may use the NVIDIA device major:minor given
  // its container's allocation. Host processes and containers of unknown pods
  // are allowed (no evidence either way).
  virtual bool gpu_allowed(const EvalContext& ctx, std::uint32_t major, std::uint32_t minor) const { return true; }
  // What the node's NVIDIA driver exposes (its dynamic majors, its GPUs);
  // null when not known.
  virtual const NvidiaInfo* nvidia_info() const { return nullptr; }
  // The pods ("namespace/name", sorted) that share GPU `minor`: those with a
  // process holding its node open (MPS clients, time-sliced jobs) and those
  // it was allocated to, the pod `except_pod_uid` left out. Empty when none
  // is known.
  virtual std::vector<std::string> gpu_client_pods(std::uint32_t minor, std::string_view except_pod_uid) const {
    return {};
  }
  // vigil's own files and directories (configuration, rules, state,
  // captures): what vigil.file compares paths with. Empty when not known.
  virtual std::span<const std::string> vigil_paths() const { return {}; }
  // The n-th ancestor of p (1 = parent, at most 64), null when unknown.
  // Safe against pid cycles: it takes at most n steps.
  const Process* ancestor(const Process& p, unsigned n) const {
    const Process* cur = &p;
    if (n > 64) return nullptr;
    for (unsigned i = 0; i < n; ++i) {
      if (cur->ppid == 0 || cur->ppid == cur->pid) return nullptr;
      cur = process(cur->ppid);
      if (!cur) return nullptr;
    }
    return cur;
  }
  // Host user/group names ("" when unknown).
  virtual std::string_view user_name(std::uint32_t uid) const { return {}; }
  virtual std::string_view group_name(std::uint32_t gid) const { return {}; }
};

}  // namespace vigil::state
