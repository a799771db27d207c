// Recording what the agent sees: the capture writer's options and its flush
// on every turn of the loop, and the flight recorder's section.
#pragma once

#include <functional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/capture/flight_recorder.h"
#include "engine/capture/writer.h"
#include "engine/util/result.h"

namespace vigil::state {
class State;
}
namespace vigil::runtime {
class Runner;
class CaptureTap;
}  // namespace vigil::runtime

namespace vigil::agent {

// The capture writer's header (this host, named `hostname`) and the state
// snapshot that starts each file, on top of `base` (rotation, block size).
capture::WriterOptions capture_writer_options(const std::string& hostname, const state::State& st,
                                              capture::WriterOptions base = {});

// Flushes the writer on every runner turn (records written before a quiet
// period still reach the disk within its flush interval) and calls
// `on_error` once with the first error of the writer or the tap.
void add_capture_tick(runtime::Runner& runner, capture::CaptureWriter& writer, const runtime::CaptureTap& tap,
                      std::function<void(const Error&)> on_error);

// The `flight_recorder:` section (enabled by default with modest limits;
// captures go to <state_dir>/flight unless `flight_recorder.dir` says otherwise).
Result<capture::FlightRecorderOptions> flight_recorder_options(const YAML::Node& cfg, const std::string& state_dir);

}  // namespace vigil::agent
