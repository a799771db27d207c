// Where the kernel interfaces the sensor needs live on this machine: the
// cgroup v2 root (from /proc/self/mountinfo), tracefs, and the layout of the
// nvidia:nvidia_dev_xid tracepoint (from its format file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/util/result.h"

namespace vigil::sensor {

// The mount point of the cgroup2 filesystem in mountinfo text ("" if none).
// With a hybrid hierarchy it is often /sys/fs/cgroup/unified.
std::string cgroup2_mount(std::string_view mountinfo);

// cgroup2_mount() of /proc/self/mountinfo, or an error naming the problem.
Result<std::string> cgroup2_root();

// The tracefs directory (/sys/kernel/tracing or /sys/kernel/debug/tracing);
// mounts tracefs at /sys/kernel/tracing when no instance is mounted.
Result<std::string> ensure_tracefs();

struct XidTracepointOffsets {
  std::uint32_t dev = 0;   // offset of the __data_loc word of `dev`
  std::uint32_t code = 0;  // offset of `error_code`
  std::uint32_t msg = 0;   // offset of the __data_loc word of `msg`
};
// Parses a tracepoint "format" file text; nullopt when a field is missing.
std::optional<XidTracepointOffsets> parse_xid_format(std::string_view format);
std::optional<XidTracepointOffsets> xid_tracepoint_offsets(const std::string& format_path);

}  // namespace vigil::sensor
