// /dev/kmsg: the record parser, the NVRM Xid line parser (pure functions,
// every format of ../shared/reference/nvidia.md §5.1), a non-blocking reader
// that turns new Xid lines into event::Event (XidData, source "kmsg"), and
// KmsgSource, that reader as a source::EventSource ("kmsg").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/event.h"
#include "engine/source/source.h"
#include "engine/sensor/decoder.h"
#include "engine/util/result.h"

namespace vigil::sensor {

// One /dev/kmsg record "pri,seq,ts_us,flags[,...];message".
struct KmsgRecord {
  std::uint32_t facility = 0;  // pri >> 3
  std::uint32_t level = 0;     // pri & 7
  std::uint64_t seq = 0;
  std::uint64_t ts_us = 0;    // monotonic, since boot
  bool continuation = false;  // flags 'c' (or the old '+')
  std::string message;        // \xNN escapes decoded
};

// nullopt for anything that is not a well-formed record header (for example
// the " KEY=value" continuation lines).
std::optional<KmsgRecord> parse_kmsg_record(std::string_view line);

// Parses "NVRM: Xid (PCI:dddd:bb:dd[ GPU-I:n][ GPU-CI:n]): code, [pid=N, ][name=comm, ]text"
// (also the old form without "PCI:") found anywhere in `message`. Fills pci,
// code, xid_pid, xid_comm and text; source/facility/level are the caller's.
std::optional<event::XidData> parse_xid(std::string_view message);

// The xid event of a kernel log message (nullopt when it is no Xid line):
// source "kmsg", attributed to the pid the line names; ts_us is the
// kernel's monotonic time of the line.
std::optional<event::Event> xid_event(std::uint32_t facility, std::uint32_t level, std::uint64_t ts_us,
                                      std::string_view message, const TimeBase& tb);

// Reads new records from a kmsg-like file (seeks to the end first, so only
// lines written after open are seen). Not thread-safe; one owner.
class KmsgReader {
 public:
  // A failed open sets *open_errno (when given) to its errno.
  static Result<KmsgReader> open(const std::string& path, int* open_errno = nullptr);
  KmsgReader(KmsgReader&& o) noexcept;
  KmsgReader& operator=(KmsgReader&& o) noexcept;
  ~KmsgReader();

  int fd() const { return fd_; }
  // Reads what is available without blocking; calls cb for each Xid event.
  // Returns the number of events, or a negative errno on a hard error.
  int read_available(const TimeBase& tb, const std::function<void(event::Event&&)>& cb);
  std::uint64_t lost() const { return lost_; }  // records overwritten before read (EPIPE)

 private:
  explicit KmsgReader(int fd) : fd_(fd) {}
  int handle_line(std::string_view line, const TimeBase& tb, const std::function<void(event::Event&&)>& cb);
  int fd_ = -1;
  std::string pending_;
  std::uint64_t lost_ = 0;
};

// The Xid lines of a kmsg-like file as an event source. Only lines written
// after open() are seen. wait_fd() is the file; a read error other than
// "records overwritten" (counted as the drop reason "overwritten") fails it.
class KmsgSource final : public source::EventSource {
 public:
  // A failed open sets *open_errno (when given) to its errno.
  static Result<std::unique_ptr<KmsgSource>> open(const std::string& path, int* open_errno = nullptr);

  std::string_view name() const override { return "kmsg"; }
  int wait_fd() const override { return reader_.fd(); }
  // Reads what is there now (at most 1024 reads of 8 KiB: a source of Xid
  // lines is slow, so `budget` is not needed to keep it fair).
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  Health health() const override { return failure_.empty() ? Health::kRunning : Health::kFailed; }
  std::string failure() const override { return failure_; }
  source::Drops drops() const override;
  std::vector<std::string> attached() const override { return {"kmsg:" + path_}; }

 private:
  KmsgSource(KmsgReader reader, std::string path);
  KmsgReader reader_;
  std::string path_;
  TimeBase tb_;
  std::string failure_;
};

}  // namespace vigil::sensor
