// Step "stop": each command's orderly stop. Detach the probes first (no new
// events), then finish what records (captures, baselines) and flush the
// outputs; the last log line says what was seen and lost.
#include "engine/agent/steps/steps.h"

#include <cstdio>

#include "engine/agent/baselines.h"
#include "engine/agent/progress.h"
#include "engine/baseline/store.h"
#include "engine/capture/flight_recorder.h"
#include "engine/capture/reader.h"
#include "engine/capture/timeline.h"
#include "engine/metrics/server.h"
#include "engine/pipeline/aggregate.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/pipeline/pipeline.h"
#include "engine/state/pod_watcher.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::agent::steps {

void stop_outputs_on_failure(Agent& a) {
  if (a.router) a.router->shutdown(std::chrono::milliseconds(1000));
}

namespace {

// The state no longer asks the runtime, and the resolver's thread ends.
void stop_runtime_lookups(Agent& a) {
  if (!a.cri) return;
  a.state->set_unnamed_container_hook(nullptr);
  a.cri->stop();
}

}  // namespace

Status stop(Agent& a) {
  const runtime::RunReport& rep = a.report;
  if (a.webserver) a.webserver->stop();
  if (rep.error) a.log->error("event loop: {}", rep.error->message);
  a.runner->close_sources();
  // No more events: the open windows' summaries, then what waits for its
  // pod goes out as it is now.
  if (a.aggregator) a.aggregator->flush();
  if (a.metadata_wait) a.metadata_wait->flush();
  if (a.baselines) log_baseline_errors(a.baselines->save(), *a.log);
  if (a.pods) a.pods->stop();
  stop_runtime_lookups(a);
  if (a.recorder) a.recorder->finish();
  a.state->set_listener(nullptr);
  if (a.writer) {
    if (Status s = a.writer->close(); !s) a.log->error("closing {}: {}", a.opts.capture, s.error().message);
  }
  a.router->shutdown(std::chrono::milliseconds(5000));
  auto ps = a.pipe->stats();
  // drops= is every loss: events the sources lost (sensor, kmsg, plugins)
  // and alerts the outputs lost.
  a.log->info("stopped: {} events, {} alerts, drops={} (sources: {}; outputs: {})", ps.events, ps.alerts,
              rep.drops_total() + a.router->drops_total(), rep.describe_drops(), a.router->describe_drops());
  a.exit_code = rep.exit_code;
  return {};
}

Status stop_capture(Agent& a) {
  const runtime::RunReport& rep = a.report;
  a.runner->close_sources();
  if (a.pods) a.pods->stop();
  stop_runtime_lookups(a);
  a.state->set_listener(nullptr);
  Status closed = a.writer->close();
  const auto& ws = a.writer->stats();
  a.log->info("{} events, {} records, {} bytes in {} file(s); drops={} ({})", ws.events, ws.records, ws.bytes, ws.files,
              rep.drops_total(), rep.describe_drops());
  if (a.write_error) return *a.write_error;
  if (rep.error) return *rep.error;
  if (!closed) return closed.error();
  a.exit_code = rep.exit_code;
  return {};
}

Status stop_replay(Agent& a) {
  const runtime::RunReport& rep = a.report;
  a.progress->done();
  // The end of the capture: the open windows' summaries, so no count is lost.
  if (a.aggregator) a.aggregator->flush();
  std::fflush(stdout);
  if (a.router) a.router->shutdown(std::chrono::milliseconds(5000));
  if (rep.error) return *rep.error;
  const runtime::CaptureSource& src = *a.replay_source;
  const auto& stats = src.stats();
  if (src.truncated()) {
    a.log->warn(
        "{} ends inside a block at byte {} (cut off mid-write): replayed up to the last "
        "whole block",
        a.opts.replay_file, src.reader().truncated_at());
  }
  if (stats.skipped_records) {
    a.log->info("{} records of types this version does not know were skipped", stats.skipped_records);
  }
  const double secs = a.run_secs;
  a.log->info("replayed {} events ({} reported), {} alerts in {:.3f} s ({:.0f} events/s)", stats.events,
              a.selector->reported(), a.pipe->stats().alerts, secs,
              secs > 0 ? static_cast<double>(stats.events) / secs : 0.0);
  if (a.timeline) {
    if (Status s = a.timeline->write_file(a.opts.timeline); !s) return s;
    if (a.timeline->dropped()) {
      a.log->warn("timeline: {} trace events beyond the limit were left out", a.timeline->dropped());
    }
  }
  a.exit_code = rep.exit_code;
  return {};
}

}  // namespace vigil::agent::steps
