// The GPUs' ECC mode from the nvml plugin into the node's posture
// (docs/posture.md, "ECC"). The plugin reads each GPU's mode with
// nvmlDeviceGetEccMode and puts it on its device_sample events; vigil reads
// it back through the plugin's own fields (nvml.device.ecc,
// nvml.device.ecc_pending, nvml.device.index, nvml.device.uuid,
// nvml.devices), the way a rule reads them, so nothing here knows the
// plugin's bytes and no plugin ABI is added: any plugin that gives those
// fields feeds the posture.
//
//   auto fields = EccFields::make(plugins.fields());   // null: no plugin gives them
//   PostureEccTap tap(*fields, posture_source);        // pipeline tap: each whole sample -> set_ecc
//   auto first = first_ecc(*fields, plugin_sources, 3s);   // before the loop, for the ready line
//
// Thread-safety: the pipeline thread (the tap), or the thread that runs the
// steps before the loop starts (first_ecc), which is the same thread: a
// plugin's extractor is only ever called from it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/pipeline/pipeline.h"
#include "engine/posture/ecc.h"
#include "engine/rules/fields.h"

namespace vigil::plugin {
class PluginSource;
}
namespace vigil::posture {
class PostureSource;
}

namespace vigil::agent {

// One GPU of one sample, as the plugin's fields give it.
struct EccReading {
  std::uint64_t ts_ns = 0;    // the sample's time (all its events share it)
  std::uint32_t devices = 0;  // GPUs in the sample; 0 not known
  posture::GpuEcc gpu;
};

class EccFields {
 public:
  // The fields in `catalog` (vigil's and the loaded plugins'); null when
  // nvml.device.ecc or one of the others is missing (no nvml plugin loaded,
  // or one older than ECC).
  static std::unique_ptr<EccFields> make(const rules::FieldCatalog& catalog);

  // The reading an nvml device_sample event holds; nullopt for any other
  // event (a process_sample, another source's, a kernel event).
  std::optional<EccReading> read(const event::Event& ev, const state::EvalContext& ctx);

 private:
  EccFields() = default;
  // The value of a string field ("" when it has none).
  std::string_view text(const rules::FieldDef* f, const state::EvalContext& ctx);
  std::optional<std::int64_t> number(const rules::FieldDef* f, const state::EvalContext& ctx);

  const rules::FieldDef* event_ = nullptr;
  const rules::FieldDef* devices_ = nullptr;
  const rules::FieldDef* index_ = nullptr;
  const rules::FieldDef* uuid_ = nullptr;
  const rules::FieldDef* ecc_ = nullptr;
  const rules::FieldDef* pending_ = nullptr;
  rules::Arena arena_;
};

// On the pipeline: each whole sample of the GPUs' ECC goes to the posture
// source, which reports it when it changed. `fields` and `source` must
// outlive the tap.
class PostureEccTap final : public pipeline::EventTap {
 public:
  PostureEccTap(EccFields& fields, posture::PostureSource& source) : fields_(fields), source_(source) {}
  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;

 private:
  EccFields& fields_;
  posture::PostureSource& source_;
  posture::EccSamples samples_;
};

// Before the loop: the first whole sample of the GPUs' ECC among the events
// the plugins' sources have queued (they stay queued for the pipeline),
// waiting at most `wait` for it; empty when none came in time, or every
// source ended without one (a node without NVML).
std::vector<posture::GpuEcc> first_ecc(EccFields& fields, const std::vector<plugin::PluginSource*>& sources,
                                       std::chrono::milliseconds wait);

}  // namespace vigil::agent
