#include "engine/capture/reader.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "engine/capture/codec.h"

namespace vigil::capture {
namespace {

const unsigned char* ubytes(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

CaptureReader::CaptureReader(std::string name, ReaderOptions opts) : name_(std::move(name)), opts_(opts) {}

CaptureReader::~CaptureReader() {
  if (file_) std::fclose(file_);
  if (dctx_) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
}

Result<std::unique_ptr<CaptureReader>> CaptureReader::open(const std::string& path, ReaderOptions opts) {
  std::unique_ptr<CaptureReader> r(new CaptureReader(path, opts));
  r->file_ = std::fopen(path.c_str(), "rbe");
  if (!r->file_) {
    return Error::bad_input("capture: cannot open " + path + ": " + std::strerror(errno));
  }
  std::setvbuf(r->file_, nullptr, _IOFBF, 1 << 20);
  if (std::fseek(r->file_, 0, SEEK_END) == 0) {
    long end = std::ftell(r->file_);
    if (end > 0) r->size_ = static_cast<std::uint64_t>(end);
    std::fseek(r->file_, 0, SEEK_SET);
  }
  if (Status s = r->read_header(); !s) return s.error();
  return r;
}

Result<std::unique_ptr<CaptureReader>> CaptureReader::from_memory(std::string bytes, ReaderOptions opts,
                                                                  std::string name) {
  std::unique_ptr<CaptureReader> r(new CaptureReader(std::move(name), opts));
  r->from_mem_ = true;
  r->mem_ = std::move(bytes);
  r->size_ = r->mem_.size();
  if (Status s = r->read_header(); !s) return s.error();
  return r;
}

std::size_t CaptureReader::read_some(void* dst, std::size_t n) {
  std::size_t got = 0;
  if (from_mem_) {
    got = std::min(n, mem_.size() - mem_pos_);
    std::memcpy(dst, mem_.data() + mem_pos_, got);
    mem_pos_ += got;
  } else {
    got = std::fread(dst, 1, n, file_);
  }
  offset_ += got;
  stats_.bytes += got;
  return got;
}

Error CaptureReader::fail(std::uint64_t offset, const std::string& what) {
  return Error::bad_input("capture " + name_ + ": " + what + " (at byte offset " + std::to_string(offset) + ")");
}

Status CaptureReader::read_header() {
  unsigned char fixed[kFileHeaderFixedSize];
  std::size_t got = read_some(fixed, sizeof(fixed));
  if (got < kFileMagic.size() || std::memcmp(fixed, kFileMagic.data(), kFileMagic.size()) != 0) {
    return fail(0, "not a vigil capture file (bad magic)");
  }
  if (got < sizeof(fixed)) return fail(got, "file header cut short");
  info_.format_version = get_u16(fixed + 8);
  if (info_.format_version == 0 || info_.format_version > kFormatVersion) {
    return fail(8, "unsupported capture format version " + std::to_string(info_.format_version) +
                       " (this vigil reads versions 1 to " + std::to_string(kFormatVersion) + ")");
  }
  std::uint32_t header_len = get_u32(fixed + 12);
  // fixed part + three u16 string lengths + u32 extension length + u32 crc
  if (header_len < kFileHeaderFixedSize + 6 + 4 + 4 || header_len > kMaxFileHeaderSize) {
    return fail(12, "file header length " + std::to_string(header_len) + " out of bounds");
  }
  std::string h(reinterpret_cast<const char*>(fixed), sizeof(fixed));
  h.resize(header_len);
  std::size_t rest = header_len - sizeof(fixed);
  if (read_some(h.data() + sizeof(fixed), rest) < rest) {
    return fail(offset_, "file header cut short");
  }
  const unsigned char* p = ubytes(h);
  std::uint32_t want = get_u32(p + header_len - 4);
  if (crc32c(0, p, header_len - 4) != want) {
    return fail(header_len - 4, "file header checksum mismatch");
  }
  info_.created_ns = get_u64(p + 16);
  info_.boot_time_ns = get_u64(p + 24);
  info_.realtime_minus_monotonic_ns = static_cast<std::int64_t>(get_u64(p + 32));
  info_.realtime_minus_boottime_ns = static_cast<std::int64_t>(get_u64(p + 40));
  std::size_t pos = kFileHeaderFixedSize;
  std::size_t end = header_len - 4;
  auto take = [&](std::string& out, std::size_t len_size, const char* what) -> Status {
    if (end - pos < len_size) return fail(pos, std::string("file header: ") + what + " cut short");
    std::size_t n = len_size == 2 ? get_u16(p + pos) : get_u32(p + pos);
    pos += len_size;
    if (end - pos < n) return fail(pos, std::string("file header: ") + what + " overruns the header");
    out.assign(reinterpret_cast<const char*>(p + pos), n);
    pos += n;
    return {};
  };
  if (Status s = take(info_.vigil_version, 2, "vigil version"); !s) return s;
  if (Status s = take(info_.hostname, 2, "hostname"); !s) return s;
  if (Status s = take(info_.kernel, 2, "kernel"); !s) return s;
  if (Status s = take(info_.extension, 4, "extension area"); !s) return s;
  // Bytes after the extension area belong to a later minor revision: ignored.
  return {};
}

Result<bool> CaptureReader::load_block() {
  for (;;) {
    block_offset_ = offset_;
    unsigned char h[kBlockHeaderSize];
    std::size_t got = read_some(h, sizeof(h));
    if (got == 0) return false;  // clean end
    if (got < sizeof(h)) {
      truncated_ = true;
      truncated_at_ = block_offset_;
      return false;
    }
    if (get_u32(h) != kBlockMagic) return fail(block_offset_, "bad block magic");
    std::uint8_t type = h[4];
    std::uint8_t codec = h[5];
    std::uint16_t flags = get_u16(h + 6);
    std::uint32_t payload_len = get_u32(h + 8);
    std::uint32_t raw_len = get_u32(h + 12);
    std::uint32_t want_crc = get_u32(h + 20);
    std::uint64_t last_ts = get_u64(h + 32);
    if (payload_len > kMaxBlockPayload) {
      return fail(block_offset_ + 8, "block payload length " + std::to_string(payload_len) + " exceeds the limit of " +
                                         std::to_string(kMaxBlockPayload));
    }
    if (raw_len > kMaxBlockRaw) {
      return fail(block_offset_ + 12, "block raw length " + std::to_string(raw_len) + " exceeds the limit of " +
                                          std::to_string(kMaxBlockRaw));
    }
    if (size_ && block_offset_ + sizeof(h) + payload_len > size_) {
      truncated_ = true;  // cut off inside this block
      truncated_at_ = block_offset_;
      return false;
    }
    payload_.resize(payload_len);
    if (read_some(payload_.data(), payload_len) < payload_len) {
      truncated_ = true;
      truncated_at_ = block_offset_;
      return false;
    }
    ++stats_.blocks;
    if (opts_.verify_checksums) {
      std::uint32_t crc = crc32c(0, h, 20);
      crc = crc32c(crc, h + 24, sizeof(h) - 24);
      crc = crc32c(crc, payload_.data(), payload_.size());
      if (crc != want_crc) return fail(block_offset_ + 20, "block checksum mismatch");
    }
    if (type != static_cast<std::uint8_t>(BlockType::kRecords)) continue;  // a later block type
    skip_events_in_block_ = opts_.skip_events_before_ns && last_ts != 0 && last_ts < opts_.skip_events_before_ns;
    if (skip_events_in_block_ && !(flags & kBlockFlagHasState)) continue;  // nothing needed here
    if (codec == static_cast<std::uint8_t>(Codec::kNone)) {
      if (raw_len != payload_len) {
        return fail(block_offset_ + 12, "stored block: raw length differs from payload length");
      }
      raw_.swap(payload_);
    } else if (codec == static_cast<std::uint8_t>(Codec::kZstd)) {
      unsigned long long content = ZSTD_getFrameContentSize(payload_.data(), payload_.size());
      if (content != raw_len) {
        return fail(block_offset_ + kBlockHeaderSize, "zstd frame size does not match the block's raw length");
      }
      if (!dctx_) dctx_ = ZSTD_createDCtx();
      if (!dctx_) return Error::runtime("capture: cannot create a zstd context");
      raw_.resize(raw_len);
      std::size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(dctx_), raw_.data(), raw_.size(), payload_.data(),
                                          payload_.size());
      if (ZSTD_isError(n) || n != raw_len) {
        return fail(block_offset_ + kBlockHeaderSize, std::string("zstd decompression failed: ") +
                                                          (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output"));
      }
    } else {
      return fail(block_offset_ + 5, "unknown block codec " + std::to_string(codec));
    }
    raw_pos_ = 0;
    return true;
  }
}

Result<bool> CaptureReader::next(Record& out) {
  if (error_) return *error_;
  if (done_) return false;
  for (;;) {
    if (raw_pos_ >= raw_.size()) {
      raw_.clear();
      raw_pos_ = 0;
      Result<bool> more = load_block();
      if (!more) {
        error_ = std::make_unique<Error>(more.error());
        return *error_;
      }
      if (!*more) {
        done_ = true;
        return false;
      }
      continue;
    }
    std::size_t left = raw_.size() - raw_pos_;
    std::uint64_t where = block_offset_;
    if (left < kRecordHeaderSize) {
      error_ = std::make_unique<Error>(
          fail(where, "record header cut short at byte " + std::to_string(raw_pos_) + " of the block"));
      return *error_;
    }
    const unsigned char* p = ubytes(raw_) + raw_pos_;
    std::uint8_t type = p[0];
    std::uint32_t len = get_u32(p + 1);
    if (len > left - kRecordHeaderSize) {
      error_ =
          std::make_unique<Error>(fail(where, "record length " + std::to_string(len) + " overruns the block at byte " +
                                                  std::to_string(raw_pos_) + " of the block"));
      return *error_;
    }
    std::string_view body(raw_.data() + raw_pos_ + kRecordHeaderSize, len);
    std::size_t rec_pos = raw_pos_;
    raw_pos_ += kRecordHeaderSize + len;
    if (skip_events_in_block_ && type == static_cast<std::uint8_t>(RecordType::kEvent)) continue;
    std::string why;
    switch (decode_record(type, body, out.data, why)) {
      case DecodeOutcome::kOk:
        out.offset = where;
        ++stats_.records;
        return true;
      case DecodeOutcome::kSkipped: ++stats_.skipped_records; continue;
      case DecodeOutcome::kBad:
        error_ = std::make_unique<Error>(
            fail(where, why + " (record at byte " + std::to_string(rec_pos) + " of the block)"));
        return *error_;
    }
  }
}

}  // namespace vigil::capture
