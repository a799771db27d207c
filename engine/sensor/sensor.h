// The live eBPF sensor: loads the programs of bpf/progs (one libbpf skeleton),
// attaches the hooks the ruleset needs, and turns ring-buffer records and the
// periodic GPU ioctl counts (a timer reading the usage map) into event::Event.
// It is a source::EventSource ("bpf"); the Xid lines of /dev/kmsg are another
// one (kmsg.h).
//
//   auto s = vigil::sensor::Sensor::open(cfg);
//   if (!s) { log(s.error().message); return 1; }
//   runner.add_source(std::move(*s));
//
// wait_fd() is an epoll fd over the ring buffer, the usage timer and a
// batch timer (kMaxBatchDelay): records below the wake-up threshold wake
// nobody, so the batch timer makes sure they are read within that delay.
//
// Thread-safety: a Sensor is used by one thread (the pipeline's); drops() may
// be called from the same thread between polls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/event/event.h"
#include "engine/policy/tables.h"
#include "engine/ident/identifier.h"
#include "engine/source/source.h"
#include "engine/util/result.h"

namespace vigil::sensor {

struct Config {
  std::set<event::Type> event_types;  // from the ruleset; exec/fork/exit always on
  // Non-device paths the rules ask about. A successful open is judged by the
  // file it opened: its resolved path against the prefixes (the kernel
  // compares the first components of the path walked from the file's dentry
  // up to the root, so a relative path, "..", a symlink or another path to
  // the same file is judged alike) and its name against the whole paths'
  // last components (user space compares the whole path). Given prefixes are
  // compared with the path as the process gave it. A failed open, or one the
  // walk cannot place, is judged by the path as given against every list.
  std::vector<std::string> open_path_prefixes;   // of the resolved path
  std::vector<std::string> open_write_prefixes;  // the same, for opens for writing only
  std::vector<std::string> open_given_prefixes;  // of the path as given
  std::vector<std::string> open_path_whole;
  std::vector<std::string> open_dirs;  // whole directories (fd.directory =), by the parent's name
  // Judged only where the path as given holds "../" (a traversal rule):
  // prefixes of the resolved path, and fragments of the opened file's name
  // (at most 16 bytes; past VG_CONTAINS_MAX of them every name counts).
  // A failed open is then sent where its given path holds "../".
  std::vector<std::string> open_traversal_prefixes;
  std::vector<std::string> open_traversal_fragments;
  // vigil's own files (configuration, rule files, capture file): added to
  // the whole paths, so that vigil.file sees write opens of them whatever
  // paths the rules name. Whole paths, not prefixes: a successful open is
  // judged by its file's name in kernel memory, and no open on the node pays
  // for a read of its path (a prefix would make every open read 8 bytes).
  // Paths of VG_PREFIX_LEN bytes or more are left out.
  std::vector<std::string> own_files;
  std::size_t ringbuf_bytes = 8u << 20;
  std::uint32_t payload_bytes = 256;  // at most 4096
  // Processes whose comm starts with this (its first 8 bytes; "" for none)
  // have every successful open sent: the NVIDIA Container Toolkit's hooks
  // (nvidia-ctk, nvidia-cdi-hook, nvidia-container-runtime-hook,
  // nvidia-container-cli), which run as host root in a container's context.
  // Other processes pay one load per open while none is running.
  std::string watch_comm_prefix = "nvidia-c";
  std::chrono::milliseconds usage_interval{10000};
  // Egress events (a rule wants evt.type = egress): the kernel's per
  // container and destination byte counts are reported every
  // egress_interval, each with what that destination got within
  // egress_window (window_bytes), for at most egress_max_destinations.
  std::chrono::milliseconds egress_interval{10000};
  std::chrono::seconds egress_window{300};
  std::size_t egress_max_destinations = 16384;
  // Syscall arguments: where the kernel has bpf_task_pt_regs (5.15+) the
  // sys_exit programs read them from the saved user registers and no
  // sys_enter program is attached (one tracepoint per traced syscall instead
  // of two). true forces the enter/exit pairs older kernels use (tests).
  bool enter_exit_pairs = false;
  // The kernel wakes the reader once this many bytes wait in the ring buffer
  // (0: for every event, about 1 us more on each traced syscall). Between
  // wake-ups wait_fd() turns readable every kMaxBatchDelay, which bounds how
  // late an event on a quiet node reaches the rules.
  std::size_t wakeup_bytes = 64u << 10;
  // Identify the program file of every exec (engine/ident: build-id, SHA-256,
  // known shell/interpreter), read once per distinct file through
  // /proc/<pid>/exe. Costs are in docs/performance.md.
  bool identify_exe = true;
  // Count a repeated NVIDIA ioctl (the same process, device and escape
  // number as the CPU's previous one) in a per-CPU slot instead of the usage
  // hash map; the slots move into the map before each usage report, so the
  // reports are the same. Used where the kernel can run a program on a chosen
  // CPU (5.10+). Costs are in docs/performance.md.
  bool ioctl_cache = true;
  ident::Options ident;
  // Prevention: the enforced rules' share the kernel judges (empty: nothing
  // is refused, and the prevention programs stay detached). The containers'
  // entries come later, through set_policy_cgroup().
  policy::Tables policy;
};

inline constexpr std::chrono::milliseconds kMaxBatchDelay{50};
// The open filter takes any number of paths (its tables are hash maps sized
// to them), each shorter than this.
inline constexpr std::size_t kOpenPathMaxLen = 64;  // bytes, NUL included (VG_PREFIX_LEN)

// Events lost, by reason. The kernel-side reasons are summed over CPUs.
struct DropCounters {
  std::uint64_t ringbuf_full = 0;   // the ring buffer had no room
  std::uint64_t truncated = 0;      // a string/argv/payload was cut to its bound (event still sent)
  std::uint64_t map_full = 0;       // a kernel map had no room (pending syscall, usage counter)
  std::uint64_t read_failed = 0;    // a kernel or user memory read failed
  std::uint64_t decode_failed = 0;  // a record user space could not decode
  std::uint64_t total() const { return ringbuf_full + truncated + map_full + read_failed + decode_failed; }
  // The events lost (truncated events were still delivered).
  std::uint64_t lost() const { return total() - truncated; }
  // "ringbuf_full=3 truncated=10" (the nonzero reasons; "none" when all are 0).
  std::string to_string() const;
};

// Whether the ruleset needs the cgroup socket programs, and why they were
// left out while the rest runs (no CAP_NET_ADMIN, no cgroup v2 mount; ""
// when they run).
struct CgroupPrograms {
  bool wanted = false;
  std::string off;
};

class Sensor final : public source::EventSource {
 public:
  // Loads and attaches everything. On failure an Error::runtime with one
  // clear line saying why (a capability missing, naming it; the program the
  // kernel refused; no BTF; a hook missing...).
  static Result<std::unique_ptr<Sensor>> open(const Config& cfg);

