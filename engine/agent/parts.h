// The parts of `vigil run` and `vigil capture` that need a capability or a
// mount, and what vigil says when one cannot run: it starts without the part,
// records it in runtime::Parts (the metrics endpoint and the "ready" line
// show it) and logs one line naming the part, what is missing and what is
// lost. Only when no event source can run (no sensor, no kmsg reader, no
// plugin source) does it refuse to start. docs/install.md, "Privileges",
// is the table this file's kParts mirrors.
//
//   record_part(parts, log, "kmsg", false, open_failure("/dev/kmsg", errno, ...));
//   // warn: part kmsg off: cannot open /dev/kmsg (ENOENT): mount the host's /dev/kmsg; GPU Xid ...
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/runtime/parts.h"
#include "engine/util/caps.h"
#include "engine/util/result.h"

namespace vigil::agent {

struct PartInfo {
  std::string_view name;
  std::string_view needs;    // capabilities and mounts, as PartState::needs
  std::string_view without;  // what vigil does not see while the part is off
  bool event_source;         // vigil can run on this part alone
};

// The part of that name ("bpf", "bpf_cgroup", "kmsg", "procfs",
// "gpu_inventory", "k8s", "pod_resources"); null for any other, such as a
// plugin source ("plugin:NAME": an event source of its own).
const PartInfo* part_info(std::string_view name);

// Records the part. When it is off, logs one line (a warning, or at info when
// `warn` is false: a part a plain Linux host has no use for, such as the pod
// watcher outside Kubernetes): "part NAME off: WHY_OFF; WITHOUT".
void record_part(runtime::Parts& parts, spdlog::logger& log, std::string_view name, bool on, std::string why_off = "",
                 bool warn = true);

// The line record_part logs for a part that is off.
std::string part_off_line(std::string_view name, std::string_view why_off);

// "kmsg, gpu_inventory": the parts that are off ("" when none).
std::string parts_off(const std::vector<runtime::PartState>& parts);

// OK when at least one event source (bpf, kmsg, a plugin source) is on;
// otherwise an Error::runtime listing each part that is off and why.
Status require_an_event_source(const std::vector<runtime::PartState>& parts);

// Why `path` cannot be opened (errno `err`), with what would fix it:
// missing (ENOENT, ENODEV, ENXIO, ENOTDIR) → `mount_hint`; refused (EPERM,
// EACCES) → the capabilities of `caps` that `have` lacks, when any.
//   "cannot open /dev/kmsg (EPERM): needs CAP_SYSLOG"
std::string open_failure(std::string_view path, int err, std::string_view mount_hint, util::CapSet have,
                         std::initializer_list<util::Cap> caps);

// Why other processes' /proc entries cannot all be read with capabilities
// `have` ("" when they can): their exe, cwd and fd links need CAP_SYS_PTRACE
// (for root's processes too, whose capabilities exceed a reduced set), the fd
// lists and environ of other users' processes CAP_DAC_READ_SEARCH.
std::string procfs_off(util::CapSet have);

}  // namespace vigil::agent
