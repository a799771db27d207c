#include "engine/sensor/sensor.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "bpf/shared/events.h"
#include "bpf/vigil_bpf.skel.h"
#include "engine/event/nvidia.h"
#include "engine/sensor/decoder.h"
#include "engine/sensor/device.h"
#include "engine/sensor/egress_window.h"
#include "engine/sensor/hooks.h"
#include "engine/sensor/open_filter.h"
#include "engine/sensor/open_maps.h"
#include "engine/sensor/policy_maps.h"
#include "engine/sensor/sysfs.h"
#include "engine/util/caps.h"

namespace vigil::sensor {
namespace {

using event::Type;

constexpr std::size_t kMaxUsageEntries = 256;  // per process per report
static_assert(kOpenPathMaxLen == VG_PREFIX_LEN, "sensor.h's open filter bounds are the kernel's");

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, fmt, args);
}

// What the kernel asks of a process that loads a program of this type
// (kernel/bpf/syscall.c, bpf_prog_load): CAP_BPF for any, CAP_PERFMON for
// the tracing types, CAP_NET_ADMIN for the cgroup socket types; CAP_SYS_ADMIN
// stands in for each. Measured on 6.x: tp_btf and tracepoint programs load
// with CAP_BPF+CAP_PERFMON, cgroup_skb/cgroup_sock_addr ones with
// CAP_BPF+CAP_NET_ADMIN (docs/install.md, "Privileges").
std::string missing_caps_to_load(bpf_prog_type type, util::CapSet have) {
  using util::Cap;
  if (type == BPF_PROG_TYPE_CGROUP_SKB || type == BPF_PROG_TYPE_CGROUP_SOCK_ADDR)
    return util::missing_caps(have, {Cap::kBpf, Cap::kNetAdmin}, Cap::kSysAdmin);
  return util::missing_caps(have, {Cap::kBpf, Cap::kPerfmon}, Cap::kSysAdmin);
}

// The capabilities vigil's own process has; all of them when /proc/self/status
// cannot be read (the kernel then says what it refuses).
util::CapSet own_caps() { return util::effective_caps().value_or(util::CapSet::all()); }

// The prevention hook a program serves (policy::Hook::kNone: none).
policy::Hook policy_hook(const Hook& h) {
  const std::string_view p = h.prog;
  if (p == "vg_dev_policy") return policy::Hook::kDevice;
  if (p == "vg_sock_policy") return policy::Hook::kSocket;
  if (p.starts_with("vg_connect") || p.starts_with("vg_sendmsg")) return policy::Hook::kNet;
  return policy::Hook::kNone;
}

bool wanted(const Hook& h, const Config& cfg) {
  // The prevention programs run while an enforced rule needs them; the
  // connect and sendmsg ones also for the events they report.
  const policy::Hook ph = policy_hook(h);
  if (ph != policy::Hook::kNone && cfg.policy.hook_slots(ph) != 0) return true;
  if (ph == policy::Hook::kDevice || ph == policy::Hook::kSocket) return false;
  if (h.needed_by.empty()) return true;
  for (Type t : h.needed_by)
    if (cfg.event_types.count(t)) return true;
  return false;
}

// The dynamic perf PMU type of kprobe or uprobe events (0: none).
std::uint32_t read_pmu_type(const char* pmu) {
  std::ifstream in(std::string("/sys/bus/event_source/devices/") + pmu + "/type");
  std::uint32_t t = 0;
  if (!(in >> t) || t > 0xffff) return 0;
  return t;
}

std::uint32_t round_up_pow2(std::size_t v) {
  std::uint32_t p = 4096;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}

// Whether this kernel runs a raw tracepoint program on a chosen CPU through
// BPF_PROG_RUN (5.10+): what moving the per-CPU ioctl slots into the usage map
// needs (vg_ioctl_slot_drain). Asked with a two-instruction program before
// the object loads, so that the ioctl programs are built without the slots
// where it cannot.
bool can_run_on_a_cpu() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},  // r0 = 0
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, nullptr, "GPL", insns, 2, nullptr);
  if (fd < 0) return false;
  bpf_test_run_opts o{};
  o.sz = sizeof(o);
  o.flags = BPF_F_TEST_RUN_ON_CPU;
  o.cpu = 0;
  // On CPU 0, wherever this thread runs: ENXIO only where CPU 0 is offline.
  const int err = bpf_prog_test_run_opts(fd, &o);
  close(fd);
  return err == 0 || errno == ENXIO;
}

std::int64_t now_wall_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// The keys of a hash map (at most 65536), all read before any is taken out.
template <class K>
std::vector<K> map_keys(int fd) {
  std::vector<K> keys;
  K key{}, next{};
  const void* prev = nullptr;
  while (keys.size() < (1u << 16) && bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  return keys;
}

// Takes key k's value out of the map (lookup-and-delete; lookup then delete
// where the kernel has no lookup-and-delete for hash maps, before 5.14);
// false when the key is gone.
template <class K, class V>
bool take(int fd, const K& k, V& v) {
  if (bpf_map_lookup_and_delete_elem(fd, &k, &v) == 0) return true;
  if (bpf_map_lookup_elem(fd, &k, &v) != 0) return false;
  bpf_map_delete_elem(fd, &k);
  return true;
}

}  // namespace

