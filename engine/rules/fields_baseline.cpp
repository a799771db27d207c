// The baseline fields (docs/baselines.md): what the event's workload profile
// says about the event. They read state::BaselineView, which the pipeline
// fills before the rules run; with baselines off it is absent and every one
// of them says so (baseline.state = none, the others no value).
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

namespace {

using X = ExtractCtx;
using F = FieldInst;
using E = Extracted;

void x_baseline_state(const X& x, const F&, E& o) noexcept {
  const state::BaselineView* b = x.ctx->baseline;
  const state::BaselinePhase p = b ? b->phase(*x.ctx) : state::BaselinePhase::kNone;
  o.add().s = p == state::BaselinePhase::kLocked     ? "locked"
              : p == state::BaselinePhase::kLearning ? "learning"
                                                     : "none";
}

void x_baseline_workload(const X& x, const F&, E& o) noexcept {
  if (const state::BaselineView* b = x.ctx->baseline) {
    std::string_view w = b->workload(*x.ctx);
    if (!w.empty()) o.add().s = w;
  }
}

template <state::BaselineFact kFact>
void x_in_baseline(const X& x, const F&, E& o) noexcept {
  const state::BaselineView* b = x.ctx->baseline;
  if (!b) return;
  switch (b->has(*x.ctx, kFact)) {
    case state::BaselineAnswer::kIn: o.add().b = true; return;
    case state::BaselineAnswer::kOut: o.add().b = false; return;
    case state::BaselineAnswer::kNoValue: return;
  }
}

}  // namespace

// Appended to the built-in catalogue (fields.cpp).
void append_baseline_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  constexpr std::string_view kLocked =
      " Has a value only when the workload's profile is locked (baseline.state = locked); no value "
      "while it learns, for host processes, and with baselines off.";
  static const std::string kExe =
      std::string(
          "The program run is in the workload's baseline: its path (proc.exepath) was run while the profile "
          "learnt and, when both the event and the profile have SHA-256s for that path (proc.exe_sha256), "
          "its hash is one of them: a different program at a known path is a deviation. On a plugin's event "
          "about a process (an NVML sample of what computes on a GPU), the same question for that process's "
          "program.") +
      std::string(kLocked);
  static const std::string kSip =
      std::string(
          "The outbound destination is in the workload's baseline: the server address, within the network "
          "learnt (baseline.v4_prefix/v6_prefix, /24 and /64 by default), with the same port and protocol.") +
      std::string(kLocked);
  static const std::string kName =
      std::string(
          "The file opened for writing is in the workload's baseline (the same path written while it "
          "learnt). Only successful opens for writing of files under baseline.watch_paths have a value.") +
      std::string(kLocked);
  static const std::string kClass =
      std::string("The NVIDIA RM class allocated (gpu.class) is in the workload's baseline.") + std::string(kLocked);
  fields.push_back({"baseline.state", T::kString, A::kNone, false, "*",
                    "The event's workload profile: locked (deviations are reported), learning, or none (a host "
                    "process, a container whose workload is not known yet or past baseline.max_workloads, or "
                    "baselines off).",
                    x_baseline_state});
  fields.push_back({"baseline.workload", T::kString, A::kNone, false, "*",
                    "The event's workload key (by baseline.key: image, image_digest or owner); no value when "
                    "baseline.state = none.",
                    x_baseline_workload});
  fields.push_back({"proc.exepath.in_baseline", T::kBool, A::kNone, false, "execve, pluginevent", kExe,
                    x_in_baseline<state::BaselineFact::kExe>});
  fields.push_back({"fd.sip.in_baseline", T::kBool, A::kNone, false, "connect, sendto, sendmsg", kSip,
                    x_in_baseline<state::BaselineFact::kDestination>});
  fields.push_back({"fd.name.in_baseline", T::kBool, A::kNone, false, "open, openat, openat2, creat", kName,
                    x_in_baseline<state::BaselineFact::kFile>});
  fields.push_back({"gpu.class.in_baseline", T::kBool, A::kNone, false, "ioctl", kClass,
                    x_in_baseline<state::BaselineFact::kGpuClass>});
}

}  // namespace vigil::rules
