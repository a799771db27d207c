// The data of an nvml event: one fixed-size, little-endian record, the same
// for both event kinds. It is what vigil captures and hands back to extract,
// so decode() takes any bytes (a capture file is untrusted) and refuses what
// is not a well-formed record.
//
// Layout, version 2 (offsets in bytes; integers little-endian):
//    0 u32 magic 0x4c4d564e ("NVML")   4 u16 version (1)   6 u16 kind (1 device, 2 process)
//    8 u32 flags (kFlag*)             12 u32 device index  16 u32 device minor
//   20 u32 device process count       24 u32 processes dropped
//   28 u32 device SM util %           32 u32 device memory util %
//   36 u32 pid (0 for a device record)
//   40 u64 device memory total        48 u64 device memory used
//   56 u64 process GPU memory used
//   64 u32 process SM util %          68 u32 process memory util %
//   72 char[96] device UUID           168 char[32] PCI bus id  (NUL-padded, printable ASCII)
//  200 u8 ECC mode, current          201 u8 ECC mode, pending (EccMode: 0 unknown, 1 off, 2 on,
//                                                                   3 not supported)
//  202 u16 reserved (0)              204 u32 devices in the sample (0: not known)
//  208 end
// Version 1 was the first 200 bytes (ECC unknown, device count not known);
// decode() still reads it. A later version may only append; decode() reads
// the version-2 prefix of a longer record of a later version.
#pragma once

#include "sample.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace vigil::nvml {

enum class RecordKind : std::uint16_t { kDevice = 1, kProcess = 2 };

inline constexpr std::uint32_t kRecordMagic = 0x4c4d564e;
inline constexpr std::uint16_t kRecordVersion = 2;
inline constexpr std::size_t kRecordSize = 208;
inline constexpr std::size_t kRecordSizeV1 = 200;

inline constexpr std::uint32_t kFlagDeviceMinor = 1u << 0;
inline constexpr std::uint32_t kFlagDeviceMemory = 1u << 1;
inline constexpr std::uint32_t kFlagDeviceUtil = 1u << 2;
inline constexpr std::uint32_t kFlagProcessMemory = 1u << 8;
inline constexpr std::uint32_t kFlagProcessUtil = 1u << 9;
inline constexpr std::uint32_t kKnownFlags =
    kFlagDeviceMinor | kFlagDeviceMemory | kFlagDeviceUtil | kFlagProcessMemory | kFlagProcessUtil;

struct Record {
  RecordKind kind = RecordKind::kDevice;
  DeviceSample device;    // its `processes` stay empty
  ProcessSample process;  // kProcess only
};

using RecordBytes = std::array<std::uint8_t, kRecordSize>;

// The record of a device (process == nullptr) or of one of its processes.
RecordBytes encode(const DeviceSample& device, const ProcessSample* process);

// nullopt, with `why` set, when `data` is not a record: too short, another
// magic or major version, an unknown kind or flag, a string that is not
// terminated or not printable, a percentage over 100, memory used over total,
// a pid on a device record or none on a process record, an ECC mode that is
// not one of EccMode's.
std::optional<Record> decode(const std::uint8_t* data, std::size_t len, std::string& why);

}  // namespace vigil::nvml