class Sensor::Impl {
 public:
  ~Impl() {
    for (HookState& h : hooks_)
      if (h.link) bpf_link__destroy(h.link);
    if (rb_) ring_buffer__free(rb_);
    if (consumer_page_ != MAP_FAILED) munmap(consumer_page_, page_size_);
    if (producer_page_ != MAP_FAILED) munmap(producer_page_, page_size_);
    if (skel_) vigil_bpf__destroy(skel_);
    if (cgroup_fd_ >= 0) close(cgroup_fd_);
    if (timer_fd_ >= 0) close(timer_fd_);
    if (egress_fd_ >= 0) close(egress_fd_);
    if (batch_fd_ >= 0) close(batch_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }

  Status open(const Config& cfg);
  std::string cannot_update(const Config& next) const;
  Status update(const Config& next);
  // Why the sensor cannot move to `next` with `tables` ("" when it can).
  std::string refusal(const Config& next, const OpenTables& tables) const;
  const CgroupPrograms& cgroup_programs() const { return cgroup_; }
  Result<std::size_t> poll(std::size_t budget, const source::EventSource::Emit& emit);
  DropCounters drops() const;
  std::vector<std::string> attached() const {
    std::vector<std::string> out;
    for (const HookState& h : hooks_)
      if (h.link) out.push_back(h.hook->name);
    return out;
  }
  int epoll_fd() const { return epoll_fd_; }
  const std::string& failure() const { return failure_; }
  std::optional<source::Backlog> backlog() const;

  // Prevention's maps (any thread: map updates are atomic per entry).
  PolicyMaps policy_maps() const {
    return {skel_->maps.pol_rules,    skel_->maps.pol_comm, skel_->maps.pol_ports,
            skel_->maps.pol_net4,     skel_->maps.pol_net6, skel_->maps.pol_cgroup,
            skel_->maps.pol_refusals, skel_->maps.pol_exe,  skel_->maps.pol_buildid};
  }

 private:
  static int on_record(void* ctx, void* data, size_t size);
  std::size_t report_usage(const source::EventSource::Emit& emit);
  std::size_t report_egress(const source::EventSource::Emit& emit);
  void drain_ioctl_slots();
  // A hook of the table, its program, whether this kernel and vigil's
  // privileges let it run (why not, where not), and its link while attached.
  struct HookState {
    const Hook* hook = nullptr;
    bpf_program* prog = nullptr;
    bool available = false;
    std::string why_not;
    bpf_link* link = nullptr;
  };
  Status attach_one(HookState& h);
  Error load_refused(int err, util::CapSet have) const;
  // The steps of open(), in order.
  Status load(util::CapSet caps, bool load_all);
  Status configure();
  void find_cgroup_root(util::CapSet caps);
  Status choose_programs(const std::string& tracefs, bool load_all);
  Status fill_nv_surface();
  Status attach_wanted();
  Status open_ring_buffer();
  Status open_wait_fd();
  Status open_usage_timer();
  Status open_egress_timer();
  Status open_timer(int& fd, std::int64_t ms, std::uint32_t tag);
  // Does `cfg` (with the tables `t`) want hook h attached?
  bool want_now(const Hook& h, const Config& cfg, const OpenTables& t) const;
  // The open filter's tables into its maps: every entry of `next`, then the
  // knobs of both, then the old entries `next` lacks removed, then its knobs.
  Status apply_open_tables(OpenTables next);
  // The prevention maps moved to `next` (the knobs off while they change:
  // nothing is refused in between, never more than either policy refuses).
  Status apply_policy(const policy::Tables& old, const policy::Tables& next);
  OpenMaps open_maps() const {
    return {skel_->maps.open_names, skel_->maps.open_trie, skel_->maps.open_given, skel_->maps.open_heads};
  }

  Config cfg_;
  std::unique_ptr<ident::ExeIdentifier> ident_;  // null when cfg_.identify_exe is off
  vigil_bpf* skel_ = nullptr;
  OpenTables open_tables_;
  std::vector<HookState> hooks_;
  bool all_loaded_ = false;    // every available program loaded, attached or not (reloads attach them)
  bool args_at_exit_ = false;  // cfg_args_at_exit
  std::string cgroup_root_;    // "" where the cgroup programs cannot run
  std::string cgroup_off_;     // why not
  std::string tracefs_;
  ring_buffer* rb_ = nullptr;
  // The ring buffer's consumer and producer positions, mapped read-only a
  // second time so that any thread can see how full it is (backlog()).
  void* consumer_page_ = MAP_FAILED;
  void* producer_page_ = MAP_FAILED;
  std::size_t page_size_ = 4096;
  std::uint64_t ring_bytes_ = 0;
  int cgroup_fd_ = -1;
  int timer_fd_ = -1;   // the GPU usage report
  int egress_fd_ = -1;  // the egress report
  std::unique_ptr<EgressWindow> egress_window_;
  int batch_fd_ = -1;  // kMaxBatchDelay: records below the wake-up threshold
  int epoll_fd_ = -1;
  TimeBase tb_;
  std::uint64_t decode_failed_ = 0;
  const source::EventSource::Emit* emit_ = nullptr;  // valid during poll()
  std::size_t polled_ = 0;
  std::size_t budget_ = 0;
  std::string failure_;  // the ring buffer could not be read
  CgroupPrograms cgroup_;
};

// What on_record returns once the budget is reached: libbpf stops consuming
// with the record already handed over (its consumer position advanced).
constexpr int kBudgetReached = -ECANCELED;

Status Sensor::Impl::attach_one(HookState& hs) {
  const Hook& h = *hs.hook;
  bpf_program* prog = hs.prog;
  if (h.kind == AttachKind::kCgroup && cgroup_fd_ < 0) {
    cgroup_fd_ = ::open(cgroup_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroup_fd_ < 0)
      return Error::runtime("sensor: cannot open the cgroup v2 root " + cgroup_root_ + ": " + std::strerror(errno));
  }
  bpf_link* link = nullptr;
  if (h.kind == AttachKind::kCgroup) {
    link = bpf_program__attach_cgroup(prog, cgroup_fd_);
  } else if (h.kind == AttachKind::kXidTracepoint) {
    link = bpf_program__attach_tracepoint(prog, "nvidia", "nvidia_dev_xid");
  } else if (h.kind == AttachKind::kSyscallEnter) {
    std::string_view tp(h.tracepoint);
    link = bpf_program__attach_tracepoint(prog, "syscalls", std::string(tp.substr(tp.find('/') + 1)).c_str());
  } else {
    link = bpf_program__attach(prog);
  }
  if (!link) {
    int err = errno;
    return Error::runtime(std::string("sensor: cannot attach ") + h.name + ": " + std::strerror(err));
  }
  hs.link = link;
  return {};
}

// libbpf loads the programs in order and stops at the first the kernel
// refuses: the first one meant to load that has no fd is the one.
Error Sensor::Impl::load_refused(int err, util::CapSet have) const {
  const bpf_program* refused = nullptr;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (bpf_program__autoload(prog) && bpf_program__fd(prog) < 0) {
      refused = prog;
      break;
    }
  }
  std::string msg = "sensor: the kernel refused ";
  if (refused) {
    msg += std::string("BPF program ") + bpf_program__name(refused) + " (" + bpf_program__section_name(refused) + ")";
  } else {
    msg += "the BPF object";
  }
  msg += ": " + std::string(std::strerror(err)) + " (" + util::errno_name(err) + ")";
  if (refused && (err == EPERM || err == EACCES)) {
    if (std::string m = missing_caps_to_load(bpf_program__type(refused), have); !m.empty())
      return Error::runtime(msg + "; it needs " + m);
  }
  return Error::runtime(msg + " (libbpf/verifier output above)");
}

