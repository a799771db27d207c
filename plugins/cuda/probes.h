// The BPF side of the plugin (cuda.bpf.c) as one object: loads the programs,
// attaches them to one libcuda file at a time, and reads back call records,
// launch counts and drop counters. Not thread-safe: the source thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/cuda/cuda_probe.h"
#include "plugins/cuda/elf_symbols.h"

namespace vigil::cuda {

struct ProbeOptions {
  std::uint32_t ringbuf_bytes = 256 * 1024;
  std::uint32_t max_processes = 8192;
  bool multi_uprobe = true;   // try multi-uprobe links first
  bool batch_wakeups = true;  // wake the reader only when a quarter of the ring waits (read it with consume())
  // Watch mmap(PROT_EXEC) of files with these names (syscalls:sys_exit_mmap);
  // empty: no watch. At most CUDA_WATCH_NAMES names shorter than CUDA_WATCH_NAME_LEN.
  std::vector<std::string> watch_names;
};

// What attaching to one file did, entry point by entry point.
struct AttachResult {
  std::string error;                  // non-empty: nothing was attached (the file is not usable)
  std::vector<std::string> attached;  // entry-point names
  std::vector<std::string> missing;   // "name (why)"
};

struct LaunchCount {
  std::uint32_t pid;
  std::uint32_t lib;
  std::uint64_t total;   // kernel launches since the entry was created
  std::uint64_t graphs;  // graph launches since then
};

class Probes {
 public:
  // Loads the BPF programs (nothing is attached yet); nullptr with err on failure.
  static std::unique_ptr<Probes> load(const ProbeOptions& opt, std::string& err);
  ~Probes();
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;

  // Attaches the entry points in `calls` (cuda_call_id values) found in the
  // open file `fd`, as library slot `slot`. The file is probed by its inode:
  // every process that maps it is covered. Entry points absent from the file
  // are reported, not fatal.
  AttachResult attach(int fd, std::uint32_t slot, const std::vector<std::uint32_t>& calls);

  // Where the mmap watch sends the pids it sees (called from poll/consume).
  void on_mmap(std::function<void(std::uint32_t pid)> fn);
  // Whether the mmap watch is attached; why not, when it is not.
  bool watching_mmaps() const;
  const std::string& watch_error() const;

  // Waits up to timeout_ms for call records and hands each to `on_record`.
  // Returns the number handled, or a negative errno.
  int poll(int timeout_ms, const std::function<void(const cuda_call_rec&)>& on_record);

  // Hands every record waiting in the ring to `on_record` without waiting
  // (the records submitted without a wakeup). Returns the number, or a negative errno.
  int consume(const std::function<void(const cuda_call_rec&)>& on_record);

  // Every (process, library) launch counter, summed over CPUs, at most `max`.
  std::vector<LaunchCount> launch_counts(std::size_t max);
  // One counter, summed over CPUs; zeros when it is not there.
  LaunchCount launch_total(std::uint32_t pid, std::uint32_t lib);
  // Forgets a process's counter (it exited).
  void forget(std::uint32_t pid, std::uint32_t lib);

  // Drop totals (CUDA_DROP_RING, CUDA_DROP_LAUNCH_MAP), summed over CPUs.
  std::uint64_t drops(std::uint32_t reason);

  // How many uprobe links are held.
  std::size_t links() const;
  // Whether multi-uprobe links are in use (one link per library and program).
  bool multi() const;

 private:
  struct Impl;
  explicit Probes(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::cuda
