// Step "start loop": the runner, first of all, so that it blocks the signals
// before any thread starts (output workers, the pod watcher) and every thread
// inherits the mask.
#include "engine/agent/steps/steps.h"

#include "engine/capture/writer.h"

namespace vigil::agent::steps {

Status start_loop(Agent& a) {
  runtime::RunnerOptions ropts;
  ropts.log = a.log;
  ropts.duration_ns = a.opts.duration_ns;
  if (a.opts.size_bytes) {  // capture --size, once the writer exists
    ropts.stop_when = [&a, size = a.opts.size_bytes] { return a.writer && a.writer->stats().bytes >= size; };
  }
  if (a.opts.command == Command::kRun) {
    ropts.reload = [&a](const std::atomic<bool>& cancel) { return reload(a, cancel); };
  }
  auto runner = runtime::Runner::create(ropts);
  if (!runner) return runner.error();
  a.runner = std::move(*runner);
  return {};
}

}  // namespace vigil::agent::steps
