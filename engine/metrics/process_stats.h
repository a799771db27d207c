// The agent's own process figures, from /proc/self, under the names every
// Prometheus client library uses (process_cpu_seconds_total,
// process_resident_memory_bytes, ...), so stock dashboards and alerts apply.
#pragma once

#include <optional>
#include <string_view>

#include "engine/metrics/exposition.h"

namespace vigil::metrics {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0;
  double max_fds = 0;
};

// Parses /proc/<pid>/stat's text (the part after the command name may hold
// anything the name holds: it is found from the last ')').
std::optional<ProcessStats> parse_proc_stat(std::string_view stat, double ticks_per_second, double page_size,
                                            double boot_time_seconds);

// Reads /proc/self; nullopt when /proc is not readable.
std::optional<ProcessStats> read_process_stats();

// Appends the process_* families.
void collect_process(Exposition& out);

}  // namespace vigil::metrics
