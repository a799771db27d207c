// Record encoding for capture files: turns Records into bytes and back.
//
// Layout of every record body is in docs/capture-format.md. Decoding treats its
// input as hostile: every length is checked against the bytes that remain, a
// short body is an error, and trailing bytes after the known fields are ignored
// (a later version may append fields to a record).
//
// Thread-safety: free functions over values; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/capture/format.h"
#include "engine/util/result.h"

namespace vigil::capture {

// Appends one whole record (type, length, body) to `out`. monostate appends nothing.
void append_record(const RecordData& rec, std::string& out);
void append_event(const event::Event& ev, std::string& out);
void append_process(const state::Process& p, std::string& out);
void append_container(const state::Container& c, std::string& out);
void append_pod(const state::Pod& p, std::string& out);
void append_pod_removed(std::string_view uid, std::string& out);
// At most kMaxNvidiaGpus GPUs and kMaxNvidiaString bytes per string are written
// (the rest is cut off); the driver never reports more.
void append_nvidia(const state::NvidiaInfo& n, std::string& out);

enum class DecodeOutcome {
  kOk,       // `out` holds the record
  kSkipped,  // a record type (or event type) this version does not know; skip it
  kBad,      // malformed body; `why` says what
};

// Decodes the body of one record of `type`. On kBad, `why` names the field.
DecodeOutcome decode_record(std::uint8_t type, std::string_view body, RecordData& out, std::string& why);

// CRC-32C (Castagnoli), as used by iSCSI/ext4; `crc` chains calls (start with 0).
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len);

// Little-endian helpers shared by the reader and writer.
void put_u16(std::string& out, std::uint16_t v);
void put_u32(std::string& out, std::uint32_t v);
void put_u64(std::string& out, std::uint64_t v);
std::uint16_t get_u16(const unsigned char* p);
std::uint32_t get_u32(const unsigned char* p);
std::uint64_t get_u64(const unsigned char* p);

}  // namespace vigil::capture
