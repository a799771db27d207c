#include "engine/metrics/event_counters.h"

#include <string_view>

#include "engine/event/alert.h"
#include "engine/event/event.h"
#include "engine/event/nvidia.h"
#include "engine/state/model.h"

namespace vigil::metrics {
namespace {

// Only the pipeline thread writes: a load and a store, no locked add.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

constexpr std::string_view kOther = "_other";

}  // namespace

void EventCounters::on_event(const event::Event& ev, const state::EvalContext& ctx) {
  bump(events_);
  const auto t = static_cast<std::size_t>(ev.hdr.type);
  if (t < by_type_.size()) bump(by_type_[t]);

  // Per-pod GPU use: the sensor's periodic ioctl counts, and opens of the
  // NVIDIA device nodes. Host processes have no pod and are not counted here.
  if (ctx.pod == nullptr) return;
  std::uint64_t ioctls = 0, opens = 0;
  if (const auto* u = ev.as<event::GpuUsageData>()) {
    for (const auto& e : u->entries) ioctls += e.count;
  } else if (const auto* o = ev.as<event::OpenData>()) {
    if (o->is_device && o->dev_major == event::nvidia::kMajor && o->result >= 0) opens = 1;
  }
  if (ioctls == 0 && opens == 0) return;
  std::lock_guard<std::mutex> l(mu_);
  auto key = std::make_pair(ctx.pod->ns, ctx.pod->name);
  auto it = pod_gpu_.find(key);
  if (it == pod_gpu_.end()) {
    if (pod_gpu_.size() >= kMaxPods) key = {std::string(kOther), std::string(kOther)};
    it = pod_gpu_.try_emplace(std::move(key)).first;
  }
  it->second.ioctls += ioctls;
  it->second.opens += opens;
}

void EventCounters::on_alert(const event::Event&, const state::EvalContext&, event::Alert& alert) {
  std::lock_guard<std::mutex> l(mu_);
  auto key = std::make_pair(alert.rule, std::string(event::priority_name(alert.priority)));
  auto it = alerts_.find(key);
  if (it == alerts_.end()) {
    if (alerts_.size() >= kMaxAlertSeries) key.first = std::string(kOther);
    it = alerts_.try_emplace(std::move(key), 0).first;
  }
  ++it->second;
}

std::uint64_t EventCounters::events_of(event::Type t) const {
  const auto i = static_cast<std::size_t>(t);
  return i < by_type_.size() ? by_type_[i].load(std::memory_order_relaxed) : 0;
}

void EventCounters::collect(Exposition& out) const {
  out.family("vigil_events_total", "counter", "Events handed to the rules, by type (evt.type).");
  for (std::size_t i = 1; i < by_type_.size(); ++i) {
    const std::uint64_t n = by_type_[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    out.sample("vigil_events_total", {{"type", event::info(static_cast<event::Type>(i)).name}}, static_cast<double>(n));
  }
  out.family("vigil_alerts_total", "counter", "Alerts raised, by rule and priority.");
  out.family("vigil_pod_gpu_ioctls_total", "counter",
             "NVIDIA driver ioctls by the processes of a pod (the sensor's periodic counts).");
  out.family("vigil_pod_gpu_device_opens_total", "counter",
             "Successful opens of NVIDIA device nodes by the processes of a pod.");
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [k, n] : alerts_) {
    out.sample("vigil_alerts_total", {{"rule", k.first}, {"priority", k.second}}, static_cast<double>(n));
  }
  for (const auto& [k, g] : pod_gpu_) {
    if (g.ioctls) {
      out.sample("vigil_pod_gpu_ioctls_total", {{"namespace", k.first}, {"pod", k.second}},
                 static_cast<double>(g.ioctls));
    }
    if (g.opens) {
      out.sample("vigil_pod_gpu_device_opens_total", {{"namespace", k.first}, {"pod", k.second}},
                 static_cast<double>(g.opens));
    }
  }
}

}  // namespace vigil::metrics