namespace {

// --- Sensor::Impl::open, step by step -------------------------------------

// Whether this host can load vigil's programs at all: the capabilities and
// the kernel's BTF.
Status host_can_load(util::CapSet caps) {
  if (std::string m = util::missing_caps(caps, {util::Cap::kBpf, util::Cap::kPerfmon}, util::Cap::kSysAdmin);
      !m.empty())
    return Error::runtime("sensor: the kernel loads no BPF program for vigil without " + m + " (uid " +
                          std::to_string(geteuid()) + ")");
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return Error::runtime(
        "sensor: no kernel BTF at /sys/kernel/btf/vmlinux (needs a kernel >= 5.8 built with CONFIG_DEBUG_INFO_BTF=y)");
  return {};
}

// Where tracefs is mounted, when a wanted hook is a tracepoint ("" otherwise).
Result<std::string> tracefs_for(const Config& cfg) {
  for (const Hook& h : hooks())
    if (wanted(h, cfg) && h.tracepoint) return ensure_tracefs();
  return std::string();
}

}  // namespace

// The open filter's tables, into its maps, and its knobs (after load: the
// data section is mapped; the programs may be running).
Status Sensor::Impl::apply_open_tables(OpenTables next) {
  const OpenMaps maps = open_maps();
  if (Status st = fill_open_maps(maps, next); !st) return st;
  vg_of_knobs& live = skel_->data_openf->vg_of;
  live = knobs_union(open_tables_.knobs, next.knobs);
  remove_stale_entries(maps, open_tables_, next);
  live = next.knobs;
  open_tables_ = std::move(next);
  return {};
}

Status Sensor::Impl::apply_policy(const policy::Tables& old, const policy::Tables& next) {
  vg_pol_knobs& live = skel_->data_policy->vg_pol;
  live = vg_pol_knobs{};
  skel_->data_policy->vg_pol_buildid_slots = 0;
  if (Status st = write_policy(policy_maps(), old, next); !st) return st;
  live = policy_knobs(next);
  skel_->data_policy->vg_pol_buildid_slots = build_id_slots(next);
  return {};
}

