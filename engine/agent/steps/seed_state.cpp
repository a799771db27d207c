// Step "seed state": the live state, seeded from /proc (a failure is a
// warning: events fill it in). Records the parts it reads through: "procfs"
// (other processes' /proc entries: off without the capabilities) and
// "gpu_inventory" (/proc/driver/nvidia/gpus).
#include "engine/agent/steps/steps.h"

#include <dirent.h>

#include <cerrno>
#include <string_view>

#include "engine/agent/k8s.h"
#include "engine/agent/parts.h"
#include "engine/state/state.h"
#include "engine/util/caps.h"

namespace vigil::agent::steps {
namespace {

// Where State reads the GPU table (state::Config's default nvidia_root).
constexpr std::string_view kNvidiaProcRoot = "/proc/driver/nvidia";

void record_proc_parts(spdlog::logger& log, runtime::Parts& parts) {
  const util::CapSet caps = util::effective_caps().value_or(util::CapSet::all());
  const std::string proc_off = procfs_off(caps);
  record_part(parts, log, "procfs", proc_off.empty(), proc_off);
  // The GPU table comes from the driver's files (State::load_nvidia, below).
  const std::string gpus = std::string(kNvidiaProcRoot) + "/gpus";
  if (DIR* d = ::opendir(gpus.c_str())) {
    ::closedir(d);
    record_part(parts, log, "gpu_inventory", true);
  } else {
    record_part(parts, log, "gpu_inventory", false,
                open_failure(gpus, errno, "no NVIDIA driver loaded on this node", caps, {}));
  }
}

}  // namespace

Status seed_state(Agent& a) {
  state::Config sc;
  if (Status st = retention(a.cfg, sc); !st) return st;
  a.state = std::make_unique<state::State>(std::move(sc));
  record_proc_parts(*a.log, a.parts);
  if (Status s = a.state->seed_from_proc(); !s) {
    a.log->warn("seeding the process table from /proc: {}", s.error().message);
  }
  a.log->info("process table seeded: {} processes", a.state->process_count());
  return {};
}

}  // namespace vigil::agent::steps
