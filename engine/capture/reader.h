// CaptureReader: reads a capture file record by record.
//
//   auto r = capture::CaptureReader::open("run.vcap");
//   if (!r) { ...r.error().message names the file and byte offset... }
//   capture::Record rec;
//   while (true) {
//     auto more = (*r)->next(rec);
//     if (!more) { ...corruption: more.error().message has the offset... }
//     if (!*more) break;      // end (see truncated() for a capture cut off mid-write)
//     ...rec.data...
//   }
//
// Input is hostile: every length is bounded (format.h) and checked against what
// remains; a checksum mismatch, a bad magic or a malformed record is an error
// naming the byte offset; the reader never reads past a bound, never allocates
// more than one block (kMaxBlockPayload + kMaxBlockRaw), and always advances.
// A file that ends inside a block (a crash, kill -9, a full disk) is not an
// error: next() returns false after the last whole block and truncated() says so.
// Record types this version does not know are skipped by their length.
//
// Thread-safety: not thread-safe; one reader per thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "engine/capture/format.h"
#include "engine/util/result.h"

namespace vigil::capture {

struct ReaderOptions {
  bool verify_checksums = true;
  // Blocks whose events all lie before this time (ns since the epoch) are
  // skipped without decompressing them; 0 = read everything. State records in
  // skipped blocks are still returned (they are needed for context).
  std::uint64_t skip_events_before_ns = 0;
};

class CaptureReader {
 public:
  struct Stats {
    std::uint64_t blocks = 0;
    std::uint64_t records = 0;
    std::uint64_t skipped_records = 0;  // unknown record or event types
    std::uint64_t bytes = 0;            // bytes of the file consumed
  };

  static Result<std::unique_ptr<CaptureReader>> open(const std::string& path, ReaderOptions opts = {});
  // Reads a capture held in memory (tests, the fuzzer). `name` is used in messages.
  static Result<std::unique_ptr<CaptureReader>> from_memory(std::string bytes, ReaderOptions opts = {},
                                                            std::string name = "<memory>");
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  const FileInfo& info() const { return info_; }

  // true: `out` holds the next record; false: the end. An Error (bad input) names
  // the byte offset; after an error, next() keeps returning it.
  Result<bool> next(Record& out);

  // The file ended inside a block; truncated_at() is that block's offset.
  bool truncated() const { return truncated_; }
  std::uint64_t truncated_at() const { return truncated_at_; }
  const Stats& stats() const { return stats_; }
  // The size of the input when known (files, memory); 0 otherwise. For progress.
  std::uint64_t size() const { return size_; }
  std::uint64_t offset() const { return offset_; }

 private:
  CaptureReader(std::string name, ReaderOptions opts);
  Status read_header();
  // Loads the next block into raw_. false at the end (clean or truncated).
  Result<bool> load_block();
  std::size_t read_some(void* dst, std::size_t n);
  Error fail(std::uint64_t offset, const std::string& what);

  std::string name_;
  ReaderOptions opts_;
  std::FILE* file_ = nullptr;
  std::string mem_;
  std::size_t mem_pos_ = 0;
  bool from_mem_ = false;
  FileInfo info_;
  std::uint64_t offset_ = 0;  // bytes consumed so far
  std::uint64_t size_ = 0;
  std::uint64_t block_offset_ = 0;  // offset of the block in raw_
  std::string payload_;             // compressed bytes of the current block
  std::string raw_;                 // decoded records of the current block
  std::size_t raw_pos_ = 0;
  bool skip_events_in_block_ = false;
  void* dctx_ = nullptr;  // ZSTD_DCtx
  bool truncated_ = false;
  std::uint64_t truncated_at_ = 0;
  bool done_ = false;
  std::unique_ptr<Error> error_;
  Stats stats_;
};

}  // namespace vigil::capture
