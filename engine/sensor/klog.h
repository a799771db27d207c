// KlogSource: the kernel log's Xid lines through syslog(2)
// (SYSLOG_ACTION_READ_ALL), where /dev/kmsg cannot be opened. In a
// Kubernetes pod that is not privileged, the runtime's device cgroup refuses
// /dev/kmsg even when it is mounted (EPERM); syslog(2) is a system call,
// not a device, and needs only CAP_SYSLOG (when kernel.dmesg_restrict=1).
//
// It reads the whole ring buffer every `interval` and hands over the Xid
// lines that are newer than the last one it saw (only lines written after
// open() count, as with /dev/kmsg). Lines are ordered by their printk
// timestamps; lines of the same timestamp are told apart by their position.
// When the oldest line of a read is newer than the last one seen, lines were
// overwritten between two reads: counted under "overwritten" (at least one).
// Needs printk timestamps (printk.time=1, every distribution's default).
//
// Thread-safety: the runner's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/source/source.h"
#include "engine/sensor/decoder.h"
#include "engine/util/result.h"

namespace vigil::sensor {

// One line of syslog(2)'s text: "<pri>[ seconds.micros] message".
struct KlogLine {
  std::uint32_t facility = 0;
  std::uint32_t level = 0;
  std::uint64_t ts_us = 0;
  std::string_view message;  // points into the parsed text
};
// nullopt for a line without the "<pri>[ts]" head (continuation lines).
std::optional<KlogLine> parse_klog_line(std::string_view line);

// What is new in one read of the buffer, given what the last read saw.
// Pure, for tests: `text` is syslog(2)'s buffer.
struct KlogCursor {
  bool primed = false;  // a first read set the position
  std::uint64_t last_ts_us = 0;
  std::uint32_t at_last = 0;  // lines at last_ts_us already taken
};
struct KlogNews {
  std::vector<KlogLine> lines;  // newer than the cursor, in order
  bool gap = false;             // lines were overwritten since the last read
};
KlogNews klog_news(std::string_view text, KlogCursor& cursor);

class KlogSource final : public source::EventSource {
 public:
  // An error (with *open_errno set when a system call failed) when syslog(2)
  // refuses (EPERM without CAP_SYSLOG) or the log has no timestamps.
  static Result<std::unique_ptr<KlogSource>> open(std::chrono::milliseconds interval = std::chrono::seconds(1),
                                                  int* open_errno = nullptr);
  ~KlogSource() override;

  std::string_view name() const override { return "kmsg"; }
  int wait_fd() const override { return timer_fd_; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  Health health() const override { return failure_.empty() ? Health::kRunning : Health::kFailed; }
  std::string failure() const override { return failure_; }
  source::Drops drops() const override;
  std::vector<std::string> attached() const override { return {"kmsg:syslog(2)"}; }

 private:
  KlogSource() = default;
  // Reads the buffer into buf_; a negative errno on failure.
  int read_buffer();
  int timer_fd_ = -1;
  std::vector<char> buf_;
  KlogCursor cursor_;
  TimeBase tb_ = TimeBase::now();
  std::uint64_t lost_ = 0;
  std::string failure_;
};

}  // namespace vigil::sensor
