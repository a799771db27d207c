// Turns one kernel record (bpf/shared/events.h) into an event::Event.
//
// Records come from the kernel, but are decoded as hostile input: every
// length is checked against the bytes received, a record shorter than its
// fixed part or claiming more than it has is rejected with an error, never
// read past. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/event.h"
#include "engine/util/result.h"

namespace vigil::sensor {

// Converts the kernel's boot-time clock (bpf_ktime_get_boot_ns, and the
// monotonic clock of /dev/kmsg) to wall-clock ns since the Unix epoch.
struct TimeBase {
  std::int64_t boot_to_wall_ns = 0;       // CLOCK_REALTIME - CLOCK_BOOTTIME
  std::int64_t monotonic_to_wall_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC
  static TimeBase now();                  // sampled from the clocks
  std::uint64_t from_boot(std::uint64_t boot_ns) const;
  std::uint64_t from_monotonic(std::uint64_t mono_ns) const;
};

// Decodes one ring-buffer record. Errors (kBadInput) name what was wrong.
Result<event::Event> decode_record(std::span<const std::uint8_t> rec, const TimeBase& tb);

// "usr\0bin\0" (components leaf-first, NUL-terminated) -> "/bin/usr".
// An empty input is the root, "/".
std::string decode_dpath(std::string_view leaf_first);

// The argv area "a\0b\0c\0" -> {"a","b","c"}; a last argument without its
// NUL (cut by the bound) is kept.
std::vector<std::string> split_args(std::string_view raw);

// A string field: the bytes up to the first NUL (or all of them).
std::string c_string(std::string_view raw);

}  // namespace vigil::sensor
