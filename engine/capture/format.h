// The vigil capture file format, version 1 (byte by byte in docs/capture-format.md).
//
//   file   := file_header block*
//   block  := block_header payload            (payload: zstd frame or raw bytes)
//   payload (after decompression) := record*
//   record := u8 type, u32 body_len, body     (unknown types are skipped by length)
//
// All integers are little-endian. Every length is bounded by the constants
// below and checked against what remains before it is used.
//
// A Record is what a reader returns and a writer takes: one event, or one state
// change (process, container, pod, pod removed, the node's NVIDIA inventory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "engine/event/event.h"
#include "engine/state/model.h"

namespace vigil::capture {

inline constexpr std::string_view kFileMagic = "VIGILCAP";  // 8 bytes
inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::uint32_t kBlockMagic = 0x4B4C4256;  // "VBLK" read as little-endian u32
inline constexpr std::size_t kFileHeaderFixedSize = 48;   // up to the first string
inline constexpr std::size_t kMaxFileHeaderSize = 64 * 1024;
inline constexpr std::size_t kBlockHeaderSize = 40;
inline constexpr std::uint32_t kMaxBlockPayload = 16u << 20;  // compressed bytes in one block
inline constexpr std::uint32_t kMaxBlockRaw = 64u << 20;      // decompressed bytes in one block
inline constexpr std::size_t kRecordHeaderSize = 5;           // u8 type + u32 body_len

// Stable numbers: written into files. Append only; never reuse.
enum class RecordType : std::uint8_t {
  kEvent = 1,
  kProcess = 2,
  kContainer = 3,
  kPod = 4,
  kPodRemoved = 5,
  kNvidia = 6,  // the node's NVIDIA inventory (state::NvidiaInfo)
};

// Bounds of the NVIDIA inventory record (the driver exposes far fewer: a node
// has at most a few dozen GPUs; UUIDs, PCI addresses and model names are short).
// A writer never exceeds them; a reader treats a body beyond them as malformed.
inline constexpr std::uint32_t kMaxNvidiaGpus = 1024;
inline constexpr std::uint32_t kMaxNvidiaString = 256;  // bytes of uuid, pci or model

inline constexpr std::uint16_t kBlockFlagHasState = 1;  // block holds non-event records

enum class BlockType : std::uint8_t { kRecords = 1 };
enum class Codec : std::uint8_t { kNone = 0, kZstd = 1 };

// What the file header says about where and when the capture was made.
struct FileInfo {
  std::uint16_t format_version = kFormatVersion;
  std::string vigil_version;
  std::string hostname;
  std::string kernel;              // uname -r
  std::uint64_t created_ns = 0;    // wall clock when the file was opened
  std::uint64_t boot_time_ns = 0;  // wall clock of boot (CLOCK_REALTIME - CLOCK_BOOTTIME)
  std::int64_t realtime_minus_monotonic_ns = 0;
  std::int64_t realtime_minus_boottime_ns = 0;
  std::string extension;  // reserved area; version 1 writes it empty, readers keep it
};

struct PodRemoved {
  std::string uid;
  bool operator==(const PodRemoved&) const = default;
};

using RecordData = std::variant<std::monostate, event::Event, state::Process, state::Container, state::Pod, PodRemoved,
                                state::NvidiaInfo>;

struct Record {
  RecordData data;
  std::uint64_t offset = 0;  // byte offset of the block that held it (for messages)
};

}  // namespace vigil::capture
