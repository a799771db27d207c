// CaptureWriter: records events and state changes into a capture file
// (docs/capture-format.md).
//
//   auto w = capture::CaptureWriter::open("/var/lib/vigil/run.vcap", opts);
//   if (!w) { ...w.error().message... }
//   (*w)->write_event(ev);     // buffered; a block is cut every opts.block_size raw bytes
//   (*w)->close();             // flushes the last block
//
// Each file starts with its header and then, when opts.snapshot is set, the
// full state (the NVIDIA inventory, every container, pod, process) so the file
// replays on its own.
// Rotation (by size and/or age) closes the file, shifts PATH -> PATH.1 -> PATH.2
// ... keeping opts.keep old files, and opens a fresh PATH with a new snapshot.
// Files are created 0640 whatever the umask (util::open_for_write): a symbolic
// link at PATH, or a directory on the way that others can write to, is refused
// with Error::bad_input and nothing is written.
//
// The writer is a state::StateListener, so changes learnt outside the event
// stream (a /proc read, a pod from the API server) are recorded in order with
// the events. Errors from listener calls are sticky: the next write_*/flush
// returns them.
//
// Thread-safety: not thread-safe; one thread (the pipeline's) calls it.
// Memory: at most one block (opts.block_size plus one record) is buffered.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/capture/format.h"
#include "engine/state/state.h"
#include "engine/util/result.h"

namespace vigil::capture {

// The full state at one moment, written at the start of every capture file.
struct Snapshot {
  // The node's NVIDIA devices (State::nvidia()); written first when set, so
  // GPU allocations in the pods that follow resolve as they did live.
  std::optional<state::NvidiaInfo> nvidia;
  std::vector<state::Process> processes;
  std::vector<state::Container> containers;
  std::vector<state::Pod> pods;
  // Pods deleted and still in their grace period (State::removed_pods):
  // written, then removed, so a replay names them too for a grace period.
  std::vector<state::Pod> removed_pods;
};

struct WriterOptions {
  std::size_t block_size = 256 * 1024;              // raw record bytes per block (max 64 MiB)
  std::uint64_t flush_interval_ns = 1'000'000'000;  // cut a block at least this often (0 = never)
  int zstd_level = 3;                               // 0 stores blocks uncompressed
  std::uint64_t rotate_bytes = 0;                   // rotate when the file reaches this size (0 = never)
  std::uint64_t rotate_interval_ns = 0;             // rotate when the file is this old (0 = never)
  std::size_t keep = 5;                             // rotated files kept besides the current one
  FileInfo info = {};                               // header; describe_host() fills the defaults
  std::function<Snapshot()> snapshot;               // the state written first in each file
  std::function<std::uint64_t()> clock;             // monotonic ns; default: steady_clock
};

// The header fields of this machine now: vigil version, hostname, kernel release,
// boot time and the clock offsets.
FileInfo describe_host();

// The bytes of a file header for `info` (format version kFormatVersion).
std::string encode_file_header(const FileInfo& info);

class CaptureWriter final : public state::StateListener {
 public:
  struct Stats {
    std::uint64_t events = 0;
    std::uint64_t records = 0;
    std::uint64_t blocks = 0;
    std::uint64_t bytes = 0;  // bytes written to all files, headers included
    std::uint64_t files = 0;  // files opened (1 + rotations)
  };

  static Result<std::unique_ptr<CaptureWriter>> open(std::string path, WriterOptions opts);
  ~CaptureWriter() override;  // closes, ignoring errors; call close() to see them
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  Status write_event(const event::Event& ev);
  Status write_process(const state::Process& p);
  Status write_container(const state::Container& c);
  Status write_pod(const state::Pod& p);
  Status write_pod_removed(const std::string& uid);
  Status write_nvidia(const state::NvidiaInfo& n);
  Status write_record(const RecordData& r);
  // Records already encoded with codec.h (the flight recorder keeps them so).
  // `events` of them are events; `first_ts`/`last_ts` bound their times (0 if none).
  Status write_encoded(std::string_view records, std::uint32_t count, std::uint32_t events, std::uint64_t first_ts,
                       std::uint64_t last_ts);

  Status flush();  // cuts the buffered records into a block and writes it
  // Flushes when opts.flush_interval_ns has passed since the last block. Call
  // it from the event loop between polls, so that records written just before
  // a quiet period reach the disk within the interval even with no new writes.
  Status tick();
  Status close();  // flush + close the file; later writes fail

  const std::string& path() const { return path_; }
  const Stats& stats() const { return stats_; }

  // state::StateListener
  void on_process(const state::Process& p) override;
  void on_container(const state::Container& c) override;
  void on_pod(const state::Pod& p) override;
  void on_pod_removed(const std::string& uid) override;
  void on_nvidia(const state::NvidiaInfo& n) override;

 private:
  CaptureWriter(std::string path, WriterOptions opts);
  Status open_file();
  Status write_header();
  Status write_snapshot();
  Status write_all(const void* data, std::size_t n);
  Status after_append(std::uint64_t ts, bool is_event);
  Status rotate();
  std::uint64_t now() const;

  std::string path_;
  WriterOptions opts_;
  int fd_ = -1;
  std::string buf_;       // encoded records not yet in a block
  std::string out_;       // scratch: one block being assembled
  void* cctx_ = nullptr;  // ZSTD_CCtx
  std::uint32_t buf_records_ = 0;
  bool buf_has_state_ = false;  // the block holds non-event records (block flag bit 0)
  std::uint64_t buf_first_ts_ = 0;
  std::uint64_t buf_last_ts_ = 0;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t file_opened_at_ = 0;
  std::uint64_t last_flush_at_ = 0;
  Stats stats_;
  Status sticky_;  // first error from a listener call
  bool closed_ = false;
  bool in_snapshot_ = false;
};

}  // namespace vigil::capture
