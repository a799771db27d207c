#include "engine/agent/recording.h"

#include <memory>

#include "engine/config/config.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/state/state.h"

namespace vigil::agent {
using config::get_or;

capture::WriterOptions capture_writer_options(const std::string& hostname, const state::State& st,
                                              capture::WriterOptions base) {
  base.info = capture::describe_host();
  base.info.hostname = hostname;
  base.snapshot = [&st] { return runtime::snapshot_of(st); };
  return base;
}

void add_capture_tick(runtime::Runner& runner, capture::CaptureWriter& writer, const runtime::CaptureTap& tap,
                      std::function<void(const Error&)> on_error) {
  auto failed = std::make_shared<bool>(false);
  runner.add_tick("capture flush", std::chrono::nanoseconds(0),
                  [&writer, &tap, failed, on_error = std::move(on_error)](std::uint64_t) {
                    if (*failed) return;
                    Status s = writer.tick();
                    if (s) s = tap.status();
                    if (!s) {
                      *failed = true;
                      on_error(s.error());
                    }
                  });
}

Result<capture::FlightRecorderOptions> flight_recorder_options(const YAML::Node& cfg, const std::string& state_dir) {
  capture::FlightRecorderOptions o;
  o.dir = state_dir + "/flight";
  auto enabled = get_or<bool>(cfg, "flight_recorder.enabled", o.enabled);
  if (!enabled) return enabled.error();
  o.enabled = *enabled;
  auto dir = get_or<std::string>(cfg, "flight_recorder.dir", o.dir);
  if (!dir) return dir.error();
  o.dir = *dir;
  auto window = get_or<double>(cfg, "flight_recorder.window_s", o.window_ns / 1e9);
  if (!window) return window.error();
  auto after = get_or<double>(cfg, "flight_recorder.after_s", o.after_ns / 1e9);
  if (!after) return after.error();
  o.window_ns = static_cast<std::uint64_t>(*window * 1e9);
  o.after_ns = static_cast<std::uint64_t>(*after * 1e9);
  auto mem = get_or<std::uint32_t>(cfg, "flight_recorder.max_mib", static_cast<std::uint32_t>(o.max_bytes >> 20));
  if (!mem) return mem.error();
  o.max_bytes = static_cast<std::size_t>(*mem) << 20;
  auto disk =
      get_or<std::uint32_t>(cfg, "flight_recorder.max_disk_mib", static_cast<std::uint32_t>(o.max_disk_bytes >> 20));
  if (!disk) return disk.error();
  o.max_disk_bytes = static_cast<std::uint64_t>(*disk) << 20;
  auto keep = get_or<std::uint32_t>(cfg, "flight_recorder.keep", static_cast<std::uint32_t>(o.keep));
  if (!keep) return keep.error();
  o.keep = *keep;
  auto prio =
      get_or<std::string>(cfg, "flight_recorder.min_priority", std::string(event::priority_name(o.min_priority)));
  if (!prio) return prio.error();
  auto p = event::priority_from_name(*prio);
  if (!p) return Error::bad_input("config key 'flight_recorder.min_priority': unknown priority '" + *prio + "'");
  o.min_priority = *p;
  return o;
}

}  // namespace vigil::agent
