#include "engine/agent/posture_ecc.h"

#include <thread>

#include "engine/plugin/source.h"
#include "engine/posture/source.h"

namespace vigil::agent {
namespace {

// The plugin's mode words; anything else is not known.
std::string mode(std::string_view v) {
  if (v == "on" || v == "off" || v == "unsupported") return std::string(v);
  return {};
}

}  // namespace

std::unique_ptr<EccFields> EccFields::make(const rules::FieldCatalog& catalog) {
  std::unique_ptr<EccFields> f(new EccFields());
  f->event_ = catalog.find("nvml.event");
  f->devices_ = catalog.find("nvml.devices");
  f->index_ = catalog.find("nvml.device.index");
  f->uuid_ = catalog.find("nvml.device.uuid");
  f->ecc_ = catalog.find("nvml.device.ecc");
  f->pending_ = catalog.find("nvml.device.ecc_pending");
  for (const rules::FieldDef* d : {f->event_, f->devices_, f->index_, f->uuid_, f->ecc_, f->pending_}) {
    if (d == nullptr || d->fn == nullptr) return nullptr;
  }
  return f;
}

std::string_view EccFields::text(const rules::FieldDef* f, const state::EvalContext& ctx) {
  rules::FieldInst inst;
  inst.def = f;
  rules::Extracted out;
  f->fn(rules::ExtractCtx{&ctx, &arena_}, inst, out);
  if (out.n == 0 || f->type != rules::FieldType::kString) return {};
  return out.v[0].s;
}

std::optional<std::int64_t> EccFields::number(const rules::FieldDef* f, const state::EvalContext& ctx) {
  rules::FieldInst inst;
  inst.def = f;
  rules::Extracted out;
  f->fn(rules::ExtractCtx{&ctx, &arena_}, inst, out);
  if (out.n == 0 || f->type != rules::FieldType::kUint) return std::nullopt;
  return out.v[0].i;
}

std::optional<EccReading> EccFields::read(const event::Event& ev, const state::EvalContext& ctx) {
  const auto* pd = ev.as<event::PluginData>();
  if (pd == nullptr || pd->name != "device_sample") return std::nullopt;
  arena_.reset();
  if (text(event_, ctx) != "device_sample") return std::nullopt;  // not the plugin these fields read
  auto index = number(index_, ctx);
  if (!index || *index < 0 || *index > UINT32_MAX) return std::nullopt;
  EccReading r;
  r.ts_ns = ev.hdr.ts_ns;
  auto devices = number(devices_, ctx);
  r.devices = devices && *devices > 0 && *devices <= UINT32_MAX ? static_cast<std::uint32_t>(*devices) : 0;
  r.gpu.index = static_cast<std::uint32_t>(*index);
  r.gpu.uuid = std::string(text(uuid_, ctx));
  r.gpu.current = mode(text(ecc_, ctx));
  r.gpu.pending = mode(text(pending_, ctx));
  return r;
}

void PostureEccTap::on_event(const event::Event& ev, const state::EvalContext& ctx) {
  if (ev.hdr.type != event::Type::kPlugin) return;
  auto r = fields_.read(ev, ctx);
  if (!r) return;
  if (auto gpus = samples_.add(r->ts_ns, r->devices, std::move(r->gpu))) source_.set_ecc(std::move(*gpus));
}

std::vector<posture::GpuEcc> first_ecc(EccFields& fields, const std::vector<plugin::PluginSource*>& sources,
                                       std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    bool running = false;
    for (plugin::PluginSource* s : sources) {
      posture::EccSamples samples;
      for (const event::Event& ev : s->peek(8192)) {
        state::EvalContext ctx;
        ctx.ev = &ev;
        auto r = fields.read(ev, ctx);
        if (!r) continue;
        if (auto gpus = samples.add(r->ts_ns, r->devices, std::move(r->gpu))) return std::move(*gpus);
      }
      running |= s->health() == source::EventSource::Health::kRunning;
    }
    if (!running || std::chrono::steady_clock::now() >= until) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace vigil::agent
