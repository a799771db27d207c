// The live eBPF sensor: loads the programs of bpf/progs (one libbpf skeleton),
// attaches the hooks the ruleset needs, and turns ring-buffer records, Xid
// lines from /dev/kmsg and the periodic GPU ioctl counts into event::Event.
//
//   auto s = vigil::sensor::Sensor::open(cfg);
//   if (!s) { log(s.error().message); return 1; }
//   while (running) (*s)->poll(100, [&](vigil::event::Event&& ev) { ... });
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
#include "engine/util/result.h"

namespace vigil::sensor {

struct Config {
  std::set<event::Type> event_types;            // from the ruleset; exec/fork/exit always on
  // Non-device paths the rules ask about: prefixes of the path, and whole
  // paths matched against the resolved path of a successful open (a failed
  // open is matched by the path as given, against both lists).
  std::vector<std::string> open_path_prefixes;
  std::vector<std::string> open_path_whole;
  std::size_t ringbuf_bytes = 8u << 20;
  std::uint32_t payload_bytes = 256;            // at most 4096
  std::chrono::milliseconds usage_interval{10000};
  std::string kmsg_path = "/dev/kmsg";          // tests may point elsewhere
  // Syscall arguments: where the kernel has bpf_task_pt_regs (5.15+) the
  // sys_exit programs read them from the saved user registers and no
  // sys_enter program is attached (one tracepoint per traced syscall instead
  // of two). true forces the enter/exit pairs older kernels use (tests).
  bool enter_exit_pairs = false;
  // The kernel wakes the reader once this many bytes wait in the ring buffer
  // (0: for every event, about 1 us more on each traced syscall). Between
  // wake-ups poll() drains at least every kMaxBatchDelay, which bounds how
  // late an event on a quiet node reaches the rules.
  std::size_t wakeup_bytes = 64u << 10;
};

inline constexpr std::chrono::milliseconds kMaxBatchDelay{50};

// Events lost, by reason. The kernel-side reasons are summed over CPUs.
struct DropCounters {
  std::uint64_t ringbuf_full = 0;   // the ring buffer had no room
  std::uint64_t truncated = 0;      // a string/argv/payload was cut to its bound (event still sent)
  std::uint64_t map_full = 0;       // a kernel map had no room (pending syscall, usage counter)
  std::uint64_t read_failed = 0;    // a kernel or user memory read failed
  std::uint64_t decode_failed = 0;  // a record user space could not decode
  std::uint64_t kmsg_lost = 0;      // /dev/kmsg records overwritten before they were read
  std::uint64_t total() const {
    return ringbuf_full + truncated + map_full + read_failed + decode_failed + kmsg_lost;
  }
  // "ringbuf_full=3 truncated=10" (the nonzero reasons; "none" when all are 0).
  std::string to_string() const;
};

class Sensor {
 public:
  // Loads and attaches everything. On failure an Error::runtime with one
  // clear line saying why (not root / no CAP_BPF, no BTF, a hook missing...).
  static Result<std::unique_ptr<Sensor>> open(const Config& cfg);

  // Waits up to timeout_ms (at most kMaxBatchDelay when wakeup_bytes > 0)
  // for events (ring buffer, kmsg, usage timer) and
  // calls cb for each decoded event, in order per CPU. Returns the number of
  // events or a negative errno.
  int poll(int timeout_ms, const std::function<void(event::Event&&)>& cb);

  DropCounters drops() const;
  std::vector<std::string> attached() const;  // hook names, for the "ready" log line

  ~Sensor();  // detaches everything
  Sensor(const Sensor&) = delete;
  Sensor& operator=(const Sensor&) = delete;

  class Impl;

 private:
  explicit Sensor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::sensor