// The configuration fixed at load: vigil's pid, device numbers, what the
// kernel can do (arguments at the exit, the task in cgroup programs, the
// per-CPU ioctl slots), the ring buffer's size; and the open filter's first
// knobs and its maps' room.
Status Sensor::Impl::configure() {
  auto& ro = *skel_->rodata;
  ro.cfg_vigil_tgid = static_cast<std::uint32_t>(getpid());
  ro.cfg_uvm_major = read_uvm_major();
  // The programs whose every open is sent (cfg_watch_comm): the container
  // toolkit's hooks, up to 8 bytes of their comm.
  {
    const std::string_view prefix = cfg_.watch_comm_prefix.substr(0, 8);
    std::uint64_t word = 0, mask = 0;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      word |= static_cast<std::uint64_t>(static_cast<unsigned char>(prefix[i])) << (8 * i);
      mask |= std::uint64_t{0xff} << (8 * i);
    }
    ro.cfg_watch_comm = word;
    ro.cfg_watch_comm_mask = mask;
  }
  ro.cfg_perf_kprobe_type = read_pmu_type("kprobe");
  ro.cfg_perf_uprobe_type = read_pmu_type("uprobe");
  ro.cfg_payload_bytes = std::min<std::uint32_t>(cfg_.payload_bytes, VG_PAYLOAD_MAX);
  auto tables = tables_for(cfg_);
  if (!tables) return tables.error();
  open_tables_ = std::move(*tables);
  skel_->data_openf->vg_of = open_tables_.knobs;
  if (Status st = size_open_maps(open_maps(), open_tables_); !st) return st;
  args_at_exit_ =
      !cfg_.enter_exit_pairs && libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, nullptr) == 1;
  ro.cfg_args_at_exit = args_at_exit_ ? 1 : 0;
  ro.cfg_sock_task_btf =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_get_current_task_btf, nullptr) == 1 ? 1 : 0;
  // The per-CPU ioctl slots, where user space can empty them on every CPU.
  const bool ioctl_slots = cfg_.ioctl_cache && can_run_on_a_cpu();
  ro.cfg_ioctl_slot = ioctl_slots ? 1 : 0;
  bpf_program__set_autoload(skel_->progs.vg_ioctl_slot_drain, ioctl_slots);
  ro.cfg_wakeup_bytes =
      static_cast<std::uint32_t>(std::min<std::size_t>(cfg_.wakeup_bytes, round_up_pow2(cfg_.ringbuf_bytes) / 2));
  if (int err = bpf_map__set_max_entries(skel_->maps.events, round_up_pow2(cfg_.ringbuf_bytes)); err != 0)
    return Error::runtime(std::string("sensor: cannot size the ring buffer: ") + std::strerror(-err));
  return {};
}

// The cgroup socket programs (connect, sendmsg, skb: network events) need
// CAP_NET_ADMIN and a cgroup v2 mount; without either the tracing programs
// still run, and cgroup_programs() says why the others do not (when the rules
// want them). Sets the cgroup v2 root they attach to ("" when they cannot).
void Sensor::Impl::find_cgroup_root(util::CapSet caps) {
  cgroup_.wanted = std::any_of(hooks().begin(), hooks().end(),
                               [&](const Hook& h) { return h.kind == AttachKind::kCgroup && wanted(h, cfg_); });
  cgroup_root_.clear();
  cgroup_off_.clear();
  if (std::string m = missing_caps_to_load(BPF_PROG_TYPE_CGROUP_SKB, caps); !m.empty()) {
    cgroup_off_ = "the cgroup socket programs need " + m;
  } else if (auto root = cgroup2_root(); !root) {
    cgroup_off_ = root.error().message;
  } else {
    cgroup_root_ = *root;
  }
  cgroup_.off = cgroup_.wanted ? cgroup_off_ : "";
}

bool Sensor::Impl::want_now(const Hook& h, const Config& cfg, const OpenTables& t) const {
  if (!wanted(h, cfg)) return false;
  // The enter programs only keep arguments for the exit programs where those
  // cannot read them; the open ones only while the open filter has paths.
  if (std::string_view(h.prog).starts_with("vg_enter_open") && t.knobs.n_literals == 0) return false;
  return true;
}

// Which hooks this kernel and vigil's privileges let run, and which programs
// load: those the rules want, or (load_all) every one that can run, so that a
// reload whose rules want another hook only attaches it.
Status Sensor::Impl::choose_programs(const std::string& tracefs, bool load_all) {
  hooks_.clear();
  for (const Hook& h : hooks()) {
    HookState hs;
    hs.hook = &h;
    hs.prog = bpf_object__find_program_by_name(skel_->obj, h.prog);
    const bool want = want_now(h, cfg_, open_tables_);
    if (!hs.prog) {
      if (want && !h.optional)
        return Error::runtime(std::string("sensor: BPF program ") + h.prog + " missing from the object");
      hs.why_not = "its program is missing from the object";
    } else if (h.kind == AttachKind::kCgroup && cgroup_root_.empty()) {
      hs.why_not = cgroup_off_;
    } else if (std::string_view(h.prog).starts_with("vg_enter_") && args_at_exit_) {
      hs.why_not = "the exit programs read the arguments";
    } else if (h.tracepoint && (tracefs.empty() || access((tracefs + "/events/" + h.tracepoint).c_str(), F_OK) != 0)) {
      const std::string path = tracefs + "/events/" + h.tracepoint;
      if (want && !h.optional)
        return Error::runtime(std::string("sensor: tracepoint ") + h.name + " missing on this kernel (" + path + ")");
      hs.why_not = "tracepoint " + std::string(h.name) + " missing on this kernel";
    } else if (h.kind == AttachKind::kXidTracepoint) {
      auto offs = xid_tracepoint_offsets(tracefs + "/events/nvidia/nvidia_dev_xid/format");
      if (!offs) {
        hs.why_not = "the NVIDIA driver's Xid tracepoint has no format vigil reads";
      } else {
        skel_->rodata->cfg_xid_dev_off = offs->dev;
        skel_->rodata->cfg_xid_code_off = offs->code;
        skel_->rodata->cfg_xid_msg_off = offs->msg;
        hs.available = true;
      }
    } else {
      hs.available = true;
    }
    hooks_.push_back(std::move(hs));
  }
  // A program shared by several hooks loads when any of them needs it.
  for (const HookState& hs : hooks_) {
    if (!hs.prog) continue;
    const bool any = std::any_of(hooks_.begin(), hooks_.end(), [&](const HookState& o) {
      return o.prog == hs.prog && o.available && (load_all || want_now(*o.hook, cfg_, open_tables_));
    });
    bpf_program__set_autoload(hs.prog, any);
  }
  return {};
}

