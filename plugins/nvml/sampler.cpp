#include "sampler.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace vigil::nvml {

namespace {

constexpr std::size_t kMaxWarnings = 256;
// The highest GPU minor the driver assigns (/dev/nvidia0 .. /dev/nvidia247).
constexpr unsigned kMaxGpuMinor = 247;

// The string NVML wrote into buf[0..size): it must end within the buffer and
// hold printable ASCII only. Empty when not.
std::string terminated_printable(const char* buf, std::size_t size) {
  const void* nul = std::memchr(buf, '\0', size);
  if (nul == nullptr) return {};
  std::size_t len = static_cast<std::size_t>(static_cast<const char*>(nul) - buf);
  for (std::size_t i = 0; i < len; ++i) {
    if (buf[i] < 0x20 || buf[i] > 0x7e) return {};
  }
  return std::string(buf, len);
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace

std::optional<unsigned> detect_process_stride(const std::vector<std::uint8_t>& buf, unsigned count) {
  std::size_t written = buf.size();
  while (written > 0 && buf[written - 1] == kProcessBufferFill) --written;
  if (count == 0) return std::nullopt;
  for (unsigned stride : {16u, 24u, 32u}) {
    std::size_t last_start = static_cast<std::size_t>(count - 1) * stride;
    if (written > last_start && written <= last_start + stride && last_start + stride <= buf.size()) {
      return stride;
    }
  }
  return std::nullopt;
}

unsigned long long merge_processes(const std::vector<ComputeEntry>& compute,
                                   const std::vector<api::ProcessUtilizationSample>& samples, bool util_ok,
                                   unsigned long long last_seen, std::uint32_t max_processes, DeviceSample& out) {
  struct Entry {
    bool has_memory = false;
    std::uint64_t memory = 0;
    std::uint64_t sm_sum = 0;
    std::uint64_t mem_sum = 0;
    std::uint64_t n = 0;
  };
  std::map<std::uint32_t, Entry> by_pid;
  for (const ComputeEntry& c : compute) {
    if (c.pid == 0 || c.pid > kMaxPid) continue;
    Entry& e = by_pid[c.pid];
    // A process listed twice (one entry per MIG instance) holds the sum.
    if (c.has_memory) {
      e.memory = saturating_add(e.memory, c.memory_used);
      e.has_memory = true;
    }
  }
  unsigned long long newest = last_seen;
  if (util_ok) {
    for (const auto& s : samples) {
      if (s.pid == 0 || s.pid > kMaxPid || s.time_stamp <= last_seen || s.sm_util > 100 || s.mem_util > 100) continue;
      Entry& e = by_pid[s.pid];
      e.sm_sum += s.sm_util;
      e.mem_sum += s.mem_util;
      ++e.n;
      newest = std::max(newest, s.time_stamp);
    }
  }
  out.processes.clear();
  out.has_util = util_ok;
  std::uint64_t sm_total = 0;
  std::uint64_t mem_total = 0;
  for (const auto& [pid, e] : by_pid) {
    ProcessSample p;
    p.pid = pid;
    p.has_memory = e.has_memory;
    p.memory_used = e.memory;
    p.has_util = util_ok;
    if (e.n > 0) {
      p.sm_util = static_cast<std::uint32_t>((e.sm_sum + e.n / 2) / e.n);
      p.mem_util = static_cast<std::uint32_t>((e.mem_sum + e.n / 2) / e.n);
    }
    sm_total += p.sm_util;
    mem_total += p.mem_util;
    if (out.processes.size() < max_processes) out.processes.push_back(p);
  }
  out.sm_util = util_ok ? static_cast<std::uint32_t>(std::min<std::uint64_t>(sm_total, 100)) : 0;
  out.mem_util = util_ok ? static_cast<std::uint32_t>(std::min<std::uint64_t>(mem_total, 100)) : 0;
  out.process_count = static_cast<std::uint32_t>(by_pid.size());
  out.processes_dropped = static_cast<std::uint32_t>(by_pid.size() - out.processes.size());
  return newest;
}

Sampler::Sampler(const NvmlLibrary& lib, std::uint32_t max_processes, LogFn log)
    : lib_(lib), max_processes_(max_processes), log_(std::move(log)) {}

void Sampler::warn_once(const std::string& msg) {
  if (warned_.count(msg) != 0) return;
  if (warned_.size() >= kMaxWarnings) warned_.clear();
  warned_.insert(msg);
  if (log_) log_(LogLevel::kWarn, msg);
}

std::vector<DeviceSample> Sampler::sample() {
  std::vector<DeviceSample> devices;
  const NvmlFunctions& fn = lib_.fn();
  unsigned count = 0;
  api::Return rc = fn.device_get_count(&count);
  if (rc != api::kSuccess) {
    warn_once("nvmlDeviceGetCount_v2 failed: " + lib_.error(rc));
    return devices;
  }
  if (count > kMaxDevices) {
    warn_once("NVML reports " + std::to_string(count) + " devices; sampling the first " + std::to_string(kMaxDevices));
    count = kMaxDevices;
  }
  std::map<std::string, unsigned long long> seen;
  for (unsigned i = 0; i < count; ++i) {
    api::Device dev = nullptr;
    rc = fn.device_get_handle_by_index(i, &dev);
    if (rc != api::kSuccess) {
      warn_once("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ") failed: " + lib_.error(rc) +
                "; device left out");
      continue;
    }
    DeviceSample d;
    d.index = i;
    sample_device(i, dev, d);
    std::string key = d.uuid.empty() ? "#" + std::to_string(i) : d.uuid;
    auto it = last_seen_.find(key);
    unsigned long long last = it == last_seen_.end() ? 0 : it->second;

    std::vector<ComputeEntry> compute;
    std::uint64_t too_many = 0;
    bool garbled = false;
    rc = read_compute(dev, compute, too_many, garbled);
    if (rc != api::kSuccess) {
      if (garbled) {
        warn_once("device " + std::to_string(i) +
                  ": nvmlDeviceGetComputeRunningProcesses_v3 returned a count that does not "
                  "match the entries it wrote; its process list is not used");
      } else if (too_many > 0) {
        warn_once("device " + std::to_string(i) + ": NVML lists " + std::to_string(too_many) +
                  " compute processes, more than " + std::to_string(kMaxComputeEntries) +
                  "; its process list is not read");
      } else {
        warn_once("device " + std::to_string(i) +
                  ": nvmlDeviceGetComputeRunningProcesses_v3 failed: " + lib_.error(rc));
      }
      compute.clear();
    }
    std::vector<api::ProcessUtilizationSample> util;
    api::Return urc = read_utilization(dev, last, util);
    bool util_ok = urc == api::kSuccess;
    if (!util_ok && urc != api::kErrorNotSupported) {
      warn_once("device " + std::to_string(i) + ": nvmlDeviceGetProcessUtilization failed: " + lib_.error(urc));
    }
    seen[key] = merge_processes(compute, util, util_ok, last, max_processes_, d);
    if (too_many > 0) {
      std::uint64_t n = std::min<std::uint64_t>(too_many, std::numeric_limits<std::uint32_t>::max());
      d.process_count = std::max(d.process_count, static_cast<std::uint32_t>(n));
      d.processes_dropped = d.process_count - static_cast<std::uint32_t>(d.processes.size());
    }
    devices.push_back(std::move(d));
  }
  last_seen_ = std::move(seen);  // devices gone are forgotten
  for (DeviceSample& d : devices) d.sample_devices = static_cast<std::uint32_t>(devices.size());
  return devices;
}

void Sampler::sample_device(std::uint32_t index, api::Device dev, DeviceSample& d) {
  const NvmlFunctions& fn = lib_.fn();
  std::string where = "device " + std::to_string(index) + ": ";

  char uuid[api::kUuidBufferSize] = {};
  api::Return rc = fn.device_get_uuid(dev, uuid, sizeof uuid);
  if (rc == api::kSuccess) {
    d.uuid = terminated_printable(uuid, sizeof uuid);
    if (d.uuid.empty()) warn_once(where + "nvmlDeviceGetUUID returned an unterminated or unprintable UUID");
  } else {
    warn_once(where + "nvmlDeviceGetUUID failed: " + lib_.error(rc));
  }

  unsigned minor = 0;
  rc = fn.device_get_minor_number(dev, &minor);
  if (rc == api::kSuccess && minor <= kMaxGpuMinor) {
    d.has_minor = true;
    d.minor = minor;
  } else if (rc == api::kSuccess) {
    warn_once(where + "nvmlDeviceGetMinorNumber returned " + std::to_string(minor) + ", not a GPU minor (0-247)");
  } else {
    warn_once(where + "nvmlDeviceGetMinorNumber failed: " + lib_.error(rc));
  }

  // Room past the structure in case a library writes a longer one.
  struct {
    api::PciInfo info;
    char slack[192];
  } pci = {};
  rc = fn.device_get_pci_info(dev, &pci.info);
  if (rc == api::kSuccess) {
    d.pci_bus_id = terminated_printable(pci.info.bus_id, sizeof pci.info.bus_id);
    if (d.pci_bus_id.empty())
      warn_once(where + "nvmlDeviceGetPciInfo_v3 returned an unterminated or unprintable bus id");
  } else {
    warn_once(where + "nvmlDeviceGetPciInfo_v3 failed: " + lib_.error(rc));
  }

  read_ecc(where, dev, d);

  api::Memory mem = {};
  rc = fn.device_get_memory_info(dev, &mem);
  if (rc == api::kSuccess && mem.used <= mem.total) {
    d.has_memory = true;
    d.memory_total = mem.total;
    d.memory_used = mem.used;
  } else if (rc == api::kSuccess) {
    warn_once(where + "nvmlDeviceGetMemoryInfo reports more memory used than the device has");
  } else {
    warn_once(where + "nvmlDeviceGetMemoryInfo failed: " + lib_.error(rc));
  }
}

EccMode ecc_mode_of(api::EnableState s) {
  if (s == api::kFeatureEnabled) return EccMode::kOn;
  if (s == api::kFeatureDisabled) return EccMode::kOff;
  return EccMode::kUnknown;
}

void Sampler::read_ecc(const std::string& where, api::Device dev, DeviceSample& d) {
  const NvmlFunctions& fn = lib_.fn();
  if (fn.device_get_ecc_mode == nullptr) {
    warn_once(lib_.path() + " has no nvmlDeviceGetEccMode; the GPUs' ECC mode is unknown");
    return;
  }
  // Values outside the enum show as unknown, not as a mode.
  api::EnableState current = -1;
  api::EnableState pending = -1;
  api::Return rc = fn.device_get_ecc_mode(dev, &current, &pending);
  if (rc == api::kErrorNotSupported) {
    d.ecc_current = d.ecc_pending = EccMode::kUnsupported;
  } else if (rc == api::kSuccess) {
    d.ecc_current = ecc_mode_of(current);
    d.ecc_pending = ecc_mode_of(pending);
    if (d.ecc_current == EccMode::kUnknown || d.ecc_pending == EccMode::kUnknown)
      warn_once(where + "nvmlDeviceGetEccMode returned a mode that is neither enabled nor disabled");
  } else {
    warn_once(where + "nvmlDeviceGetEccMode failed: " + lib_.error(rc));
  }
}

api::Return Sampler::read_compute(api::Device dev, std::vector<ComputeEntry>& out, std::uint64_t& too_many,
                                  bool& garbled) {
  const NvmlFunctions& fn = lib_.fn();
  too_many = 0;
  garbled = false;
  out.clear();
  api::Return rc = api::kErrorInsufficientSize;
  for (int attempt = 0; attempt < kMaxSizeRetries; ++attempt) {
    unsigned capacity = proc_capacity_;
    proc_buf_.assign(static_cast<std::size_t>(capacity) * api::kProcessInfoMaxStride, kProcessBufferFill);
    unsigned count = capacity;
    rc = fn.device_get_compute_running_processes(dev, &count, proc_buf_.data());
    if (rc == api::kErrorInsufficientSize) {
      // A count that does not grow is not an answer; grow anyway, bounded.
      std::uint64_t want =
          count > capacity ? static_cast<std::uint64_t>(count) + 8 : static_cast<std::uint64_t>(capacity) * 2;
      if (want > kMaxComputeEntries) {
        if (count > kMaxComputeEntries) {
          too_many = count;
          return rc;
        }
        want = kMaxComputeEntries;
      }
      if (want <= capacity) return rc;  // already at the bound
      proc_capacity_ = static_cast<unsigned>(want);
      continue;
    }
    if (rc != api::kSuccess) return rc;
    if (count == 0) return rc;
    auto stride = count <= capacity ? detect_process_stride(proc_buf_, count) : std::nullopt;
    if (!stride) {
      garbled = true;
      return api::kErrorUnknown;
    }
    out.reserve(count);
    for (unsigned i = 0; i < count; ++i) {
      api::ProcessInfoPrefix p;
      std::memcpy(&p, proc_buf_.data() + static_cast<std::size_t>(i) * *stride, sizeof p);
      ComputeEntry e;
      e.pid = p.pid;
      e.has_memory = p.used_gpu_memory != api::kValueNotAvailable;
      e.memory_used = e.has_memory ? p.used_gpu_memory : 0;
      out.push_back(e);
    }
    return rc;
  }
  return rc;
}

api::Return Sampler::read_utilization(api::Device dev, unsigned long long last_seen,
                                      std::vector<api::ProcessUtilizationSample>& out) {
  const NvmlFunctions& fn = lib_.fn();
  out.clear();
  unsigned count = 0;
  api::Return rc = fn.device_get_process_utilization(dev, nullptr, &count, last_seen);
  if (rc == api::kErrorNotFound) return api::kSuccess;  // no samples since last_seen
  if (rc != api::kSuccess && rc != api::kErrorInsufficientSize) return rc;
  for (int attempt = 0; attempt < kMaxSizeRetries; ++attempt) {
    if (count == 0) return api::kSuccess;
    if (count > kMaxUtilSamples) count = kMaxUtilSamples;
    unsigned capacity = count;
    out.assign(capacity, api::ProcessUtilizationSample{});
    unsigned n = capacity;
    rc = fn.device_get_process_utilization(dev, out.data(), &n, last_seen);
    if (rc == api::kErrorInsufficientSize) {
      if (capacity >= kMaxUtilSamples) break;
      count = n > capacity ? n : capacity * 2;
      continue;
    }
    if (rc == api::kErrorNotFound) {
      out.clear();
      return api::kSuccess;
    }
    if (rc != api::kSuccess) {
      out.clear();
      return rc;
    }
    out.resize(std::min(n, capacity));  // a count past the buffer is garbage
    return rc;
  }
  out.clear();
  return api::kErrorInsufficientSize;
}

}  // namespace vigil::nvml
