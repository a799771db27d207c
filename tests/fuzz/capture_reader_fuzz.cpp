// libFuzzer target for the capture reader: any byte string must give records or
// a clean error, never a crash, a hang or an unbounded allocation.
//
// The input is used twice: as a whole file, and (to get past the header and the
// checksums, which random bytes rarely satisfy) as the records payload of a
// block framed with a valid header and checksum, stored and zstd-compressed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/capture/codec.h"
#include "engine/capture/format.h"
#include "engine/capture/reader.h"
#include "engine/capture/writer.h"

namespace {

using namespace vigil::capture;

void drain(std::string bytes, bool verify) {
  ReaderOptions opts;
  opts.verify_checksums = verify;
  auto r = CaptureReader::from_memory(std::move(bytes), opts);
  if (!r) return;
  Record rec;
  // Each next() consumes at least one record header or ends: bounded by the input size.
  for (std::size_t i = 0; i < (1u << 20); ++i) {
    auto more = (*r)->next(rec);
    if (!more || !*more) break;
  }
}

std::string framed(const std::uint8_t* data, std::size_t size) {
  FileInfo info;
  info.vigil_version = "fuzz";
  std::string file = encode_file_header(info);
  std::string block;
  put_u32(block, kBlockMagic);
  block.push_back(static_cast<char>(BlockType::kRecords));
  block.push_back(static_cast<char>(Codec::kNone));
  put_u16(block, kBlockFlagHasState);
  put_u32(block, static_cast<std::uint32_t>(size));
  put_u32(block, static_cast<std::uint32_t>(size));
  put_u32(block, 0);
  put_u32(block, 0);  // crc, not verified in this mode
  put_u64(block, 0);
  put_u64(block, 0);
  block.append(reinterpret_cast<const char*>(data), size);
  return file + block;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  drain(std::string(reinterpret_cast<const char*>(data), size), true);
  drain(framed(data, size), false);
  return 0;
}
