// A bounded, crash-safe, on-disk FIFO of messages for sinks whose destination
// may be down (kafka, webhook). Survives a restart: open() finds what an
// earlier process left and delivers it first.
//
// Layout of `dir`: segment files "<20-digit seq>.seg" holding records
//   u32 magic 'VSP1' | u32 payload length | u32 CRC-32 of payload | payload
// (payload: the Message fields, each u32 length + bytes), and "cursor" (the
// head: "segment offset crc", rewritten in place by one 64-byte write). A torn record
// at the tail (crash mid-write) is cut off at open; a corrupt record in the
// middle ends the readable part of that segment (counted, logged by caller).
//
// Delivery is at-least-once: a crash between delivery and pop() delivers the
// same messages again (same uuid).
//
// Thread-safety: none; the owner serializes every call (a Sink holds its
// spool mutex), except sync(), which the one thread that appends may call
// without it (only append() replaces the file that sync() flushes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/util/result.h"
#include "outputs/transport.h"

namespace vigil::outputs {

class Spool {
 public:
  static Result<std::unique_ptr<Spool>> open(const std::string& dir, std::uint64_t max_bytes);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends and flushes to the OS; error kRuntime when the spool is full or
  // the write fails (the message is then not in the spool).
  Status append(const Message& m);
  // Why the last append() failed (kNone after a success).
  enum class Refusal : std::uint8_t { kNone, kFull, kTooLarge, kIo };
  Refusal last_refusal() const { return refusal_; }
  // fdatasync of the current segment (after a batch of appends).
  void sync();
  // Up to `max_events` / `max_bytes` (at least one) messages from the head,
  // without removing them.
  std::vector<Message> peek(std::size_t max_events, std::size_t max_bytes);
  // Removes the first `n` messages returned by the last peek().
  Status pop(std::size_t n);

  bool empty() const { return count_ == 0; }
  std::uint64_t count() const { return count_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t corrupt_records() const { return corrupt_; }

 private:
  struct Pos {
    std::uint64_t seg = 0;
    std::uint64_t off = 0;
  };
  Spool(std::string dir, std::uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  Status load();
  Status open_tail(std::uint64_t seg);
  Status write_cursor();
  std::string seg_path(std::uint64_t seg) const;

  std::string dir_;
  std::uint64_t max_bytes_;
  std::vector<std::uint64_t> segs_;  // existing segment seqs, ascending
  Pos head_;
  std::uint64_t tail_seg_ = 0;
  std::uint64_t tail_off_ = 0;
  int tail_fd_ = -1;
  int cursor_fd_ = -1;
  std::uint64_t count_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t corrupt_ = 0;
  Refusal refusal_ = Refusal::kNone;
  std::vector<Pos> peeked_ends_;  // end position of each peeked message
  std::vector<std::uint64_t> peeked_sizes_;
  std::vector<std::uint64_t> peeked_counts_;
};

}  // namespace vigil::outputs
