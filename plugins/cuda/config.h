// The plugin's init_config (a JSON object; every key optional):
//
//   interval        "1s"     how often a process's kernel launches are summed into one event
//   flush_interval  "100ms"  call records wait at most this long in the ring buffer before the
//                            plugin reads them (sooner when a quarter of it is full); "0ms":
//                            every record wakes the plugin at once (costs each call more)
//   scan_interval   "2s"     how often /proc/*/maps is scanned for libcuda files not yet probed
//   scan_max_pids   1024     processes whose maps one scan reads (the next scan goes on from there)
//   max_libraries   32       distinct libcuda files (device + inode) probed at most
//   library_names   ["libcuda.so"]  a mapped file is a candidate when its name is one of these
//                                   or one of these followed by "." (libcuda.so.1, libcuda.so.550.54)
//   library_paths   []       files probed at start whether or not a process maps them yet
//   probes          ["context", "module", "memory", "launch"]  entry-point groups to attach
//   ringbuf_bytes   262144   ring buffer for call records (rounded up to a power of two)
//   max_processes   8192     processes whose launches the kernel counts at once
//   max_pending     16384    events waiting for vigil to take them (more are dropped and counted)
//   proc_root       "/proc"  where the host's /proc is mounted
//   watch_mmap      true     read a process's maps as soon as it maps a file named like a library
//                            name with PROT_EXEC (syscalls:sys_exit_mmap), not at the next scan
//   multi_uprobe    true     one multi-uprobe link per library and program where the kernel
//                            has them (6.6+); false: one link per entry point
//
// Durations are strings with a unit: "250ms", "1s", "2m". Unknown keys are an
// error (a typo must not silently leave a default in place).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/cuda/calls.h"

namespace vigil::cuda {

struct Config {
  std::uint32_t interval_ms = 1000;
  std::uint32_t flush_interval_ms = 100;
  std::uint32_t scan_interval_ms = 2000;
  std::uint32_t scan_max_pids = 1024;
  std::uint32_t max_libraries = 32;
  std::vector<std::string> library_names{"libcuda.so"};
  std::vector<std::string> library_paths;
  std::uint32_t categories = 0xf;  // bit per Category
  std::uint32_t ringbuf_bytes = 256 * 1024;
  std::uint32_t max_processes = 8192;
  std::uint32_t max_pending = 16384;
  std::string proc_root = "/proc";
  bool multi_uprobe = true;
  bool watch_mmap = true;

  bool wants(Category c) const { return (categories >> static_cast<unsigned>(c)) & 1u; }
};

// Parses a duration ("250ms", "1s", "2m"); false when malformed.
bool parse_duration_ms(std::string_view s, std::uint64_t& ms);

// Parses init_config; on failure returns false with a one-line reason in err.
bool parse_config(std::string_view json, Config& out, std::string& err);

}  // namespace vigil::cuda
