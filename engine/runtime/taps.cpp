#include "engine/runtime/taps.h"

#include "engine/rules/filter.h"

namespace vigil::runtime {

capture::Snapshot snapshot_of(const state::State& st) {
  capture::Snapshot s;
  s.nvidia = st.nvidia();
  s.processes = st.processes();
  s.containers = st.containers();
  s.pods = st.pods();
  s.removed_pods = st.removed_pods();
  return s;
}

void CaptureTap::on_event(const event::Event& ev, const state::EvalContext& ctx) {
  if (!status_) return;
  if (filter_ && !filter_->accepts(ctx)) {
    ++filtered_out_;
    return;
  }
  if (Status s = w_.write_event(ev); !s) status_ = s;
}

FlightRecorderTap::FlightRecorderTap(capture::FlightRecorder& fr, const state::State& st) : fr_(fr) {
  // The state usually read the NVIDIA devices before the recorder became its
  // listener (seed_from_proc runs first): hand the recorder what it has now.
  fr_.on_nvidia(st.nvidia());
}

void FlightRecorderTap::on_event(const event::Event& ev, const state::EvalContext& ctx) { fr_.on_event(ev, ctx); }

void FlightRecorderTap::on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert) {
  fr_.on_alert(ev, ctx, alert);
}

}  // namespace vigil::runtime
