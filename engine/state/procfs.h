// Reading processes from a /proc tree (the real one, or a fake one in tests).
// Everything read is treated as hostile: every file read is bounded, every
// number parsed is checked, and a process that vanishes mid-read gives
// nullopt rather than a half record.
//
// Thread-safety: functions are reentrant; they touch only the paths given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state/model.h"

namespace vigil::state {

constexpr std::size_t kMaxCmdlineBytes = 4096;  // argv kept from /proc/<pid>/cmdline
constexpr std::size_t kMaxArgs = 256;
constexpr std::size_t kMaxFdsScanned = 4096;  // /proc/<pid>/fd entries looked at
constexpr std::size_t kMaxGpuFds = 64;        // NVIDIA fds kept per process

// Reads at most max bytes of a file. nullopt when it cannot be opened.
// *truncated (optional) tells whether the file was longer.
std::optional<std::string> read_file_bounded(const std::string& path, std::size_t max, bool* truncated = nullptr);
// readlink() into a string; nullopt on error.
std::optional<std::string> read_link(const std::string& path);

// The inode in a namespace link text "net:[4026531840]", 0 if malformed.
std::uint32_t parse_ns_link(std::string_view link);

// Parsed /proc/<pid>/stat fields vigil uses.
struct ProcStat {
  std::string comm;
  std::uint32_t ppid = 0;
  std::uint32_t tty = 0;
  std::uint32_t session = 0;      // field 6
  std::uint64_t start_ticks = 0;  // field 22, clock ticks after boot
};
std::optional<ProcStat> parse_proc_stat(std::string_view text);

// Parsed /proc/<pid>/status fields vigil uses.
struct ProcStatus {
  std::uint32_t ppid = 0;
  std::uint32_t uid = 0;   // real
  std::uint32_t gid = 0;   // real
  std::uint32_t vpid = 0;  // last NSpid entry
  std::uint32_t tgid = 0;
  std::uint64_t cap_inheritable = 0;  // CapInh, CapPrm, CapEff (hex)
  std::uint64_t cap_permitted = 0;
  std::uint64_t cap_effective = 0;
  std::uint32_t vpgid = 0;  // last NSpgid entry
};
std::optional<ProcStatus> parse_proc_status(std::string_view text);

// argv from a NUL-separated cmdline. Arguments are bounded by the caller's
// read; the last one may be cut.
std::vector<std::string> parse_cmdline(std::string_view text);

// What read_process() needs to know beyond the proc root.
struct ProcReadOptions {
  std::string cgroup_root;         // cgroup v2 mount, to turn a path into a cgroup id ("" = skip)
  NvidiaInfo nvidia;               // to recognise NVIDIA fds
  std::uint64_t boot_time_ns = 0;  // btime of /proc/stat, for start_ts_ns (0 = unknown)
  long clock_ticks = 100;
};

struct ProcRecord {
  Process proc;
  std::string cgroup_path;  // the v2 path, "" when unknown
};

// Reads one process. nullopt when it does not exist (or vanished mid-read).
std::optional<ProcRecord> read_process(const std::string& proc_root, std::uint32_t pid, const ProcReadOptions& opt);

// The numeric entries of proc_root (pids), at most max of them, sorted.
std::vector<std::uint32_t> list_pids(const std::string& proc_root, std::size_t max);

// btime from the text of /proc/stat, as ns since the epoch (0 if absent).
std::uint64_t parse_boot_time_ns(std::string_view proc_stat);

}  // namespace vigil::state