// The numbers of the driver surface table the ioctl programs know, filled
// before any program is attached (a call missing from them is sent one by
// one): escapes and UVM commands in nv_surface, RM classes as the bitmap
// nv_classes (ids up to 0xFFFF; controls are sent once per process anyway).
Status Sensor::Impl::fill_nv_surface() {
  using event::nvidia::Part;
  auto fail = [](const char* what) {
    return Error::runtime(std::string("sensor: cannot fill ") + what + ": " + std::strerror(errno));
  };
  const int fd = bpf_map__fd(skel_->maps.nv_surface);
  const std::uint8_t one = 1;
  for (auto [part, tag] : {std::pair{Part::kEscape, 0ull}, {Part::kUvm, 1ull}}) {
    for (const auto& row : event::nvidia::surface_rows(part)) {
      const std::uint64_t key = (tag << 32) | row.value;
      if (bpf_map_update_elem(fd, &key, &one, BPF_ANY) != 0) return fail("nv_surface");
    }
  }
  std::map<std::uint32_t, std::uint32_t> words;
  for (const auto& row : event::nvidia::surface_rows(Part::kClass)) {
    if (row.value <= 0xFFFF) words[row.value >> 5] |= 1u << (row.value & 31);
  }
  const int cfd = bpf_map__fd(skel_->maps.nv_classes);
  for (const auto& [index, bits] : words) {
    if (bpf_map_update_elem(cfd, &index, &bits, BPF_ANY) != 0) return fail("nv_classes");
  }
  return {};
}

// Attaches the hooks the rules want.
Status Sensor::Impl::attach_wanted() {
  for (HookState& hs : hooks_) {
    if (!hs.available || hs.link || !want_now(*hs.hook, cfg_, open_tables_)) continue;
    if (Status st = attach_one(hs); !st) return st;
  }
  return {};
}

// The ring buffer's reader, and its positions mapped a second time for
// backlog().
Status Sensor::Impl::open_ring_buffer() {
  rb_ = ring_buffer__new(bpf_map__fd(skel_->maps.events), &Impl::on_record, this, nullptr);
  if (!rb_) return Error::runtime(std::string("sensor: cannot map the ring buffer: ") + std::strerror(errno));
  // Not fatal: without them the ring buffer's fill is simply not reported.
  const int rb_fd = bpf_map__fd(skel_->maps.events);
  page_size_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  ring_bytes_ = bpf_map__max_entries(skel_->maps.events);
  consumer_page_ = mmap(nullptr, page_size_, PROT_READ, MAP_SHARED, rb_fd, 0);
  producer_page_ = mmap(nullptr, page_size_, PROT_READ, MAP_SHARED, rb_fd, static_cast<off_t>(page_size_));
  return {};
}

// wait_fd(): one epoll fd over the ring buffer (tag 0), the batch timer (1)
// and the usage report timer (2).
Status Sensor::Impl::open_wait_fd() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Error::runtime(std::string("sensor: epoll: ") + std::strerror(errno));
  auto add = [&](int fd, std::uint32_t tag) -> Status {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
      return Error::runtime(std::string("sensor: epoll_ctl: ") + std::strerror(errno));
    return {};
  };
  if (Status st = add(ring_buffer__epoll_fd(rb_), 0); !st) return st;

  auto periodic = [&](int& fd, std::int64_t ms, std::uint32_t tag) -> Status {
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return Error::runtime(std::string("sensor: timerfd: ") + std::strerror(errno));
    itimerspec its{};
    its.it_interval.tv_sec = ms / 1000;
    its.it_interval.tv_nsec = (ms % 1000) * 1000000;
    its.it_value = its.it_interval;
    timerfd_settime(fd, 0, &its, nullptr);
    return add(fd, tag);
  };
  if (cfg_.wakeup_bytes > 0) {
    if (Status st = periodic(batch_fd_, kMaxBatchDelay.count(), 1); !st) return st;
  }
  if (Status st = open_usage_timer(); !st) return st;
  return open_egress_timer();
}

// A periodic timer of `ms` milliseconds in the wait set (epoll tag `tag`).
Status Sensor::Impl::open_timer(int& fd, std::int64_t ms, std::uint32_t tag) {
  fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return Error::runtime(std::string("sensor: timerfd: ") + std::strerror(errno));
  ms = std::max<std::int64_t>(ms, 10);
  itimerspec its{};
  its.it_interval.tv_sec = ms / 1000;
  its.it_interval.tv_nsec = (ms % 1000) * 1000000;
  its.it_value = its.it_interval;
  timerfd_settime(fd, 0, &its, nullptr);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = tag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
    return Error::runtime(std::string("sensor: epoll_ctl: ") + std::strerror(errno));
  return {};
}

// The GPU usage report's timer (tag 2), while a rule wants ioctl or gpu_usage
// events.
Status Sensor::Impl::open_usage_timer() {
  if (timer_fd_ >= 0 || !(cfg_.event_types.count(Type::kIoctl) || cfg_.event_types.count(Type::kGpuUsage))) return {};
  return open_timer(timer_fd_, cfg_.usage_interval.count(), 2);
}

