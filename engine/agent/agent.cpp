#include "engine/agent/agent.h"

#include "engine/agent/prevention.h"

#include "engine/agent/log.h"
#include "engine/agent/posture_ecc.h"
#include "engine/agent/progress.h"
#include "engine/baseline/store.h"
#include "engine/capture/flight_recorder.h"
#include "engine/capture/reader.h"
#include "engine/capture/timeline.h"
#include "engine/metrics/health.h"
#include "engine/metrics/server.h"
#include "engine/pipeline/aggregate.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plugin/host.h"
#include "engine/rules/filter.h"
#include "engine/runtime/file_watch.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/pod_watcher.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::agent {
namespace {

const char* logger_name(Command c) {
  switch (c) {
    case Command::kRun: return "vigil";
    case Command::kCapture: return "capture";
    case Command::kReplay: return "replay";
  }
  return "vigil";
}

}  // namespace

Agent::Agent(Options o) : opts(std::move(o)), log(make_logger(logger_name(opts.command), opts.log_level)) {}

Agent::~Agent() = default;

}  // namespace vigil::agent
