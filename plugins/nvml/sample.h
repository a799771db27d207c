// What one NVML sample of one device holds: the device's identity and totals
// and its processes. Plain data, filled by the Sampler, encoded into events by
// record.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::nvml {

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
  std::uint32_t sm_util = 0;             // sum over the device's processes, at most 100
  std::uint32_t mem_util = 0;            // same
  std::uint32_t process_count = 0;       // distinct processes seen, reported or not
  std::uint32_t processes_dropped = 0;   // not reported: over max_processes or unreadable
  std::vector<ProcessSample> processes;  // sorted by pid
};

}  // namespace vigil::nvml