// The egress report's timer (tag 3), while a rule wants egress events.
Status Sensor::Impl::open_egress_timer() {
  if (egress_fd_ >= 0 || !cfg_.event_types.count(Type::kEgress)) return {};
  if (!egress_window_) {
    egress_window_ = std::make_unique<EgressWindow>(
        static_cast<std::uint64_t>(cfg_.egress_window.count()) * 1000000000ULL, cfg_.egress_max_destinations);
  }
  return open_timer(egress_fd_, cfg_.egress_interval.count(), 3);
}

// Opens and configures the object and loads its programs: every one that can
// run here (load_all), else those the rules want.
Status Sensor::Impl::load(util::CapSet caps, bool load_all) {
  skel_ = vigil_bpf__open();
  if (!skel_) return Error::runtime(std::string("sensor: cannot open the BPF object: ") + std::strerror(errno));
  if (Status st = configure(); !st) return st;
  find_cgroup_root(caps);
  if (Status st = choose_programs(tracefs_, load_all); !st) return st;
  if (int err = vigil_bpf__load(skel_); err != 0) return load_refused(-err, caps);
  all_loaded_ = load_all;
  return {};
}

// Checks the host, loads the programs (every one that can run here, so that
// a reload only attaches; where the kernel refuses one the rules do not want,
// only those they want), fills the open filter and attaches the hooks the
// rules want, then opens what poll() reads.
Status Sensor::Impl::open(const Config& cfg) {
  cfg_ = cfg;
  cfg_.event_types.insert({Type::kExec, Type::kFork, Type::kExit});
  const util::CapSet caps = own_caps();
  if (Status st = host_can_load(caps); !st) return st;
  libbpf_set_print(libbpf_print);
  auto tracefs = tracefs_for(cfg_);
  if (!tracefs) return tracefs.error();
  tracefs_ = *tracefs;
  if (tracefs_.empty()) {
    if (auto t = ensure_tracefs(); t) tracefs_ = *t;  // for the hooks a reload may want
  }
  if (Status st = load(caps, true); !st) {
    if (st.error().kind == Error::Kind::kBadInput) return st;
    vigil_bpf__destroy(skel_);
    skel_ = nullptr;
    if (Status again = load(caps, false); !again) return again;
    std::fprintf(stderr,
                 "vigil: sensor: loading every program failed (%s); loaded those the rules want: a reload "
                 "whose rules want another hook needs a restart\n",
                 st.error().message.c_str());
  }
  if (Status st = fill_nv_surface(); !st) return st;
  if (Status st = apply_open_tables(open_tables_); !st) return st;
  if (Status st = apply_policy({}, cfg_.policy); !st) return st;
  if (Status st = attach_wanted(); !st) return st;

  if (Status st = open_ring_buffer(); !st) return st;
  if (Status st = open_wait_fd(); !st) return st;
  tb_ = TimeBase::now();
  if (cfg_.identify_exe) {
    ident_ = std::make_unique<ident::ExeIdentifier>(cfg_.ident);
    ident_->learn_host();
  }
  return {};
}

// What keeps the sensor from collecting for `in` by update() ("" when
// nothing does): a hook the rules want whose program was not loaded at
// start, a table without room. Reads only what open()
// fixed, so any thread may ask.
std::string Sensor::Impl::cannot_update(const Config& in) const {
  Config next = in;
  next.event_types.insert({Type::kExec, Type::kFork, Type::kExit});
  auto tables = tables_for(next);
  if (!tables) return tables.error().message;
  return refusal(next, *tables);
}

std::string Sensor::Impl::refusal(const Config& next, const OpenTables& tables) const {
  if (std::string why = open_maps_too_small(open_maps(), tables); !why.empty()) return why;
  std::string out;
  for (const HookState& hs : hooks_) {
    // A hook that cannot run here is skipped as it is at start (the parts
    // say so); one that can but was not loaded needs a restart.
    if (!want_now(*hs.hook, next, tables) || !hs.available || bpf_program__fd(hs.prog) >= 0) continue;
    out += (out.empty() ? "" : "; ") + std::string(hs.hook->name) +
           ": its program was not loaded at start (the kernel refused loading every program up front)";
  }
  return out;
}

// A reload's rules: the open filter's tables move to theirs, the hooks they
// want are attached and those no rule wants any more detached, on the loop
// thread between two polls. Nothing changes where refusal() says why.
Status Sensor::Impl::update(const Config& in) {
  Config next = in;
  next.event_types.insert({Type::kExec, Type::kFork, Type::kExit});
  auto tables = tables_for(next);
  if (!tables) return tables.error();
  if (std::string why = refusal(next, *tables); !why.empty()) return Error::runtime("sensor: " + why);
  // The tables first, so that a hook attached next judges its first event
  // by the new rules' paths; then the hooks that went.
  if (Status st = apply_open_tables(std::move(*tables)); !st) return st;
  if (Status st = apply_policy(cfg_.policy, next.policy); !st) return st;
  cfg_ = std::move(next);
  if (Status st = attach_wanted(); !st) return st;
  for (HookState& hs : hooks_) {
    if (hs.link && !want_now(*hs.hook, cfg_, open_tables_)) {
      bpf_link__destroy(hs.link);
      hs.link = nullptr;
    }
  }
  cgroup_.wanted = std::any_of(hooks_.begin(), hooks_.end(),
                               [](const HookState& h) { return h.link && h.hook->kind == AttachKind::kCgroup; });
  if (Status st = open_usage_timer(); !st) return st;
  return open_egress_timer();
}

