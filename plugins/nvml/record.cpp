#include "record.h"

#include <cstring>

namespace vigil::nvml {

namespace {

constexpr std::size_t kUuidOffset = 72;
constexpr std::size_t kUuidSize = 96;
constexpr std::size_t kPciOffset = 168;
constexpr std::size_t kPciSize = 32;
constexpr std::size_t kEccOffset = 200;
constexpr std::size_t kSampleDevicesOffset = 204;

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
void put32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_string(std::uint8_t* p, std::size_t size, const std::string& s) {
  std::size_t n = s.size() < size ? s.size() : size - 1;  // always NUL-terminated
  std::memcpy(p, s.data(), n);
}

// A NUL-padded printable string of a field of `size` bytes: the bytes after
// the first NUL must all be NUL too.
bool get_string(const std::uint8_t* p, std::size_t size, std::string& out) {
  std::size_t len = 0;
  while (len < size && p[len] != 0) {
    if (p[len] < 0x20 || p[len] > 0x7e) return false;
    ++len;
  }
  if (len == size) return false;
  for (std::size_t i = len; i < size; ++i) {
    if (p[i] != 0) return false;
  }
  out.assign(reinterpret_cast<const char*>(p), len);
  return true;
}

}  // namespace

RecordBytes encode(const DeviceSample& d, const ProcessSample* proc) {
  RecordBytes b{};
  std::uint8_t* p = b.data();
  std::uint32_t flags = 0;
  if (d.has_minor) flags |= kFlagDeviceMinor;
  if (d.has_memory) flags |= kFlagDeviceMemory;
  if (d.has_util) flags |= kFlagDeviceUtil;
  if (proc != nullptr && proc->has_memory) flags |= kFlagProcessMemory;
  if (proc != nullptr && proc->has_util) flags |= kFlagProcessUtil;
  put32(p + 0, kRecordMagic);
  put16(p + 4, kRecordVersion);
  put16(p + 6, static_cast<std::uint16_t>(proc != nullptr ? RecordKind::kProcess : RecordKind::kDevice));
  put32(p + 8, flags);
  put32(p + 12, d.index);
  put32(p + 16, d.has_minor ? d.minor : 0);
  put32(p + 20, d.process_count);
  put32(p + 24, d.processes_dropped);
  put32(p + 28, d.has_util ? d.sm_util : 0);
  put32(p + 32, d.has_util ? d.mem_util : 0);
  put32(p + 36, proc != nullptr ? proc->pid : 0);
  put64(p + 40, d.has_memory ? d.memory_total : 0);
  put64(p + 48, d.has_memory ? d.memory_used : 0);
  if (proc != nullptr) {
    put64(p + 56, proc->has_memory ? proc->memory_used : 0);
    put32(p + 64, proc->has_util ? proc->sm_util : 0);
    put32(p + 68, proc->has_util ? proc->mem_util : 0);
  }
  put_string(p + kUuidOffset, kUuidSize, d.uuid);
  put_string(p + kPciOffset, kPciSize, d.pci_bus_id);
  p[kEccOffset] = static_cast<std::uint8_t>(d.ecc_current);
  p[kEccOffset + 1] = static_cast<std::uint8_t>(d.ecc_pending);
  put32(p + kSampleDevicesOffset, d.sample_devices);
  return b;
}

std::optional<Record> decode(const std::uint8_t* p, std::size_t len, std::string& why) {
  if (p == nullptr || len < kRecordSizeV1) {
    why = "nvml event data of " + std::to_string(len) + " bytes is shorter than a record (" +
          std::to_string(kRecordSizeV1) + ")";
    return std::nullopt;
  }
  if (get32(p) != kRecordMagic) {
    why = "nvml event data does not start with the record magic";
    return std::nullopt;
  }
  std::uint16_t version = get16(p + 4);
  // Each version known has its exact size; a later one at least the newest's.
  const bool readable = (version == 1 && len == kRecordSizeV1) || (version == kRecordVersion && len == kRecordSize) ||
                        (version > kRecordVersion && len >= kRecordSize);
  if (!readable) {
    why = "nvml event record version " + std::to_string(version) + " of " + std::to_string(len) +
          " bytes is not readable";
    return std::nullopt;
  }
  Record r;
  std::uint16_t kind = get16(p + 6);
  if (kind != static_cast<std::uint16_t>(RecordKind::kDevice) &&
      kind != static_cast<std::uint16_t>(RecordKind::kProcess)) {
    why = "nvml event record of unknown kind " + std::to_string(kind);
    return std::nullopt;
  }
  r.kind = static_cast<RecordKind>(kind);
  std::uint32_t flags = get32(p + 8);
  if (version <= kRecordVersion && (flags & ~kKnownFlags) != 0) {
    why = "nvml event record has unknown flags";
    return std::nullopt;
  }
  bool is_process = r.kind == RecordKind::kProcess;
  if (!is_process && (flags & (kFlagProcessMemory | kFlagProcessUtil)) != 0) {
    why = "nvml device record has process flags";
    return std::nullopt;
  }
  DeviceSample& d = r.device;
  d.index = get32(p + 12);
  d.has_minor = (flags & kFlagDeviceMinor) != 0;
  d.minor = get32(p + 16);
  d.process_count = get32(p + 20);
  d.processes_dropped = get32(p + 24);
  d.has_util = (flags & kFlagDeviceUtil) != 0;
  d.sm_util = get32(p + 28);
  d.mem_util = get32(p + 32);
  d.has_memory = (flags & kFlagDeviceMemory) != 0;
  d.memory_total = get64(p + 40);
  d.memory_used = get64(p + 48);
  ProcessSample& proc = r.process;
  proc.pid = get32(p + 36);
  proc.has_memory = (flags & kFlagProcessMemory) != 0;
  proc.memory_used = get64(p + 56);
  proc.has_util = (flags & kFlagProcessUtil) != 0;
  proc.sm_util = get32(p + 64);
  proc.mem_util = get32(p + 68);
  if ((d.has_minor && d.minor > 247) || d.processes_dropped > d.process_count || d.sm_util > 100 || d.mem_util > 100 ||
      proc.sm_util > 100 || proc.mem_util > 100 || d.memory_used > d.memory_total) {
    why = "nvml event record holds values out of range";
    return std::nullopt;
  }
  if (is_process != (proc.pid != 0)) {
    why = is_process ? "nvml process record without a pid" : "nvml device record with a pid";
    return std::nullopt;
  }
  if (!get_string(p + kUuidOffset, kUuidSize, d.uuid) || !get_string(p + kPciOffset, kPciSize, d.pci_bus_id)) {
    why = "nvml event record holds an unterminated or unprintable string";
    return std::nullopt;
  }
  if (version >= 2) {
    const std::uint8_t current = p[kEccOffset];
    const std::uint8_t pending = p[kEccOffset + 1];
    if (current > kEccModeMax || pending > kEccModeMax || (version == 2 && get16(p + kEccOffset + 2) != 0)) {
      why = "nvml event record holds an ECC mode out of range";
      return std::nullopt;
    }
    d.ecc_current = static_cast<EccMode>(current);
    d.ecc_pending = static_cast<EccMode>(pending);
    d.sample_devices = get32(p + kSampleDevicesOffset);
  }
  return r;
}

}  // namespace vigil::nvml
