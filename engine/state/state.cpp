#include "engine/state/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>

#include "engine/event/nvidia.h"
#include "engine/state/cgroup.h"
#include "engine/state/dns.h"
#include "engine/state/gpu.h"
#include "engine/util/lru.h"
#include "engine/state/procfs.h"
#include "engine/state/users.h"

namespace vigil::state {

// The state's table rows, outside the anonymous namespace because State::Impl
// holds them (GCC's -Wsubobject-linkage, when this file shares a unity batch).
struct ProcSlot {
  Process p;
  bool exited = false;  // reaped by after() once the rules saw the exit
  // When after() saw its exit (event time), 0 while it runs: it stays known
  // for cfg.process_grace_ns more, for the events about it that arrive late.
  std::uint64_t reaped_at_ns = 0;
};

// A process whose exit the rules saw at event time at_ns.
struct ExitedProcess {
  std::uint32_t pid = 0;
  std::uint64_t at_ns = 0;
};

// A pod removed at event time at_ns (0: before any event had a time).
struct RemovedPod {
  std::string uid;
  std::uint64_t at_ns = 0;
};

struct CgroupEntry {
  std::string path;          // relative to the cgroup root; "" when the walk did not find it
  std::string container_id;  // "" for host cgroups
};

namespace {

constexpr std::size_t kMaxPodContainers = 64;

void count_gpu_devices(Process* p) {
  std::vector<std::uint32_t> minors;
  for (const auto& g : p->gpu_fds) {
    if (g.major == kNvidiaMajor && g.minor <= kNvidiaMaxGpuMinor) minors.push_back(g.minor);
  }
  std::sort(minors.begin(), minors.end());
  p->gpu_devices_opened = static_cast<std::uint32_t>(std::unique(minors.begin(), minors.end()) - minors.begin());
}

// Before an exec replaces p's image: keep the command line it ran (exe and
// args, as proc.cmdline shows them), bounded, most recent first. A child
// still running its parent's image (fork, then exec), or a process vigil
// first sees at this exec, has none of its own to keep.
void remember_prior_image(Process& p) {
  const bool inherited = p.image_unknown;
  p.image_unknown = false;
  if (inherited || (p.exe.empty() && p.args.empty())) return;
  std::string c = p.exe;
  for (const auto& a : p.args) {
    if (c.size() >= Process::kMaxPriorImageBytes) break;
    c.push_back(' ');
    c.append(a);
  }
  if (c.size() > Process::kMaxPriorImageBytes) c.resize(Process::kMaxPriorImageBytes);
  auto& v = p.prior_cmdlines;
  v.insert(v.begin(), std::move(c));
  if (v.size() > Process::kMaxPriorImages) v.resize(Process::kMaxPriorImages);
}

}  // namespace

struct State::Impl {
  explicit Impl(Config c)
      : cfg(std::move(c)),
        procs(cfg.max_processes),
        containers(cfg.max_containers),
        cgroups(cfg.max_cgroups),
        pods(cfg.max_pods),
        dns(cfg.max_dns_names) {}

  Config cfg;
  util::LruMap<std::uint32_t, ProcSlot> procs;
  util::LruMap<std::string, Container> containers;
  util::LruMap<std::uint64_t, CgroupEntry> cgroups;
  util::LruMap<std::string, Pod> pods;
  // Per pod uid, the allocation of each entry of pod.containers (same order).
  std::unordered_map<std::string, std::vector<GpuAllocation>> allocations;
  // Pods removed and kept for their grace period, in removal order (at most
  // cfg.max_pods; an entry is stale when removed_at says otherwise), and
  // when each pod still in `pods` was removed.
  std::deque<RemovedPod> removed_order;
  std::deque<ExitedProcess> exited_order;  // in exit order, at most cfg.max_exited_processes
  std::uint64_t exited_expired = 0;        // StateStats
  std::uint64_t exited_evicted = 0;
  std::uint64_t late_events = 0;
  std::unordered_map<std::string, std::uint64_t> removed_at;
  std::uint64_t event_time_ns = 0;  // the newest event time applied

  void forget_pod(const std::string& uid) {
    pods.erase(uid);
    allocations.erase(uid);
    removed_at.erase(uid);
  }
  DnsMemory dns;
  NvidiaInfo nvidia;
  bool nvidia_loaded = false;
  NameDb users;
  NameDb groups;
  std::string cgroup_root;
  ProcReadOptions read_opts;

