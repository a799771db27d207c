#include "engine/sensor/sensor.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
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
#include "engine/sensor/decoder.h"
#include "engine/sensor/device.h"
#include "engine/sensor/hooks.h"
#include "engine/sensor/open_filter.h"
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

bool wanted(const Hook& h, const Config& cfg) {
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

}  // namespace

class Sensor::Impl {
 public:
  ~Impl() {
    for (bpf_link* l : links_) bpf_link__destroy(l);
    if (rb_) ring_buffer__free(rb_);
    if (consumer_page_ != MAP_FAILED) munmap(consumer_page_, page_size_);
    if (producer_page_ != MAP_FAILED) munmap(producer_page_, page_size_);
    if (skel_) vigil_bpf__destroy(skel_);
    if (cgroup_fd_ >= 0) close(cgroup_fd_);
    if (timer_fd_ >= 0) close(timer_fd_);
    if (batch_fd_ >= 0) close(batch_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }

  Status open(const Config& cfg);
  const CgroupPrograms& cgroup_programs() const { return cgroup_; }
  Result<std::size_t> poll(std::size_t budget, const source::EventSource::Emit& emit);
  DropCounters drops() const;
  std::vector<std::string> attached() const { return attached_; }
  int epoll_fd() const { return epoll_fd_; }
  const std::string& failure() const { return failure_; }
  std::optional<source::Backlog> backlog() const;

 private:
  static int on_record(void* ctx, void* data, size_t size);
  std::size_t report_usage(const source::EventSource::Emit& emit);
  void drain_ioctl_slots();
  Status attach_one(const Hook& h, bpf_program* prog);
  Error load_refused(int err, util::CapSet have) const;
  // The steps of open(), in order.
  Status configure(bool& args_at_exit);
  // The open filter's tables, into its maps (after load, before attach).
  Status fill_open_tables();
  std::string find_cgroup_root(util::CapSet caps);
  Result<std::vector<std::pair<const Hook*, bpf_program*>>> choose_programs(const std::string& tracefs,
                                                                            bool args_at_exit);
  Status attach_all(const std::vector<std::pair<const Hook*, bpf_program*>>& to_attach, const std::string& cgroup_root);
  Status open_ring_buffer();
  Status open_wait_fd();

  Config cfg_;
  std::unique_ptr<ident::ExeIdentifier> ident_;  // null when cfg_.identify_exe is off
  vigil_bpf* skel_ = nullptr;
  OpenTables open_tables_;
  ring_buffer* rb_ = nullptr;
  // The ring buffer's consumer and producer positions, mapped read-only a
  // second time so that any thread can see how full it is (backlog()).
  void* consumer_page_ = MAP_FAILED;
  void* producer_page_ = MAP_FAILED;
  std::size_t page_size_ = 4096;
  std::uint64_t ring_bytes_ = 0;
  std::vector<bpf_link*> links_;
  std::vector<std::string> attached_;
  int cgroup_fd_ = -1;
  int timer_fd_ = -1;  // the GPU usage report
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

Status Sensor::Impl::attach_one(const Hook& h, bpf_program* prog) {
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
  links_.push_back(link);
  attached_.push_back(h.name);
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

// vigil's own files join the whole paths (those a rule's resolved prefix
// covers are sent already; the rule on them wants writes).
void add_own_files(Config& cfg) {
  for (const std::string& own : cfg.own_files) {
    if (own.empty() || own[0] != '/' || own.size() >= VG_PREFIX_LEN || own.back() == '/') continue;
    auto starts = [&](const std::string& q) { return !q.empty() && own.compare(0, q.size(), q) == 0; };
    const bool covered = std::any_of(cfg.open_path_prefixes.begin(), cfg.open_path_prefixes.end(), starts) ||
                         std::any_of(cfg.open_write_prefixes.begin(), cfg.open_write_prefixes.end(), starts);
    if (!covered && std::find(cfg.open_path_whole.begin(), cfg.open_path_whole.end(), own) == cfg.open_path_whole.end())
      cfg.open_path_whole.push_back(own);
  }
}

using Rodata = vigil_bpf::vigil_bpf__rodata;

// The open filter's knobs, into the read-only data (its tables go into its
// maps once they are created: fill_open_tables).
void write_open_knobs(const OpenTables& t, Rodata& ro) {
  ro.cfg_n_prefixes = t.n_literals;
  ro.cfg_have_whole = t.have_whole;
  ro.cfg_have_dirs = t.have_dirs;
  ro.cfg_have_rp = t.have_rp;
  ro.cfg_have_write_rp = t.have_write_rp;
  ro.cfg_have_given = t.have_given;
  ro.cfg_have_traversal = t.have_traversal;
  ro.cfg_dir_len_mask = t.dir_len_mask;
  ro.cfg_leaf_len_mask = t.leaf_len_mask;
  ro.cfg_rp_maxcomp = t.rp_maxcomp;
  ro.cfg_rp_top_len_mask = t.rp_top_len_mask;
  ro.cfg_rp_any_len_mask = t.rp_any_len_mask;
  ro.cfg_given_lens = t.given_lens;
  ro.cfg_lit_lens = t.lit_lens;
  ro.cfg_given_heads = t.given_heads;
  ro.cfg_lit_heads = t.lit_heads;
  ro.cfg_n_contains = t.n_contains;
  for (std::size_t i = 0; i < t.fragments.size() && i < VG_CONTAINS_MAX; ++i) {
    ro.cfg_contains_len[i] = t.fragments[i].first;
    ro.cfg_contains_head[i][0] = t.fragments[i].second[0];
    ro.cfg_contains_head[i][1] = t.fragments[i].second[1];
  }
}

// Each table's map sized to its entries (a hash map holds at least one).
Status size_open_maps(const OpenTables& t, vigil_bpf& skel) {
  const std::pair<bpf_map*, std::size_t> maps[] = {{skel.maps.open_names, t.names.size()},
                                                   {skel.maps.open_trie, t.trie.size()},
                                                   {skel.maps.open_given, t.given.size()},
                                                   {skel.maps.open_heads, t.heads.size()}};
  for (const auto& [m, n] : maps) {
    if (int err = bpf_map__set_max_entries(m, static_cast<std::uint32_t>(std::max<std::size_t>(n, 1))); err != 0)
      return Error::runtime(std::string("sensor: cannot size the open filter's map ") + bpf_map__name(m) + ": " +
                            std::strerror(-err));
  }
  return {};
}

template <typename K, typename V>
Status fill_map(bpf_map* m, const std::vector<std::pair<K, V>>& entries) {
  for (const auto& [k, v] : entries) {
    if (int err = bpf_map__update_elem(m, &k, sizeof(k), &v, sizeof(v), BPF_ANY); err != 0)
      return Error::runtime(std::string("sensor: cannot fill the open filter's map ") + bpf_map__name(m) + ": " +
                            std::strerror(-err));
  }
  return {};
}

}  // namespace

Status Sensor::Impl::fill_open_tables() {
  if (Status st = fill_map(skel_->maps.open_names, open_tables_.names); !st) return st;
  if (Status st = fill_map(skel_->maps.open_trie, open_tables_.trie); !st) return st;
  if (Status st = fill_map(skel_->maps.open_given, open_tables_.given); !st) return st;
  return fill_map(skel_->maps.open_heads, open_tables_.heads);
}

// The read-only configuration, fixed at load: vigil's pid, device numbers,
// the open filter, and what the kernel can do (arguments at the exit, the
// task in cgroup programs, the per-CPU ioctl slots); the ring buffer's size.
Status Sensor::Impl::configure(bool& args_at_exit) {
  auto& ro = *skel_->rodata;
  ro.cfg_vigil_tgid = static_cast<std::uint32_t>(getpid());
  ro.cfg_uvm_major = read_uvm_major();
  ro.cfg_perf_kprobe_type = read_pmu_type("kprobe");
  ro.cfg_perf_uprobe_type = read_pmu_type("uprobe");
  ro.cfg_payload_bytes = std::min<std::uint32_t>(cfg_.payload_bytes, VG_PAYLOAD_MAX);
  add_own_files(cfg_);
  auto tables = build_open_tables(OpenLists{cfg_.open_given_prefixes, cfg_.open_path_prefixes, cfg_.open_write_prefixes,
                                            cfg_.open_path_whole, cfg_.open_dirs, cfg_.open_traversal_prefixes,
                                            cfg_.open_traversal_fragments});
  if (!tables) return Error::bad_input("sensor: " + tables.error().message);
  open_tables_ = std::move(*tables);
  write_open_knobs(open_tables_, ro);
  if (Status st = size_open_maps(open_tables_, *skel_); !st) return st;
  ro.cfg_want_payload = cfg_.event_types.count(Type::kPayload) ? 1 : 0;
  args_at_exit =
      !cfg_.enter_exit_pairs && libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, nullptr) == 1;
  ro.cfg_args_at_exit = args_at_exit ? 1 : 0;
  ro.cfg_sock_task_btf =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_get_current_task_btf, nullptr) == 1 ? 1 : 0;
  // The per-CPU ioctl slots, where user space can empty them on every CPU.
  const bool ioctl_slots = cfg_.ioctl_cache &&
                           (cfg_.event_types.count(Type::kIoctl) || cfg_.event_types.count(Type::kGpuUsage)) &&
                           can_run_on_a_cpu();
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
// still run, and cgroup_programs() says why the others do not. Returns the
// cgroup v2 root they attach to ("" when they are off).
std::string Sensor::Impl::find_cgroup_root(util::CapSet caps) {
  cgroup_.wanted = std::any_of(hooks().begin(), hooks().end(),
                               [&](const Hook& h) { return h.kind == AttachKind::kCgroup && wanted(h, cfg_); });
  if (!cgroup_.wanted) return {};
  if (std::string m = missing_caps_to_load(BPF_PROG_TYPE_CGROUP_SKB, caps); !m.empty()) {
    cgroup_.off = "the cgroup socket programs need " + m;
  } else if (auto root = cgroup2_root(); !root) {
    cgroup_.off = root.error().message;
  } else {
    return *root;
  }
  return {};
}

// Only the programs the ruleset needs are loaded and attached: the hooks to
// attach, with their programs; every other program is not loaded.
Result<std::vector<std::pair<const Hook*, bpf_program*>>> Sensor::Impl::choose_programs(const std::string& tracefs,
                                                                                        bool args_at_exit) {
  std::vector<std::pair<const Hook*, bpf_program*>> to_attach;
  for (const Hook& h : hooks()) {
    bpf_program* prog = bpf_object__find_program_by_name(skel_->obj, h.prog);
    if (!prog) {
      if (wanted(h, cfg_) && !h.optional)
        return Error::runtime(std::string("sensor: BPF program ") + h.prog + " missing from the object");
      continue;
    }
    bool want = wanted(h, cfg_) && !(h.kind == AttachKind::kCgroup && !cgroup_.off.empty());
    if (want && h.tracepoint) {
      std::string path = tracefs + "/events/" + h.tracepoint;
      if (access(path.c_str(), F_OK) != 0) {
        if (!h.optional)
          return Error::runtime(std::string("sensor: tracepoint ") + h.name + " missing on this kernel (" + path + ")");
        want = false;
      }
    }
    if (want && h.kind == AttachKind::kXidTracepoint) {
      auto offs = xid_tracepoint_offsets(tracefs + "/events/nvidia/nvidia_dev_xid/format");
      if (!offs) {
        want = false;
      } else {
        skel_->rodata->cfg_xid_dev_off = offs->dev;
        skel_->rodata->cfg_xid_code_off = offs->code;
        skel_->rodata->cfg_xid_msg_off = offs->msg;
      }
    }
    // The enter programs only keep arguments for the exit programs where
    // those cannot read them (args_at_exit false); the open ones only when
    // path prefixes need the given path.
    if (want && std::string_view(h.prog).starts_with("vg_enter_")) {
      if (args_at_exit) want = false;
      if (std::string_view(h.prog).starts_with("vg_enter_open") && skel_->rodata->cfg_n_prefixes == 0) want = false;
    }
    if (want) to_attach.emplace_back(&h, prog);
  }
  // A program shared by several hooks loads when any of them wants it.
  for (const Hook& h : hooks()) {
    if (bpf_program* prog = bpf_object__find_program_by_name(skel_->obj, h.prog)) {
      bool any = std::any_of(to_attach.begin(), to_attach.end(), [&](const auto& p) { return p.second == prog; });
      bpf_program__set_autoload(prog, any);
    }
  }
  return to_attach;
}

// Attaches the chosen programs, the cgroup ones to `cgroup_root`.
Status Sensor::Impl::attach_all(const std::vector<std::pair<const Hook*, bpf_program*>>& to_attach,
                                const std::string& cgroup_root) {
  bool need_cgroup = std::any_of(to_attach.begin(), to_attach.end(),
                                 [](const auto& p) { return p.first->kind == AttachKind::kCgroup; });
  if (need_cgroup) {
    cgroup_fd_ = ::open(cgroup_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroup_fd_ < 0)
      return Error::runtime("sensor: cannot open the cgroup v2 root " + cgroup_root + ": " + std::strerror(errno));
  }
  for (auto& [h, prog] : to_attach) {
    Status st = attach_one(*h, prog);
    if (!st) return st;
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
  if (cfg_.event_types.count(Type::kIoctl) || cfg_.event_types.count(Type::kGpuUsage)) {
    if (Status st = periodic(timer_fd_, std::max<std::int64_t>(cfg_.usage_interval.count(), 10), 2); !st) return st;
  }
  return {};
}

// Checks the host, opens and configures the object, loads the programs the
// ruleset needs and attaches them, then opens what poll() reads.
Status Sensor::Impl::open(const Config& cfg) {
  cfg_ = cfg;
  cfg_.event_types.insert({Type::kExec, Type::kFork, Type::kExit});
  const util::CapSet caps = own_caps();
  if (Status st = host_can_load(caps); !st) return st;
  libbpf_set_print(libbpf_print);
  auto tracefs = tracefs_for(cfg_);
  if (!tracefs) return tracefs.error();

  skel_ = vigil_bpf__open();
  if (!skel_) return Error::runtime(std::string("sensor: cannot open the BPF object: ") + std::strerror(errno));
  bool args_at_exit = false;
  if (Status st = configure(args_at_exit); !st) return st;
  const std::string cgroup_root = find_cgroup_root(caps);
  auto to_attach = choose_programs(*tracefs, args_at_exit);
  if (!to_attach) return to_attach.error();
  if (int err = vigil_bpf__load(skel_); err != 0) return load_refused(-err, caps);
  if (Status st = fill_open_tables(); !st) return st;
  if (Status st = attach_all(*to_attach, cgroup_root); !st) return st;

  if (Status st = open_ring_buffer(); !st) return st;
  if (Status st = open_wait_fd(); !st) return st;
  tb_ = TimeBase::now();
  if (cfg_.identify_exe) {
    ident_ = std::make_unique<ident::ExeIdentifier>(cfg_.ident);
    ident_->learn_host();
  }
  return {};
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
  int fd = bpf_map__fd(skel_->maps.gpu_usage);
  std::vector<vg_usage_key> keys;
  vg_usage_key key{}, next{};
  const void* prev = nullptr;
  while (keys.size() < (1u << 16) && bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  std::map<std::uint32_t, std::vector<event::GpuUsageData::Entry>> by_pid;
  for (const vg_usage_key& k : keys) {
    vg_usage_val val{};
    if (bpf_map_lookup_and_delete_elem(fd, &k, &val) != 0) {
      if (bpf_map_lookup_elem(fd, &k, &val) != 0) continue;
      bpf_map_delete_elem(fd, &k);
    }
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
const CgroupPrograms& Sensor::cgroup_programs() const { return impl_->cgroup_programs(); }

}  // namespace vigil::sensor
