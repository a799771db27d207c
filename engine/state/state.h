// The node's state as vigil knows it: processes, containers, pods and the
// facts the rules need about them. Kept current by events; enriches each event
// into an EvalContext for the rule engine.
//
// Determinism (what makes replay exact): State::apply() is a pure function of
// the events and of the records injected with upsert_*(). Anything learnt
// outside the event stream (a /proc read for an unknown process, a cgroup
// directory resolved to a container, a pod from the API server) enters through
// upsert_*() and is reported to the StateListener, so a capture can record it
// and a replay can inject it again.
//
// Thread-safety: not thread-safe. One pipeline thread owns a State. The pod
// watcher runs on its own thread and hands pods over through a queue that the
// pipeline drains (see pods.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/event/event.h"
#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::state {

struct Config {
  std::size_t max_processes = 65536;  // LRU cap of the process table
  std::size_t max_containers = 8192;
  std::size_t max_dns_names = 65536;        // remembered DNS answers, all pods together
  std::string proc_root = "/proc";          // tests point this at a fake tree
  std::string cgroup_root;                  // "" = find cgroup v2 through /proc/self/mountinfo
  bool live = true;                         // false for replay/tests: never read /proc or cgroupfs
  std::string nvidia_root;                  // "" = <proc_root>/driver/nvidia
  std::string passwd_path = "/etc/passwd";  // uid → user name ("" = none)
  std::string group_path = "/etc/group";    // gid → group name ("" = none)
  std::size_t max_cgroups = 16384;          // cgroup id → path cache (host cgroups included)
  std::size_t max_cgroup_walk = 20000;      // directories looked at per walk of the cgroup tree
  std::size_t max_pods = 4096;
  // A pod the API server deleted stays known for this long of event time
  // (the newest event's ts_ns), because events about it keep arriving: Xid
  // lines, plugin samples, late kernel lines. 0: forgotten at once. At most
  // max_pods deleted pods are kept; past that the oldest is forgotten early.
  std::uint64_t pod_grace_ns = 60'000'000'000ull;
  // An exited process stays known (process(), enrich()), with its container
  // and pod, for this long of event time after the rules saw its exit, for
  // what arrives about it late: an Xid line (the kernel log is read after
  // the fact, syslog(2) every second), an NVML sample, a GPU usage report
  // naming its pid. A fork that reuses the pid replaces it at once. 0:
  // forgotten at its exit.
  std::uint64_t process_grace_ns = 60'000'000'000ull;
  // At most this many exited processes are kept for their grace period; past
  // that the one that exited first is forgotten early (StateStats).
  std::size_t max_exited_processes = 4096;
};

// What the process table did with exited processes (for /metrics).
struct StateStats {
  std::uint64_t exited_kept = 0;     // exited processes known now, in their grace period
  std::uint64_t exited_expired = 0;  // forgotten when their grace period ended
  std::uint64_t exited_evicted = 0;  // forgotten early: max_exited_processes were kept
  // Events about a process that had already exited (an Xid line, a plugin
  // event, a GPU usage report) that still named it.
  std::uint64_t late_events = 0;
};

// Told about every change that did not come from an event (see the header comment).
class StateListener {
 public:
  virtual ~StateListener() = default;
  virtual void on_process(const Process& p) = 0;
  virtual void on_container(const Container& c) = 0;
  virtual void on_pod(const Pod& p) = 0;
  virtual void on_pod_removed(const std::string& uid) = 0;
  // The NVIDIA devices read at start (load_nvidia). Default: ignored.
  virtual void on_nvidia(const NvidiaInfo& info) {}
};

class State final : public StateView {
 public:
  explicit State(Config cfg);
  ~State() override;
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Reads every process in proc_root (and its container from its cgroup), so
  // processes older than vigil are known. Reports each to the listener.
  // Calls load_nvidia() first when that has not been done.
  Status seed_from_proc();

  void upsert_process(Process p);
  void upsert_container(Container c);
  // A pod from the API server replaces what was known of it (container ids
  // the API does not list yet are kept from the old record). A pod known only
  // from the container runtime (from_runtime) adds its containers to the
  // pod's record, or creates the record when there is none.
  void upsert_pod(Pod p);
  // The pod is gone: events still name it for cfg.pod_grace_ns of event
  // time (pod() and enrich() find it), but pods() and pod_count() no longer
  // list it. Told to the listener now, so a replay keeps it as long.
  void remove_pod(const std::string& uid);
  void upsert_nvidia(NvidiaInfo info);
  // vigil's own files and directories (vigil.file). Not a state record: live
  // and replay each set them from their own configuration (docs/fields.md).
  void set_vigil_paths(std::vector<std::string> paths);

