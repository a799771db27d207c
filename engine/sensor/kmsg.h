// /dev/kmsg: the record parser, the NVRM Xid line parser (pure functions,
// every format of ../shared/reference/nvidia.md §5.1), and a non-blocking
// reader that turns new Xid lines into event::Event (XidData, source "kmsg").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "engine/event/event.h"
#include "engine/sensor/decoder.h"
#include "engine/util/result.h"

namespace vigil::sensor {

// One /dev/kmsg record "pri,seq,ts_us,flags[,...];message".
struct KmsgRecord {
  std::uint32_t facility = 0;  // pri >> 3
  std::uint32_t level = 0;     // pri & 7
  std::uint64_t seq = 0;
  std::uint64_t ts_us = 0;     // monotonic, since boot
  bool continuation = false;   // flags 'c' (or the old '+')
  std::string message;         // \xNN escapes decoded
};

// nullopt for anything that is not a well-formed record header (for example
// the " KEY=value" continuation lines).
std::optional<KmsgRecord> parse_kmsg_record(std::string_view line);

// Parses "NVRM: Xid (PCI:dddd:bb:dd[ GPU-I:n][ GPU-CI:n]): code, [pid=N, ][name=comm, ]text"
// (also the old form without "PCI:") found anywhere in `message`. Fills pci,
// code, xid_pid, xid_comm and text; source/facility/level are the caller's.
std::optional<event::XidData> parse_xid(std::string_view message);

// Reads new records from a kmsg-like file (seeks to the end first, so only
// lines written after open are seen). Not thread-safe; one owner.
class KmsgReader {
 public:
  static Result<KmsgReader> open(const std::string& path);
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

}  // namespace vigil::sensor
