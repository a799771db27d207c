// Sampler: one NVML sample of every device (identity, ECC mode, memory,
// compute processes, per-process utilisation since the previous sample).
//
// Everything NVML returns is treated as untrusted: counts are bounded, the
// NVML_ERROR_INSUFFICIENT_SIZE retry loops stop after a few tries, strings
// must be terminated and printable, percentages above 100 are dropped. A
// failed query leaves its part of the sample unknown and is logged once per
// distinct message; it never ends the source.
//
// Owned by the plugin state, used from the source thread only (not
// thread-safe). `lib` must outlive it.
#pragma once

#include "nvml_library.h"
#include "sample.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vigil::nvml {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
using LogFn = std::function<void(LogLevel, const std::string&)>;

// One compute process as nvmlDeviceGetComputeRunningProcesses_v3 listed it.
struct ComputeEntry {
  std::uint32_t pid = 0;
  bool has_memory = false;
  std::uint64_t memory_used = 0;
};

// Joins a device's compute processes and its utilisation samples (those newer
// than `last_seen`, percentages at most 100) into out.processes (by pid, at
// most max_processes) and the device totals; returns the newest sample time
// stamp used (last_seen when none). `util_ok`: the utilisation query worked
// (its absence of samples then means 0%).
unsigned long long merge_processes(const std::vector<ComputeEntry>& compute,
                                   const std::vector<api::ProcessUtilizationSample>& samples, bool util_ok,
                                   unsigned long long last_seen, std::uint32_t max_processes, DeviceSample& out);

// The element size NVML used for the `count` process entries it wrote into
// `buf` (all of it pre-filled with kProcessBufferFill, room for at least
// count * 32 bytes): 16,
// 24 or 32. Drivers differ (see nvml_api.h); the extent of the bytes NVML
// wrote tells which, since count entries of stride s end in
// ((count - 1) * s, count * s]. nullopt when no stride fits: the count is
// not the one NVML wrote entries for.
inline constexpr std::uint8_t kProcessBufferFill = 0x5a;
std::optional<unsigned> detect_process_stride(const std::vector<std::uint8_t>& buf, unsigned count);

// The ECC mode an nvmlEnableState_t names; unknown for any other value.
EccMode ecc_mode_of(api::EnableState s);

// Linux's largest possible pid (PID_MAX_LIMIT); NVML pids above it are garbage.
inline constexpr std::uint32_t kMaxPid = 4194304;

class Sampler {
 public:
  static constexpr std::uint32_t kMaxDevices = 64;
  static constexpr std::uint32_t kMaxComputeEntries = 16384;
  static constexpr std::uint32_t kMaxUtilSamples = 16384;
  static constexpr int kMaxSizeRetries = 4;

  Sampler(const NvmlLibrary& lib, std::uint32_t max_processes, LogFn log);

  // Samples every device NVML lists (at most kMaxDevices). A device whose
  // handle cannot be had is left out.
  std::vector<DeviceSample> sample();

 private:
  void sample_device(std::uint32_t index, api::Device dev, DeviceSample& out);
  // The device's current and pending ECC mode (unknown when the query fails).
  void read_ecc(const std::string& where, api::Device dev, DeviceSample& out);
  // kSuccess and the list; or NVML's error, with too_many set when the list
  // was longer than kMaxComputeEntries and `garbled` when its count did not
  // match what NVML wrote.
  api::Return read_compute(api::Device dev, std::vector<ComputeEntry>& out, std::uint64_t& too_many, bool& garbled);
  api::Return read_utilization(api::Device dev, unsigned long long last_seen,
                               std::vector<api::ProcessUtilizationSample>& out);
  void warn_once(const std::string& msg);

  const NvmlLibrary& lib_;
  std::uint32_t max_processes_;
  LogFn log_;
  std::map<std::string, unsigned long long> last_seen_;  // device key -> newest sample used
  std::set<std::string> warned_;                         // bounded (kMaxWarnings)
  std::vector<std::uint8_t> proc_buf_;
  unsigned proc_capacity_ = 32;
};

}  // namespace vigil::nvml