  // Reads the NVIDIA majors (<proc_root>/devices) and GPUs (nvidia_root) and
  // upserts them. Does nothing unless cfg.live.
  void load_nvidia();

  // Before rules: update the tables with this event (fork adds, exec replaces
  // the image, an NVIDIA open/ioctl updates GPU facts, DNS answers are
  // remembered). Unknown pids/cgroups are looked up live when cfg.live.
  void apply(const event::Event& ev);
  // The context the rules see for this event. Valid until the next call to
  // apply()/after()/upsert_*().
  EvalContext enrich(const event::Event& ev) const;
  // After rules: forget what the event ended (an exited process is reaped
  // once its grace period, cfg.process_grace_ns, ends).
  void after(const event::Event& ev);

  void set_listener(StateListener* l) { listener_ = l; }
  // Called with each container of a Kubernetes pod that becomes known
  // without its pod's record naming it (upsert_container): the cue to ask
  // the container runtime (cri_resolver.h). It must not call back into the
  // State. Live runs only; a replay gets the answers as state records.
  void set_unnamed_container_hook(std::function<void(const Container&)> fn) { unnamed_container_ = std::move(fn); }

  // Everything known now, for the first records of a capture (pods: the
  // ones not removed; removed_pods(): the ones in their grace period, for a
  // capture to write and remove again, so its replay still names them).
  std::vector<Process> processes() const;
  std::vector<Container> containers() const;
  std::vector<Pod> pods() const;
  std::vector<Pod> removed_pods() const;

  StateStats stats() const;
  std::size_t process_count() const;
  std::size_t container_count() const;
  std::size_t pod_count() const;

  const Container* container(const std::string& id) const;
  const Pod* pod(const std::string& uid) const;
  const NvidiaInfo& nvidia() const;
  // The NVIDIA device behind fd of pid, null when it is not one (or unknown).
  const GpuFd* gpu_fd(std::uint32_t pid, std::int32_t fd) const;
  // The cgroup v2 mount in use ("" when none was found or !cfg.live).
  const std::string& cgroup_root() const;

  // StateView
  const Process* process(std::uint32_t pid) const override;
  std::string_view dns_name_for(const EvalContext& ctx, const event::IpAddr& addr) const override;
  const GpuAllocation* gpu_allocation(const EvalContext& ctx) const override;
  bool gpu_allowed(const EvalContext& ctx, std::uint32_t major, std::uint32_t minor) const override;
  const NvidiaInfo* nvidia_info() const override { return &nvidia(); }
  std::string_view user_name(std::uint32_t uid) const override;
  std::string_view group_name(std::uint32_t gid) const override;
  // The pods that use the GPU /dev/nvidia<minor>: those with a process (still
  // running, or exited within its grace period) holding it open, and those
  // whose allocation names it (not the ones given every GPU). As
  // "namespace/name", sorted, without the pod `except_pod_uid`, at most
  // kMaxGpuClientPods (then a last entry "..."). Who shares a GPU under MPS
  // or time-slicing: an MPS server's fault is one of theirs.
  static constexpr std::size_t kMaxGpuClientPods = 16;
  std::vector<std::string> gpu_client_pods(std::uint32_t minor, std::string_view except_pod_uid) const override;
  std::span<const std::string> vigil_paths() const override { return vigil_paths_; }

 private:
  struct Impl;
  struct Apply;  // apply(), one step per event type (state.cpp)
  // Maps a cgroup id to its path and container by walking the cgroup tree
  // (live only, bounded by cfg.max_cgroup_walk); caches what it saw.
  void resolve_cgroup(std::uint64_t id);
  // Forgets the removed pods whose grace period ended by event time now_ns.
  void expire_removed_pods(std::uint64_t now_ns);
  // Forgets the exited processes whose grace period ended by event time
  // now_ns, and at least the `at_least` oldest.
  void forget_exited(std::size_t at_least, std::uint64_t now_ns);
  std::unique_ptr<Impl> impl_;
  StateListener* listener_ = nullptr;
  std::function<void(const Container&)> unnamed_container_;
  std::vector<std::string> vigil_paths_;
};

}  // namespace vigil::state