int Sensor::Impl::on_record(void* ctx, void* data, size_t size) {
  auto* self = static_cast<Impl*>(ctx);
  auto ev = decode_record(std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data), size), self->tb_);
  if (!ev) {
    ++self->decode_failed_;
    return 0;
  }
  if (self->ident_ && ev->hdr.type == Type::kExec) self->ident_->enrich(*ev);
  (*self->emit_)(std::move(*ev));
  return ++self->polled_ >= self->budget_ ? kBudgetReached : 0;
}

// Moves the calls that wait in each CPU's ioctl slot into gpu_usage
// (bpf/progs/fd/nvidia_ioctl.bpf.c, vg_ioctl_slot_drain), on the CPUs whose slot holds
// any: a program run on that CPU (from an interrupt where it is not this
// thread's). A slot the CPU's ioctl program was changing at that instant, or
// whose count gpu_usage refused, is asked again a few times; what stays goes
// in a later report. An offline CPU keeps its slot until it is back.
void Sensor::Impl::drain_ioctl_slots() {
  const int prog = bpf_program__fd(skel_->progs.vg_ioctl_slot_drain);
  const int ncpu = libbpf_num_possible_cpus();
  if (prog < 0 || ncpu <= 0) return;
  std::vector<vg_ioctl_slot> slots(static_cast<std::size_t>(ncpu));
  const std::uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.ioctl_slot), &zero, slots.data()) != 0) return;
  for (int cpu = 0; cpu < ncpu; ++cpu) {
    if (slots[static_cast<std::size_t>(cpu)].count == 0) continue;
    for (int attempt = 0; attempt < 8; ++attempt) {
      bpf_test_run_opts o{};
      o.sz = sizeof(o);
      o.flags = BPF_F_TEST_RUN_ON_CPU;
      o.cpu = static_cast<std::uint32_t>(cpu);
      if (bpf_prog_test_run_opts(prog, &o) != 0 || o.retval == 0) break;
    }
  }
}

std::size_t Sensor::Impl::report_usage(const source::EventSource::Emit& emit) {
  if (skel_->rodata->cfg_ioctl_slot) drain_ioctl_slots();
  const int fd = bpf_map__fd(skel_->maps.gpu_usage);
  std::map<std::uint32_t, std::vector<event::GpuUsageData::Entry>> by_pid;
  for (const vg_usage_key& k : map_keys<vg_usage_key>(fd)) {
    vg_usage_val val{};
    if (!take(fd, k, val)) continue;
    auto& v = by_pid[k.pid];
    if (v.size() >= kMaxUsageEntries) continue;
    v.push_back({k.dev >> 20, k.dev & 0xfffff, k.nr, val.count});
  }
  std::uint64_t now = static_cast<std::uint64_t>(now_wall_ns());
  std::size_t n = 0;
  for (auto& [pid, entries] : by_pid) {
    event::Event ev;
    ev.hdr.type = Type::kGpuUsage;
    ev.hdr.ts_ns = now;
    ev.hdr.pid = pid;
    ev.hdr.tid = pid;
    event::GpuUsageData d;
    d.interval_ns = static_cast<std::uint64_t>(cfg_.usage_interval.count()) * 1000000ULL;
    d.entries = std::move(entries);
    ev.data = std::move(d);
    emit(std::move(ev));
    ++n;
  }
  return n;
}

// The kernel's egress counts since the last report, one egress event per
// container cgroup and destination that sent anything, each with its
// window's sum. Only counts the kernel has are read: at most the map's size.
std::size_t Sensor::Impl::report_egress(const source::EventSource::Emit& emit) {
  const int fd = bpf_map__fd(skel_->maps.egress_bytes);
  const auto now = static_cast<std::uint64_t>(now_wall_ns());
  const std::uint64_t interval_ns = static_cast<std::uint64_t>(cfg_.egress_interval.count()) * 1000000ULL;
  std::size_t n = 0;
  for (const vg_egress_key& k : map_keys<vg_egress_key>(fd)) {
    vg_egress_val val{};
    if (!take(fd, k, val)) continue;
    if (val.bytes == 0 || (k.family != AF_INET && k.family != AF_INET6)) continue;
    EgressWindow::Key wk{};
    std::memcpy(wk.data(), &k, sizeof(k));
    event::Event ev;
    ev.hdr.type = Type::kEgress;
    ev.hdr.ts_ns = now;
    ev.hdr.cgroup_id = k.cgroup_id;
    event::EgressData d;
    d.family = k.family;
    d.proto = k.proto == IPPROTO_TCP ? event::L4::kTcp : k.proto == IPPROTO_UDP ? event::L4::kUdp : event::L4::kUnknown;
    d.daddr.family = k.family;
    std::memcpy(d.daddr.bytes.data(), k.daddr, k.family == AF_INET ? 4 : 16);
    d.dport = k.dport;
    d.bytes = val.bytes;
    d.packets = val.packets;
    d.interval_ns = interval_ns;
    d.window_ns = egress_window_->window_ns();
    d.window_bytes = egress_window_->add(wk, now, val.bytes);
    ev.data = std::move(d);
    emit(std::move(ev));
    ++n;
  }
  egress_window_->expire(now);
  return n;
}

