// The data of the plugin's events (vigil_event.data): a small versioned
// little-endian encoding, written by the source and read back by the
// extractor, live and from capture files (so decode treats its input as
// hostile: every length is checked).
//
// Layout, version 1:
//   u8 version (1), u8 kind, u16 call, u32 present (bits: kHas*),
//   i64 device, u64 size, u64 ptr, u64 launches, u64 graph_launches, u64 interval_ms,
//   u64 drops_calls, u64 drops_launches, u64 probes,
//   then three strings, each u16 length + bytes: library, detail, module_kind.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vigil::cuda {

enum class Kind : std::uint8_t { kCall = 1, kLaunches = 2, kLibrary = 3 };

struct Record {
  enum : std::uint32_t {
    kHasDevice = 1u << 0,
    kHasSize = 1u << 1,
    kHasPtr = 1u << 2,
    kHasLaunches = 1u << 3,
    kHasDrops = 1u << 4,
    kHasProbes = 1u << 5,
  };
  Kind kind = Kind::kCall;
  std::uint16_t call = 0;            // cuda_call_id (kCall)
  std::uint32_t present = 0;         // which numbers below are set
  std::int64_t device = -1;          // CUdevice ordinal (context calls)
  std::uint64_t size = 0;            // bytes requested (allocations)
  std::uint64_t ptr = 0;             // device pointer (free)
  std::uint64_t launches = 0;        // kernel launches in the interval (kLaunches)
  std::uint64_t graph_launches = 0;  // graph launches in the interval (kLaunches)
  std::uint64_t interval_ms = 0;
  std::uint64_t drops_calls = 0;     // call records lost (ring buffer or queue full), since start
  std::uint64_t drops_launches = 0;  // launches not counted (launch map full), since start
  std::uint64_t probes = 0;          // entry points attached (kLibrary)
  std::string library;               // the libcuda path, as the process maps it
  std::string detail;                // module path (kCall), missing entry points (kLibrary)
  std::string module_kind;           // "ptx", "cubin", "fatbin", "unknown" (module image loads)
};

inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::size_t kWireStringMax = 4096;  // each string is cut to this

std::string encode(const Record& r);
// nullopt when the data is not a record of this version (cut, garbled).
std::optional<Record> decode(std::span<const std::uint8_t> data);

// `s` as valid UTF-8 without control characters, for strings whose bytes
// someone else chose (paths): other bytes become \xNN. At most `max` bytes
// of input are used.
std::string printable(std::string_view s, std::size_t max = kWireStringMax);

}  // namespace vigil::cuda
