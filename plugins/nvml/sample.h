// What one NVML sample of one device holds: the device's identity and totals
// and its processes. Plain data, filled by the Sampler, encoded into events by
// record.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::nvml {

// A GPU's ECC mode as nvmlDeviceGetEccMode tells it. The values are the
// record's bytes (record.h): do not renumber.
enum class EccMode : std::uint8_t {
  kUnknown = 0,      // not asked (an NVML without the entry point), or the query failed
  kOff = 1,          // NVML_FEATURE_DISABLED
  kOn = 2,           // NVML_FEATURE_ENABLED
  kUnsupported = 3,  // NVML_ERROR_NOT_SUPPORTED: the GPU has no ECC memory
};
inline constexpr std::uint8_t kEccModeMax = 3;

struct ProcessSample {
  std::uint32_t pid = 0;
  bool has_memory = false;        // NVML reported usedGpuMemory (not "not available")
  std::uint64_t memory_used = 0;  // bytes of GPU memory the process holds
  bool has_util = false;          // the device's utilisation could be read
  std::uint32_t sm_util = 0;      // percent, mean over NVML's samples since the last sample
  std::uint32_t mem_util = 0;     // percent, same window
};

struct DeviceSample {
  std::uint32_t index = 0;
  bool has_minor = false;
  std::uint32_t minor = 0;  // /dev/nvidia<minor>
  std::string uuid;         // "GPU-..." ; empty when NVML did not give one
  std::string pci_bus_id;   // "00000000:3B:00.0"; empty when unknown
  bool has_memory = false;
  std::uint64_t memory_total = 0;
  std::uint64_t memory_used = 0;
  bool has_util = false;
  std::uint32_t sm_util = 0;            // sum over the device's processes, at most 100
  std::uint32_t mem_util = 0;           // same
  std::uint32_t process_count = 0;      // distinct processes seen, reported or not
  std::uint32_t processes_dropped = 0;  // not reported: over max_processes or unreadable
  EccMode ecc_current = EccMode::kUnknown;
  EccMode ecc_pending = EccMode::kUnknown;  // the mode after the GPU's next reboot
  std::uint32_t sample_devices = 0;         // devices in the sample this one belongs to; 0 not known
  std::vector<ProcessSample> processes;     // sorted by pid
};

}  // namespace vigil::nvml