  // A reload's rules (the loop thread, between two polls): the open
  // filter's tables move to next's paths and the hooks next wants are
  // attached, those it no longer wants detached. Every program that can run
  // on this kernel is loaded at start, so no hook is missing and no event is
  // lost or doubled across the change: each event type has one program. An
  // error, with nothing changed, where cannot_update() says why.
  Status update(const Config& next);
  // Why update(next) would be refused ("" when it would not): a hook next
  // wants whose program the kernel refused at start, or an open-filter table
  // without room. A hook that cannot run here at all (a tracepoint this
  // kernel lacks, the cgroup programs without CAP_NET_ADMIN) is skipped, as
  // at start. Any thread may ask.
  std::string cannot_update(const Config& next) const;

  // source::EventSource. poll() does not block: it reads the timers, sends
  // the GPU usage report when due, and hands over up to `budget` ring-buffer
  // records, in order per CPU. A ring buffer that cannot be read fails the
  // source.
  std::string_view name() const override { return "bpf"; }
  int wait_fd() const override;
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  Health health() const override;
  std::string failure() const override;
  // Lost events by reason (truncated strings are not losses: counters() has them).
  source::Drops drops() const override;
  std::vector<std::string> attached() const override;  // hook names, for the "ready" log line
  // The ring buffer's fill, in bytes (any thread).
  std::optional<source::Backlog> backlog() const override;
  // The cgroup socket programs (connect/sendmsg/skb: network events).
  const CgroupPrograms& cgroup_programs() const;

  DropCounters counters() const;

  // Prevention (any thread): a container cgroup's entry (null: removed), a
  // destination learnt while running, a program file denied by identity
  // once identified, and the refusals per slot so far.
  Status set_policy_cgroup(std::uint64_t cgroup_id, const policy::CgroupEntry* e);
  Status add_policy_net(const policy::NetEntry& e);
  Status add_policy_exe(const policy::ExeEntry& e);
  std::vector<std::uint64_t> policy_refusals() const;

  ~Sensor() override;  // detaches everything
  Sensor(const Sensor&) = delete;
  Sensor& operator=(const Sensor&) = delete;

  class Impl;

 private:
  explicit Sensor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::sensor
