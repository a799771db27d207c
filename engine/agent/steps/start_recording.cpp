// Steps "start recording" (vigil run: a capture of the whole run with
// --capture, and the flight recorder around alerts, both state listeners
// through one fanout) and "start capture file" (vigil capture: the file,
// the state's listener, its tap with --filter).
#include "engine/agent/steps/steps.h"

#include "engine/agent/host_name.h"
#include "engine/agent/recording.h"
#include "engine/capture/flight_recorder.h"
#include "engine/state/state.h"
#include "engine/util/safe_file.h"

namespace vigil::agent::steps {
namespace {

Status start_run_capture(Agent& a) {
  if (a.opts.capture.empty()) return {};
  auto w = capture::CaptureWriter::open(a.opts.capture, capture_writer_options(a.hostname, *a.state));
  if (!w) return w.error();
  a.writer = std::move(*w);
  a.listeners.add(a.writer.get());
  a.capture_tap = std::make_unique<runtime::CaptureTap>(*a.writer);
  add_capture_tick(*a.runner, *a.writer, *a.capture_tap, [&a](const Error& e) {
    a.log->error("capture to {} stopped (detection goes on): {}", a.opts.capture, e.message);
  });
  a.log->info("recording events to {}", a.opts.capture);
  return {};
}

Status start_flight_recorder(Agent& a) {
  auto fr_opts = flight_recorder_options(a.cfg, a.state_dir);
  if (!fr_opts) return fr_opts.error();
  if (!fr_opts->enabled) return {};
  // 0700 whatever the umask; a directory others could write to is refused
  // (exit 2), one that cannot be made only turns the recorder off.
  Status made = util::make_dirs(fr_opts->dir, util::kDirMode);
  if (!made && made.error().kind == Error::Kind::kBadInput) {
    return Error::bad_input("flight recorder: " + made.error().message);
  }
  if (!made) {
    a.log->warn("flight recorder off: cannot create {}: {}", fr_opts->dir, made.error().message);
    return {};
  }
  fr_opts->info = capture::describe_host();
  fr_opts->info.hostname = a.hostname;
  a.recorder = std::make_unique<capture::FlightRecorder>(*fr_opts);
  a.listeners.add(a.recorder.get());
  a.recorder_tap = std::make_unique<runtime::FlightRecorderTap>(*a.recorder, *a.state);
  return {};
}

}  // namespace

Status start_recording(Agent& a) {
  if (Status s = start_run_capture(a); !s) return s;
  if (Status s = start_flight_recorder(a); !s) return s;
  a.state->set_listener(&a.listeners);
  return {};
}

Status start_capture_file(Agent& a) {
  a.hostname = host_name(a.cfg);
  auto w = capture::CaptureWriter::open(a.opts.write, capture_writer_options(a.hostname, *a.state, a.opts.writer));
  if (!w) return w.error();
  a.writer = std::move(*w);
  a.state->set_listener(a.writer.get());
  a.capture_tap = std::make_unique<runtime::CaptureTap>(*a.writer, a.filter.get());
  add_capture_tick(*a.runner, *a.writer, *a.capture_tap, [&a](const Error& e) {
    a.write_error = e;
    a.runner->stop(1, e.message);
  });
  return {};
}

}  // namespace vigil::agent::steps
