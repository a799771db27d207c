// The plugin's work, apart from the C ABI: finds libcuda files in processes'
// maps, attaches the probes once per distinct file, and turns call records and
// launch counts into events. One thread (vigil's source thread) drives it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "plugins/cuda/config.h"
#include "plugins/cuda/probes.h"
#include "plugins/cuda/proc_maps.h"

namespace vigil::cuda {

struct OutEvent {
  std::uint64_t ts_ns = 0;  // wall clock
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  const char* name = "";  // "cuda_call", "cuda_launches", "cuda_library"
  std::string data;       // wire.h
};

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
using LogFn = std::function<void(LogLevel, const std::string&)>;

class CudaSource {
 public:
  static std::unique_ptr<CudaSource> create(const Config& cfg, LogFn log, std::string& err);
  ~CudaSource();

  // Appends up to `max` events to `out`, waiting at most timeout_ms for the
  // first one; scans and launch summaries run when they are due.
  void next(std::uint32_t max, std::uint32_t timeout_ms, std::vector<OutEvent>& out);

  struct ScanStats {
    std::uint32_t pids_listed = 0;
    std::uint32_t maps_read = 0;
    std::uint32_t libraries_attached = 0;
  };
  // One scan pass (also run by next() every scan_interval).
  ScanStats scan();
  // Emits one cuda_launches event per (process, library) that launched since
  // the last summary (also run by next() every interval).
  void summarize();

  std::size_t libraries() const { return libs_.size(); }

 private:
  struct Library {
    std::string path;  // as the process that first mapped it names it
    int fd = -1;
    std::uint32_t probes = 0;
  };
  using FileKey = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;  // dev major, minor, inode

  CudaSource(const Config& cfg, LogFn log);
  // Reads one process's maps and probes the new libcuda files in it; false
  // when the maps could not be read.
  bool scan_pid(std::uint32_t pid, std::uint32_t& new_files, ScanStats& stats);
  void try_library(std::uint32_t pid, const MapsEntry& m);
  void add_library(int fd, const FileKey& key, const std::string& shown_path, std::uint32_t pid);
  void on_record(const cuda_call_rec& r);
  void push(OutEvent ev);
  void report_drops();
  std::uint64_t wall_now() const;
  bool alive(std::uint32_t pid) const;

  Config cfg_;
  LogFn log_;
  std::unique_ptr<Probes> probes_;
  std::vector<std::uint32_t> calls_;  // the entry points to attach
  std::vector<Library> libs_;         // index = the slot in probe cookies
  std::map<FileKey, int> files_;      // slot, or -1: not usable (bounded by kMaxRejected)
  std::set<std::uint32_t> covered_;   // pids that map a probed file: not rescanned
  std::uint32_t cursor_ = 0;          // the last pid a scan read
  std::set<std::uint32_t> urgent_;    // pids the mmap watch reported (bounded by kMaxUrgent)
  // (pid, library) -> the kernel and graph launch totals at the last summary.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>> launch_seen_;
  std::deque<OutEvent> pending_;
  std::uint64_t queue_drops_ = 0;
  std::uint64_t reported_drops_[4] = {0, 0, 0, 0};
  std::int64_t mono_to_wall_ns_ = 0;
  std::uint64_t next_flush_ms_ = 0;
  std::uint64_t next_scan_ms_ = 0;
  std::uint64_t next_summary_ms_ = 0;
  std::uint64_t last_summary_ms_ = 0;
  bool limit_logged_ = false;
};

}  // namespace vigil::cuda