Result<std::size_t> Sensor::Impl::poll(std::size_t budget, const source::EventSource::Emit& emit) {
  if (!failure_.empty()) return Error::runtime(failure_);
  std::size_t total = 0;
  // The timers: never blocks (their fds are non-blocking).
  std::uint64_t ticks = 0;
  if (batch_fd_ >= 0) (void)!read(batch_fd_, &ticks, sizeof(ticks));
  ticks = 0;
  if (timer_fd_ >= 0 && read(timer_fd_, &ticks, sizeof(ticks)) == sizeof(ticks) && ticks > 0) {
    total += report_usage(emit);
  }
  ticks = 0;
  if (egress_fd_ >= 0 && read(egress_fd_, &ticks, sizeof(ticks)) == sizeof(ticks) && ticks > 0) {
    total += report_egress(emit);
  }
  // The ring buffer: the busiest source, read on every poll.
  emit_ = &emit;
  polled_ = 0;
  budget_ = budget > total ? budget - total : 1;
  int r = ring_buffer__consume(rb_);
  emit_ = nullptr;
  total += polled_;
  if (r < 0 && r != kBudgetReached && r != -EINTR) {
    failure_ = std::string("reading the ring buffer: ") + std::strerror(-r);
    return Error::runtime(failure_);
  }
  return total;
}

DropCounters Sensor::Impl::drops() const {
  DropCounters d;
  d.decode_failed = decode_failed_;
  int fd = bpf_map__fd(skel_->maps.drops);
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return d;
  std::vector<std::uint64_t> vals(static_cast<std::size_t>(ncpu));
  std::uint64_t sums[VG_DROP_COUNT] = {};
  for (std::uint32_t i = 0; i < VG_DROP_COUNT; ++i) {
    if (bpf_map_lookup_elem(fd, &i, vals.data()) != 0) continue;
    for (std::uint64_t v : vals) sums[i] += v;
  }
  d.ringbuf_full = sums[VG_DROP_RINGBUF_FULL];
  d.truncated = sums[VG_DROP_TRUNCATED];
  d.map_full = sums[VG_DROP_MAP_FULL];
  d.read_failed = sums[VG_DROP_READ_FAIL];
  return d;
}

std::string DropCounters::to_string() const {
  std::string out;
  auto add = [&](const char* name, std::uint64_t v) {
    if (v == 0) return;
    if (!out.empty()) out += ' ';
    out += name;
    out += '=';
    out += std::to_string(v);
  };
  add("ringbuf_full", ringbuf_full);
  add("truncated", truncated);
  add("map_full", map_full);
  add("read_failed", read_failed);
  add("decode_failed", decode_failed);
  return out.empty() ? "none" : out;
}

Sensor::Sensor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sensor::~Sensor() = default;

Result<std::unique_ptr<Sensor>> Sensor::open(const Config& cfg) {
  auto impl = std::make_unique<Impl>();
  Status st = impl->open(cfg);
  if (!st) return st.error();
  return std::unique_ptr<Sensor>(new Sensor(std::move(impl)));
}

std::optional<source::Backlog> Sensor::Impl::backlog() const {
  if (consumer_page_ == MAP_FAILED || producer_page_ == MAP_FAILED) return std::nullopt;
  // The kernel and libbpf update these positions with release stores; an
  // acquire load of each is enough for a gauge (they may be a few records
  // apart, never inconsistent in a way that matters here).
  source::Backlog b;
  b.consumed = __atomic_load_n(static_cast<const std::uint64_t*>(consumer_page_), __ATOMIC_ACQUIRE);
  b.produced = __atomic_load_n(static_cast<const std::uint64_t*>(producer_page_), __ATOMIC_ACQUIRE);
  b.pending = b.produced >= b.consumed ? b.produced - b.consumed : 0;
  b.capacity = ring_bytes_;
  if (b.pending > b.capacity) b.pending = b.capacity;
  b.unit = "bytes";
  return b;
}

int Sensor::wait_fd() const { return impl_->epoll_fd(); }
std::optional<source::Backlog> Sensor::backlog() const { return impl_->backlog(); }
Result<std::size_t> Sensor::poll(std::size_t budget, const Emit& emit) { return impl_->poll(budget, emit); }
source::EventSource::Health Sensor::health() const {
  return impl_->failure().empty() ? Health::kRunning : Health::kFailed;
}
std::string Sensor::failure() const { return impl_->failure(); }
DropCounters Sensor::counters() const { return impl_->drops(); }
source::Drops Sensor::drops() const {
  const DropCounters c = impl_->drops();
  source::Drops d;
  d.add("ringbuf_full", c.ringbuf_full);
  d.add("map_full", c.map_full);
  d.add("read_failed", c.read_failed);
  d.add("decode_failed", c.decode_failed);
  return d;
}
std::vector<std::string> Sensor::attached() const { return impl_->attached(); }
std::string Sensor::cannot_update(const Config& next) const { return impl_->cannot_update(next); }
Status Sensor::update(const Config& next) { return impl_->update(next); }
const CgroupPrograms& Sensor::cgroup_programs() const { return impl_->cgroup_programs(); }
Status Sensor::set_policy_cgroup(std::uint64_t cgroup_id, const policy::CgroupEntry* e) {
  return sensor::set_policy_cgroup(impl_->policy_maps(), cgroup_id, e);
}
Status Sensor::add_policy_net(const policy::NetEntry& e) { return sensor::add_policy_net(impl_->policy_maps(), e); }
Status Sensor::add_policy_exe(const policy::ExeEntry& e) { return sensor::add_policy_exe(impl_->policy_maps(), e); }
std::vector<std::uint64_t> Sensor::policy_refusals() const { return sensor::policy_refusals(impl_->policy_maps()); }

}  // namespace vigil::sensor