  const Container* container_for(const event::Header& h, const Process* p) const {
    if (h.cgroup_id != 0) {
      if (const CgroupEntry* e = cgroups.peek(h.cgroup_id)) {
        if (e->container_id.empty()) return nullptr;
        return containers.peek(e->container_id);
      }
    }
    if (p && !p->container_id.empty()) return containers.peek(p->container_id);
    return nullptr;
  }

  std::string dns_scope(const EvalContext& ctx) const {
    if (ctx.pod) return "pod:" + ctx.pod->uid;
    if (ctx.container) return "ctr:" + ctx.container->id;
    std::uint32_t netns = ctx.ev ? ctx.ev->hdr.net_ns : 0;
    if (netns == 0 && ctx.proc) netns = ctx.proc->net_ns;
    return "netns:" + std::to_string(netns);
  }
};

State::State(Config cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {
  Impl& s = *impl_;
  if (s.cfg.nvidia_root.empty()) s.cfg.nvidia_root = s.cfg.proc_root + "/driver/nvidia";
  if (!s.cfg.passwd_path.empty()) (void)s.users.load(s.cfg.passwd_path);
  if (!s.cfg.group_path.empty()) (void)s.groups.load(s.cfg.group_path);
  if (s.cfg.live) {
    if (!s.cfg.cgroup_root.empty()) {
      s.cgroup_root = s.cfg.cgroup_root;
    } else if (auto mi = read_file_bounded(s.cfg.proc_root + "/self/mountinfo", 1 << 20)) {
      if (auto root = find_cgroup2_mount(*mi)) s.cgroup_root = *root;
    }
    while (s.cgroup_root.size() > 1 && s.cgroup_root.back() == '/') s.cgroup_root.pop_back();
    if (s.cgroup_root == "/") s.cgroup_root.clear();  // never walk the whole filesystem
    s.read_opts.cgroup_root = s.cgroup_root;
    if (auto st = read_file_bounded(s.cfg.proc_root + "/stat", 1 << 20)) {
      s.read_opts.boot_time_ns = parse_boot_time_ns(*st);
    }
    long ticks = ::sysconf(_SC_CLK_TCK);
    if (ticks > 0) s.read_opts.clock_ticks = ticks;
  }
}

State::~State() = default;

void State::load_nvidia() {
  if (!impl_->cfg.live) return;
  upsert_nvidia(read_nvidia_info(impl_->cfg.proc_root + "/devices", impl_->cfg.nvidia_root));
}

void State::set_vigil_paths(std::vector<std::string> paths) {
  for (std::string& p : paths) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
  }
  std::erase_if(paths, [](const std::string& p) { return p.empty(); });
  vigil_paths_ = std::move(paths);
}

void State::upsert_nvidia(NvidiaInfo info) {
  Impl& s = *impl_;
  std::sort(info.gpus.begin(), info.gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  s.nvidia = std::move(info);
  s.nvidia_loaded = true;
  s.read_opts.nvidia = s.nvidia;
  // Allocations resolve indexes and UUIDs through the GPU table.
  s.pods.for_each([&](const std::string& uid, const Pod& p) {
    auto& v = s.allocations[uid];
    v.clear();
    for (const auto& pc : p.containers) v.push_back(resolve_allocation(pc, s.nvidia));
  });
  if (listener_) listener_->on_nvidia(s.nvidia);
}

Status State::seed_from_proc() {
  Impl& s = *impl_;
  if (!s.cfg.live) return Status::ok_status();
  if (!s.nvidia_loaded) load_nvidia();  // so that seeded NVIDIA fds are recognised
  std::vector<std::uint32_t> pids = list_pids(s.cfg.proc_root, s.cfg.max_processes);
  if (pids.empty()) {
    return Error::runtime("cannot list processes in " + s.cfg.proc_root);
  }
  for (std::uint32_t pid : pids) {
    auto rec = read_process(s.cfg.proc_root, pid, s.read_opts);
    if (!rec) continue;  // exited meanwhile
    if (!rec->proc.container_id.empty() && !s.containers.contains(rec->proc.container_id)) {
      if (auto m = parse_cgroup_path(rec->cgroup_path)) {
        Container c;
        c.id = m->id;
        c.runtime = m->runtime;
        c.pod_uid = m->pod_uid;
        c.cgroup_path = rec->cgroup_path;
        c.cgroup_id = rec->proc.cgroup_id;
        upsert_container(std::move(c));
      }
    }
    if (rec->proc.cgroup_id != 0 && !s.cgroups.contains(rec->proc.cgroup_id)) {
      s.cgroups.put(rec->proc.cgroup_id, {rec->cgroup_path, rec->proc.container_id});
    }
    upsert_process(std::move(rec->proc));
  }
  return Status::ok_status();
}

void State::upsert_process(Process p) {
  Impl& s = *impl_;
  if (p.pid == 0) return;
  if (p.gpu_fds.size() > kMaxGpuFds) p.gpu_fds.resize(kMaxGpuFds);
  std::uint32_t pid = p.pid;
  if (listener_) listener_->on_process(p);
  s.procs.put(pid, ProcSlot{std::move(p), false});
}

void State::upsert_container(Container c) {
  Impl& s = *impl_;
  if (c.id.empty()) return;
  if (c.cgroup_id != 0) s.cgroups.put(c.cgroup_id, {c.cgroup_path, c.id});
  if (!c.pod_uid.empty()) {
    if (const Pod* pod = s.pods.peek(c.pod_uid)) {
      for (const auto& pc : pod->containers) {
        if (pc.id == c.id) {
          if (c.name.empty()) c.name = pc.name;
          if (c.image.empty()) c.image = pc.image;
          c.privileged = c.privileged || pc.privileged;
        }
      }
    }
  }
  if (listener_) listener_->on_container(c);
  if (unnamed_container_ && !c.pod_uid.empty() && c.name.empty()) unnamed_container_(c);
  std::string id = c.id;
  s.containers.put(id, std::move(c));
}

namespace {

// Adds (by name) or completes the containers of `into` with those of `from`.
void merge_runtime_containers(Pod& into, const Pod& from) {
  for (const auto& rc : from.containers) {
    auto it = std::find_if(into.containers.begin(), into.containers.end(),
                           [&](const PodContainer& pc) { return pc.name == rc.name; });
    if (it == into.containers.end()) {
      if (into.containers.size() < kMaxPodContainers) into.containers.push_back(rc);
      continue;
    }
    if (it->id.empty()) it->id = rc.id;
    if (it->image.empty()) it->image = rc.image;
    if (it->started_at_ns == 0) it->started_at_ns = rc.started_at_ns;
  }
}

}  // namespace

void State::upsert_pod(Pod p) {
  Impl& s = *impl_;
  if (p.uid.empty()) return;
  if (p.containers.size() > kMaxPodContainers) p.containers.resize(kMaxPodContainers);
  if (const Pod* old = s.pods.peek(p.uid)) {
    if (p.from_runtime) {
      // What the runtime says completes the record; it never replaces one.
      Pod merged = *old;
      merge_runtime_containers(merged, p);
      p = std::move(merged);
    } else {
      // The API's record is the pod's; a container id it does not list yet
      // (a container just started) stays as the runtime gave it.
      for (auto& pc : p.containers) {
        if (!pc.id.empty()) continue;
        for (const auto& oc : old->containers)
          if (oc.name == pc.name) pc.id = oc.id;
      }
    }
  }
  if (listener_) listener_->on_pod(p);
  std::vector<GpuAllocation> allocs;
  allocs.reserve(p.containers.size());
  for (const auto& pc : p.containers) {
    allocs.push_back(resolve_allocation(pc, s.nvidia));
    if (pc.id.empty()) continue;
    if (Container* c = s.containers.peek_mut(pc.id)) {
      c->name = pc.name;
      if (!pc.image.empty()) c->image = pc.image;
      c->privileged = c->privileged || pc.privileged;
      if (c->pod_uid.empty()) c->pod_uid = p.uid;
    }
  }
  std::string uid = p.uid;
  const bool spec_known = !p.from_runtime;
  s.removed_at.erase(uid);  // back (a relist that still has it): in force again
  auto evicted = s.pods.put(uid, std::move(p));
  if (evicted) {
    s.allocations.erase(evicted->first);
    s.removed_at.erase(evicted->first);
  }
  // Without the pod's spec there is no evidence of its GPU allocation either
  // way (gpu_allowed: allowed), as for a pod not known at all.
  if (spec_known) {
    s.allocations[uid] = std::move(allocs);
  } else {
    s.allocations.erase(uid);
  }
}

void State::remove_pod(const std::string& uid) {
  Impl& s = *impl_;
  if (s.removed_at.count(uid)) return;  // already in its grace period
  if (listener_) listener_->on_pod_removed(uid);
  if (s.cfg.pod_grace_ns == 0 || !s.pods.contains(uid)) {
    s.forget_pod(uid);
    return;
  }
  s.removed_at[uid] = s.event_time_ns;
  s.removed_order.push_back({uid, s.event_time_ns});
  if (s.removed_order.size() > s.cfg.max_pods) {
    // Bounded: the longest gone is forgotten before its time.
    const RemovedPod oldest = std::move(s.removed_order.front());
    s.removed_order.pop_front();
    if (auto it = s.removed_at.find(oldest.uid); it != s.removed_at.end() && it->second == oldest.at_ns) {
      s.forget_pod(oldest.uid);
    }
  }
}

void State::expire_removed_pods(std::uint64_t now_ns) {
  Impl& s = *impl_;
  // Removed before any event had a time: their grace starts now.
  for (RemovedPod& r : s.removed_order) {
    if (r.at_ns != 0) break;
    if (auto it = s.removed_at.find(r.uid); it != s.removed_at.end() && it->second == 0) it->second = now_ns;
    r.at_ns = now_ns;
  }
  while (!s.removed_order.empty() && now_ns - s.removed_order.front().at_ns >= s.cfg.pod_grace_ns) {
    const RemovedPod r = std::move(s.removed_order.front());
    s.removed_order.pop_front();
    // Stale when the pod came back (or was removed again later).
    if (auto it = s.removed_at.find(r.uid); it != s.removed_at.end() && it->second == r.at_ns) s.forget_pod(r.uid);
  }
}

namespace {

// A record for a process known only from an event header.
Process process_from_header(const event::Header& h) {
  Process p;
  p.pid = h.pid;
  p.ppid = h.ppid;
  p.uid = h.uid;
  p.gid = h.gid;
  p.comm = h.comm;
  p.exe = h.comm;
  p.cgroup_id = h.cgroup_id;
  p.pid_ns = h.pid_ns;
  p.mnt_ns = h.mnt_ns;
  p.net_ns = h.net_ns;
  p.vpid = h.pid;
  p.start_ts_ns = h.ts_ns;
  p.image_unknown = true;  // exe is only a guess from the comm
  return p;
}

}  // namespace

// One event applied to the state: the event's process found (or made) and
// brought up to date with the header, then what the event's type changes.
struct State::Apply {
  State& st;
  Impl& s;
  const event::Event& ev;
  const event::Header& h;

  // The container the header's cgroup belongs to ("" for host cgroups).
  // Looked up only where a record changes, not on every event.
  std::string hdr_container() const {
    if (h.cgroup_id == 0) return {};
    const CgroupEntry* e = s.cgroups.peek(h.cgroup_id);
    return e ? e->container_id : std::string();
  }

  // The header's cgroup resolved (live), and its container rebuilt from the
  // cgroup path when the record was evicted (LRU) while the cgroup is in use.
  void cgroup() {
    if (h.cgroup_id == 0) return;
    if (!s.cgroups.contains(h.cgroup_id) && s.cfg.live) st.resolve_cgroup(h.cgroup_id);
    const CgroupEntry* e = s.cgroups.get(h.cgroup_id);
    if (!e || e->container_id.empty() || s.containers.contains(e->container_id)) return;
    if (auto m = parse_cgroup_path(e->path); m && m->id == e->container_id) {
      Container c;
      c.id = m->id;
      c.runtime = m->runtime;
      c.pod_uid = m->pod_uid;
      c.cgroup_path = e->path;
      c.cgroup_id = h.cgroup_id;
      st.upsert_container(std::move(c));
    }
  }

  // The event's own process, created when unknown: from /proc (live, once),
  // else from the header.
  Process* ensure(std::uint32_t pid) {
    if (pid == 0) return nullptr;
    if (ProcSlot* slot = s.procs.get(pid)) return &slot->p;
    if (s.cfg.live && h.type != event::Type::kExit) {
      if (auto rec = read_process(s.cfg.proc_root, pid, s.read_opts)) {
        if (h.cgroup_id != 0) {
          rec->proc.cgroup_id = h.cgroup_id;
          rec->proc.container_id = hdr_container();
        }
        st.upsert_process(std::move(rec->proc));
        if (ProcSlot* slot = s.procs.get(pid)) return &slot->p;
      }
    }
    Process p = process_from_header(h);
    p.container_id = hdr_container();
    ProcSlot* where = nullptr;
    s.procs.put(pid, ProcSlot{std::move(p), false}, &where);
    return &where->p;
  }

  // What the header says now about who did it.
  void refresh(Process* p) const {
    if (!p) return;
    p->uid = h.uid;
    p->gid = h.gid;
    if (h.cgroup_id != 0 && h.cgroup_id != p->cgroup_id) {
      p->cgroup_id = h.cgroup_id;
      p->container_id = hdr_container();
    } else if (h.cgroup_id != 0 && p->container_id.empty()) {
      p->container_id = hdr_container();
    }
    if (h.net_ns) p->net_ns = h.net_ns;
    if (h.mnt_ns) p->mnt_ns = h.mnt_ns;
    if (h.pid_ns) p->pid_ns = h.pid_ns;
  }

  // The header's process, made known and up to date.
  Process* own() {
    Process* p = ensure(h.pid);
    refresh(p);
    // What the main thread calls itself now (a rename since its exec).
    // Plugin events and Xids are about the process, not calls of its threads.
    const auto t = ev.hdr.type;
    if (p && h.tid == h.pid && !h.comm.empty() && t != event::Type::kExec && t != event::Type::kPlugin &&
        t != event::Type::kXid && t != event::Type::kGpuUsage) {
      if (h.comm == p->comm) p->comm_now.clear();
      else p->comm_now.assign(h.comm.data(), std::min<std::size_t>(h.comm.size(), 15));
    }
    return p;
  }

  void on_fork() {
    const auto* fd = ev.as<event::ForkData>();
    Process* parent = own();
    if (!fd || fd->is_thread || fd->child_pid == 0 || fd->child_pid == h.pid) return;
    // Falco behaviour: the child is the parent's copy until it execs.
    Process child = parent ? *parent : process_from_header(h);
    child.pid = fd->child_pid;
    child.ppid = h.pid;
    child.vpid = fd->child_pid;
    child.start_ts_ns = h.ts_ns;
    child.from_proc = false;
    child.gpu_compute = false;
    child.image_unknown = true;
    child.prior_cmdlines.clear();
    s.procs.put(fd->child_pid, ProcSlot{std::move(child), false});
  }

  void on_exec() {
    const auto* ed = ev.as<event::ExecData>();
    // A process first seen now (read from /proc after its exec, or built
    // from the header) shows its new image already: nothing to remember.
    const bool seen_before = s.procs.peek(h.pid) != nullptr;
    Process* p = own();
    if (!p || !ed) return;
    if (seen_before) remember_prior_image(*p);
    else p->image_unknown = false;
    p->comm = h.comm;
    p->comm_now.clear();
    if (h.ppid != 0 && h.ppid != h.pid) p->ppid = h.ppid;
    p->exepath = !ed->exe.empty() ? ed->exe : ed->filename;
    if (!ed->args.empty()) {
      p->exe = ed->args.front();
      p->args.assign(ed->args.begin() + 1, ed->args.end());
    } else {
      p->exe = ed->filename;
      p->args.clear();
    }
    // Every fact the exec reports and the process keeps (process_facts.h).
    event::for_each_exec_fact(*p, *ed, [](auto& kept, const auto& reported) { kept = reported; });
    p->exec_ts_ns = h.ts_ns;
    p->from_proc = false;
    p->gpu_compute = false;
    // Close-on-exec fds are gone in the new image.
    std::erase_if(p->gpu_fds, [](const GpuFd& g) { return g.cloexec; });
    count_gpu_devices(p);
  }

  // The sets after a successful capset (the sensor reads them from the
  // task's credentials).
  void on_capset() {
    const auto* cd = ev.as<event::CapsData>();
    if (!cd || cd->result != 0) return;
    Process* p = ensure(h.pid);
    if (!p) return;
    p->cap_effective = cd->effective;
    p->cap_permitted = cd->permitted;
    p->cap_inheritable = cd->inheritable;
  }

  // Marked, not removed: after() reaps it once the rules saw the exit.
  void on_exit() {
    if (ProcSlot* slot = s.procs.get(h.pid)) {
      refresh(&slot->p);
      slot->exited = true;
      return;
    }
    Process p = process_from_header(h);
    p.container_id = hdr_container();
    s.procs.put(h.pid, ProcSlot{std::move(p), true});
  }

  void on_open() {
    Process* p = own();
    const auto* od = ev.as<event::OpenData>();
    if (!p || !od || od->result < 0 || od->result > INT32_MAX) return;
    auto fdnum = static_cast<std::int32_t>(od->result);
    // The fd number now names this file, whatever it named before.
    std::erase_if(p->gpu_fds, [&](const GpuFd& g) { return g.fd == fdnum; });
    if (od->is_device || od->dev_major != 0) {  // never a regular file named nvidia*
      NvidiaNode n = nvidia_node(od->dev_major, od->dev_minor, od->path, s.nvidia);
      if (n.kind != NvidiaNodeKind::kNone && p->gpu_fds.size() < kMaxGpuFds) {
        p->gpu_fds.push_back({fdnum, n.major, n.minor, (od->flags & O_CLOEXEC) != 0});
      }
    }
    count_gpu_devices(p);
  }

  void on_ioctl() {
    Process* p = own();
    const auto* id = ev.as<event::IoctlData>();
    if (!p || !id) return;
    if (id->nr == event::nvidia::kEscRmAlloc && id->result == 0 && id->rm_status == 0 &&
        event::nvidia::is_compute_or_channel(id->rm_class)) {
      p->gpu_compute = true;
    }
  }

  void on_dns() {
    own();
    const auto* dd = ev.as<event::DnsData>();
    if (!dd || !dd->is_response || dd->rcode != 0 || dd->name.empty()) return;
    EvalContext ctx = st.enrich(ev);
    std::string scope = s.dns_scope(ctx);
    for (const auto& a : dd->answers) s.dns.remember(scope, a, dd->name);
  }

  // An event about process `pid` from outside it: an Xid line (the header
  // names whoever logged it; the line names the faulting process), a plugin
  // event, a GPU usage report. Its header says nothing about the process
  // (no uid, cgroup or comm), so the record is neither refreshed from it nor
  // made up from it: the process is the one known (exited ones included, for
  // their grace period), else read from /proc (live), else unknown.
  void on_about(std::uint32_t pid) {
    if (pid == 0) return;
    if (const ProcSlot* slot = s.procs.peek(pid)) {
      if (slot->exited) ++s.late_events;
      return;
    }
    if (!s.cfg.live) return;
    if (auto rec = read_process(s.cfg.proc_root, pid, s.read_opts)) {
      std::uint64_t cg = rec->proc.cgroup_id;
      if (cg != 0 && !s.cgroups.contains(cg)) st.resolve_cgroup(cg);
      st.upsert_process(std::move(rec->proc));
    }
  }

  void on_xid() {
    const auto* xd = ev.as<event::XidData>();
    if (xd) on_about(xd->xid_pid);
  }
};

void State::apply(const event::Event& ev) {
  Impl& s = *impl_;
  if (ev.hdr.ts_ns > s.event_time_ns) s.event_time_ns = ev.hdr.ts_ns;
  if (!s.removed_order.empty() && s.event_time_ns != 0) expire_removed_pods(s.event_time_ns);
  if (!s.exited_order.empty()) forget_exited(0, s.event_time_ns);
  Apply a{*this, s, ev, ev.hdr};
  a.cgroup();
  switch (ev.hdr.type) {
    case event::Type::kFork: return a.on_fork();
    case event::Type::kExec: return a.on_exec();
    case event::Type::kCapset: return a.on_capset();
    case event::Type::kExit: return a.on_exit();
    case event::Type::kOpen: return a.on_open();
    case event::Type::kIoctl: return a.on_ioctl();
    case event::Type::kDns: return a.on_dns();
    case event::Type::kXid: return a.on_xid();
    case event::Type::kGpuUsage: return a.on_about(ev.hdr.pid);
    case event::Type::kEgress: return;  // a container's bytes: no process
    case event::Type::kPlugin:
      if (ev.hdr.cgroup_id == 0) return a.on_about(ev.hdr.pid);
      a.own();
      return;
    default: a.own(); return;
  }
}

// Every directory seen on the walk is cached, so one walk serves every cgroup
// that existed at that time.
void State::resolve_cgroup(std::uint64_t id) {
  Impl& s = *impl_;
  bool found = false;
  if (!s.cgroup_root.empty()) {
    walk_cgroups(s.cgroup_root, s.cfg.max_cgroup_walk, [&](const std::string& rel, std::uint64_t cid) {
      std::string container_id;
      if (auto m = parse_cgroup_path(rel)) {
        container_id = m->id;
        if (!s.containers.contains(m->id)) {
          Container c;
          c.id = m->id;
          c.runtime = m->runtime;
          c.pod_uid = m->pod_uid;
          c.cgroup_path = rel;
          c.cgroup_id = cid;
          upsert_container(std::move(c));
        }
      }
      if (!s.cgroups.contains(cid)) s.cgroups.put(cid, {rel, std::move(container_id)});
      if (cid == id) found = true;
      return true;
    });
  }
  // Remember a miss too, so an unknown id costs one walk, not one per event.
  if (!found) s.cgroups.put(id, {});
}

EvalContext State::enrich(const event::Event& ev) const {
  const Impl& s = *impl_;
  EvalContext ctx;
  ctx.ev = &ev;
  ctx.state = this;
  std::uint32_t pid = ev.hdr.pid;
  if (ev.hdr.type == event::Type::kXid) {
    const auto* xd = ev.as<event::XidData>();
    pid = xd ? xd->xid_pid : 0;
  }
  if (pid != 0) {
    if (const ProcSlot* slot = s.procs.peek(pid)) ctx.proc = &slot->p;
  }
  event::Header h = ev.hdr;
  // Xid lines and plugin events come from outside the process: its cgroup is
  // the one the process table knows.
  if (ev.hdr.type == event::Type::kXid || (ev.hdr.type == event::Type::kPlugin && h.cgroup_id == 0)) {
    h.cgroup_id = ctx.proc ? ctx.proc->cgroup_id : 0;
  }
  ctx.container = s.container_for(h, ctx.proc);
  // A posture report about a pod names it (it may have no process yet).
  if (const auto* pd = ev.as<event::PostureData>(); pd && !pd->pod_uid.empty() && !ctx.container) {
    ctx.pod = s.pods.peek(pd->pod_uid);
    if (ctx.pod) {
      for (const auto& pc : ctx.pod->containers) {
        if (pc.name == pd->container) {
          ctx.pod_container = &pc;
          break;
        }
      }
    }
    return ctx;
  }
  if (ctx.container && !ctx.container->pod_uid.empty()) {
    ctx.pod = s.pods.peek(ctx.container->pod_uid);
    if (ctx.pod) {
      for (const auto& pc : ctx.pod->containers) {
        if (!pc.id.empty() && pc.id == ctx.container->id) {
          ctx.pod_container = &pc;
          break;
        }
      }
    }
  }
  return ctx;
}

void State::after(const event::Event& ev) {
  if (ev.hdr.type != event::Type::kExit) return;
  Impl& s = *impl_;
  ProcSlot* slot = s.procs.peek_mut(ev.hdr.pid);
  if (!slot || !slot->exited || slot->reaped_at_ns != 0) return;
  if (s.cfg.process_grace_ns == 0 || s.event_time_ns == 0) {
    s.procs.erase(ev.hdr.pid);
    return;
  }
  slot->reaped_at_ns = s.event_time_ns;
  s.exited_order.push_back({ev.hdr.pid, s.event_time_ns});
  const std::size_t cap = std::max<std::size_t>(s.cfg.max_exited_processes, 1);
  if (s.exited_order.size() > cap) forget_exited(s.exited_order.size() - cap, 0);
}

void State::forget_exited(std::size_t at_least, std::uint64_t now_ns) {
  Impl& s = *impl_;
  auto over = [&](const ExitedProcess& e) { return now_ns >= e.at_ns && now_ns - e.at_ns >= s.cfg.process_grace_ns; };
  while (!s.exited_order.empty() && (at_least > 0 || over(s.exited_order.front()))) {
    const ExitedProcess e = s.exited_order.front();
    s.exited_order.pop_front();
    const bool early = at_least > 0;
    if (early) --at_least;
    // Stale when the pid now belongs to a later process (a fork replaced it).
    if (const ProcSlot* slot = s.procs.peek(e.pid); slot && slot->exited && slot->reaped_at_ns == e.at_ns) {
      s.procs.erase(e.pid);
      ++(early ? s.exited_evicted : s.exited_expired);
    }
  }
}

StateStats State::stats() const {
  const Impl& s = *impl_;
  StateStats st;
  for (const ExitedProcess& e : s.exited_order) {
    const ProcSlot* slot = s.procs.peek(e.pid);
    if (slot && slot->exited && slot->reaped_at_ns == e.at_ns) ++st.exited_kept;
  }
  st.exited_expired = s.exited_expired;
  st.exited_evicted = s.exited_evicted;
  st.late_events = s.late_events;
  return st;
}

std::vector<std::string> State::gpu_client_pods(std::uint32_t minor, std::string_view except_pod_uid) const {
  const Impl& s = *impl_;
  std::vector<std::string> uids;
  auto add = [&](const std::string& uid) {
    if (!uid.empty() && uid != except_pod_uid) uids.push_back(uid);
  };
  // Processes that hold the GPU's node open (MPS clients and time-sliced
  // jobs open it as any CUDA process does).
  s.procs.for_each([&](const std::uint32_t&, const ProcSlot& slot) {
    const Process& p = slot.p;
    if (p.container_id.empty()) return;
    for (const GpuFd& g : p.gpu_fds) {
      if (g.major != kNvidiaMajor || g.minor != minor) continue;
      if (const Container* c = s.containers.peek(p.container_id)) add(c->pod_uid);
      break;
    }
  });
  // Pods the GPU was allocated to (the kubelet hands one GPU to several
  // pods under MPS and time-slicing); "all" names no one in particular.
  for (const auto& [uid, allocs] : s.allocations) {
    for (const GpuAllocation& a : allocs) {
      if (!a.all && std::binary_search(a.minors.begin(), a.minors.end(), minor)) {
        add(uid);
        break;
      }
    }
  }
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  std::vector<std::string> out;
  for (const std::string& uid : uids) {
    const Pod* pod = s.pods.peek(uid);
    if (!pod || pod->name.empty()) continue;
    out.push_back(pod->ns + "/" + pod->name);
  }
  std::sort(out.begin(), out.end());
  if (out.size() > kMaxGpuClientPods) {
    out.resize(kMaxGpuClientPods);
    out.push_back("...");
  }
  return out;
}

std::vector<Process> State::processes() const {
  std::vector<Process> out;
  out.reserve(impl_->procs.size());
  impl_->procs.for_each([&](const std::uint32_t&, const ProcSlot& slot) { out.push_back(slot.p); });
  // Oldest first, so replaying the list rebuilds the same LRU order.
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<Container> State::containers() const {
  std::vector<Container> out;
  impl_->containers.for_each([&](const std::string&, const Container& c) { out.push_back(c); });
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<Pod> State::pods() const {
  std::vector<Pod> out;
  impl_->pods.for_each([&](const std::string& uid, const Pod& p) {
    if (!impl_->removed_at.count(uid)) out.push_back(p);
  });
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<Pod> State::removed_pods() const {
  std::vector<Pod> out;
  impl_->pods.for_each([&](const std::string& uid, const Pod& p) {
    if (impl_->removed_at.count(uid)) out.push_back(p);
  });
  std::reverse(out.begin(), out.end());
  return out;
}

std::size_t State::process_count() const { return impl_->procs.size(); }
std::size_t State::container_count() const { return impl_->containers.size(); }
std::size_t State::pod_count() const { return impl_->pods.size() - impl_->removed_at.size(); }

const Container* State::container(const std::string& id) const { return impl_->containers.peek(id); }
const Pod* State::pod(const std::string& uid) const { return impl_->pods.peek(uid); }
const NvidiaInfo& State::nvidia() const { return impl_->nvidia; }
const std::string& State::cgroup_root() const { return impl_->cgroup_root; }

const GpuFd* State::gpu_fd(std::uint32_t pid, std::int32_t fd) const {
  const ProcSlot* slot = impl_->procs.peek(pid);
  if (!slot) return nullptr;
  for (const auto& g : slot->p.gpu_fds) {
    if (g.fd == fd) return &g;
  }
  return nullptr;
}

const Process* State::process(std::uint32_t pid) const {
  const ProcSlot* slot = impl_->procs.peek(pid);
  return slot ? &slot->p : nullptr;
}

std::string_view State::dns_name_for(const EvalContext& ctx, const event::IpAddr& addr) const {
  return impl_->dns.lookup(impl_->dns_scope(ctx), addr);
}

const GpuAllocation* State::gpu_allocation(const EvalContext& ctx) const {
  if (!ctx.pod || !ctx.pod_container) return nullptr;
  auto it = impl_->allocations.find(ctx.pod->uid);
  if (it == impl_->allocations.end()) return nullptr;
  std::size_t idx = static_cast<std::size_t>(ctx.pod_container - ctx.pod->containers.data());
  if (idx >= it->second.size()) return nullptr;
  return &it->second[idx];
}

bool State::gpu_allowed(const EvalContext& ctx, std::uint32_t major, std::uint32_t minor) const {
  if (!ctx.container) return true;  // host processes are not confined to an allocation
  const GpuAllocation* a = gpu_allocation(ctx);
  if (!a) return true;  // pod unknown: no evidence either way
  std::string_view path;
  if (ctx.ev) {
    if (const auto* od = ctx.ev->as<event::OpenData>()) path = od->path;
  }
  NvidiaNode node = nvidia_node(major, minor, path, impl_->nvidia);
  // An ioctl on a node recognised only by its name when it was opened
  // (a stand-in such as nvidia0 with /dev/null's numbers): the fd table
  // remembers what the name stood for.
  if (node.kind == NvidiaNodeKind::kNone && ctx.ev && ctx.proc) {
    if (const auto* io = ctx.ev->as<event::IoctlData>()) {
      for (const auto& g : ctx.proc->gpu_fds) {
        if (g.fd == io->fd) node = nvidia_node(g.major, g.minor, "", impl_->nvidia);
      }
    }
  }
  return allocation_allows(*a, node);
}

std::string_view State::user_name(std::uint32_t uid) const { return impl_->users.name(uid); }
std::string_view State::group_name(std::uint32_t gid) const { return impl_->groups.name(gid); }

}  // namespace vigil::state
