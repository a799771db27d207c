// The sensor's hook table: each BPF program of bpf/progs, where it attaches
// and which event types need it (hooks.cpp). sensor.cpp loads and attaches
// the hooks a ruleset wants. Internal to engine/sensor.
#pragma once

#include <vector>

#include "engine/event/event.h"

namespace vigil::sensor {

// How a program is attached.
// kSyscallEnter: a program shared by several sys_enter tracepoints (the
// Hook's `tracepoint` names which).
enum class AttachKind { kAuto, kCgroup, kXidTracepoint, kSyscallEnter };

struct Hook {
  const char* prog;  // program name in bpf/progs
  const char* name;  // what attached() reports
  AttachKind kind;
  std::vector<event::Type> needed_by;  // empty: always attached
  const char* tracepoint;              // "category/name" that must exist (tracepoint programs)
  bool optional;                       // missing on this kernel: skip instead of failing
};
// Every hook, in the order they are attached.
const std::vector<Hook>& hooks();

}  // namespace vigil::sensor
