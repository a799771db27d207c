// posture.*: the node's GPU security posture (gpu_posture events,
// engine/posture): driver and toolkit versions, the CVEs of NVIDIA's
// bulletins that apply, the driver's and the toolkit's security settings, the
// GPUs' ECC mode (from the nvml plugin), and pod containers that ask for GPUs
// through their environment.
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

constexpr std::string_view kPostureEv = "gpu_posture";

const event::PostureData* posture(const X& x) noexcept { return ev(x).as<event::PostureData>(); }

// A tri-state fact as rules compare it: "true", "false" or "unknown".
std::string_view tri(std::int32_t v) noexcept { return v == 1 ? "true" : v == 0 ? "false" : "unknown"; }

template <std::string event::PostureData::*M_>
void x_text(const X& x, const F&, E& o) noexcept {
  if (auto* p = posture(x)) str(o, p->*M_);
}
// Not known: no value (an output prints <NA>).
template <std::string event::PostureData::*M_>
void x_known(const X& x, const F&, E& o) noexcept {
  if (auto* p = posture(x); p && !(p->*M_).empty()) str(o, p->*M_);
}
template <std::int32_t event::PostureData::*M_>
void x_tri(const X& x, const F&, E& o) noexcept {
  if (auto* p = posture(x)) str(o, tri(p->*M_));
}
void x_branch(const X& x, const F&, E& o) noexcept {
  auto* p = posture(x);
  if (!p || p->driver_version.empty()) return;
  std::string_view v = p->driver_version;
  str(o, v.substr(0, v.find('.')));
}
void x_cves(const X& x, const F&, E& o) noexcept {
  auto* p = posture(x);
  if (!p) return;
  std::string_view v = p->vulnerable;
  while (!v.empty() && o.n < Extracted::kMax) {
    std::size_t c = v.find(',');
    if (c != 0) str(o, v.substr(0, c));
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}
void x_ecc(const X& x, const F&, E& o) noexcept {
  if (auto* p = posture(x)) str(o, p->ecc.empty() ? std::string_view("unknown") : p->ecc);
}
// Each GPU's entry of ecc_gpus ("0:GPU-...:off->on").
template <typename Fn>
void each_ecc_gpu(std::string_view v, Fn fn) noexcept {
  while (!v.empty()) {
    std::size_t c = v.find(',');
    if (c != 0) fn(v.substr(0, c));
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}
void x_ecc_gpus(const X& x, const F&, E& o) noexcept {
  auto* p = posture(x);
  if (!p) return;
  each_ecc_gpu(p->ecc_gpus, [&o](std::string_view g) {
    if (o.n < Extracted::kMax) str(o, g);
  });
}
// true: a GPU's pending mode differs from its current one (its entry has
// "->"); false: none does; unknown: no GPU's ECC is known.
void x_ecc_pending(const X& x, const F&, E& o) noexcept {
  auto* p = posture(x);
  if (!p) return;
  if (p->kind != "node" || p->ecc_gpus.empty()) {
    str(o, "unknown");
    return;
  }
  bool pending = false;
  each_ecc_gpu(p->ecc_gpus, [&pending](std::string_view g) { pending |= g.find("->") != std::string_view::npos; });
  str(o, pending ? "true" : "false");
}

}  // namespace

void append_posture_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  using P = event::PostureData;
  fields.insert(
      fields.end(),
      {
          {"posture.kind", T::kString, A::kNone, false, kPostureEv,
           "What the event reports: node (the node's posture) or pod (a pod container whose environment asks for "
           "GPUs it did not request).",
           x_text<&P::kind>},
          {"posture.changed", T::kString, A::kNone, false, kPostureEv,
           "The facts that changed since the last report, space-separated: driver, toolkit, vulnerable, profiling, "
           "accept_envvar, cuda_compat, runtime, ecc (every one in the first report after vigil starts).",
           x_text<&P::changed>},
          {"posture.driver_version", T::kString, A::kNone, false, kPostureEv,
           "The NVIDIA kernel driver's version (/proc/driver/nvidia/version, /sys/module/nvidia/version); no value "
           "when not known.",
           x_known<&P::driver_version>},
          {"posture.driver_branch", T::kString, A::kNone, false, kPostureEv,
           "The driver's branch: the first number of its version (580).", x_branch},
          {"posture.toolkit_version", T::kString, A::kNone, false, kPostureEv,
           "The NVIDIA Container Toolkit's version (the host's package database); no value when not known.",
           x_known<&P::toolkit_version>},
          {"posture.vulnerable", T::kString, A::kNone, false, kPostureEv,
           "The CVEs of NVIDIA's bulletins (engine/posture/nvidia_bulletins.h) whose first fixed version is newer "
           "than the installed driver or toolkit, comma-separated; empty when none.",
           x_text<&P::vulnerable>},
          {"posture.cves", T::kList, A::kNone, false, kPostureEv, "posture.vulnerable as a list.", x_cves},
          {"posture.profiling_admin_only", T::kString, A::kNone, false, kPostureEv,
           "The driver restricts GPU performance counters to administrators (RmProfilingAdminOnly in "
           "/proc/driver/nvidia/params): true, false or unknown.",
           x_tri<&P::profiling_admin_only>},
          {"posture.accept_envvar", T::kString, A::kNone, false, kPostureEv,
           "The toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers "
           "(accept-nvidia-visible-devices-envvar-when-unprivileged in its config.toml; the toolkit's default, "
           "true, when the key is absent): true, false or unknown.",
           x_tri<&P::accept_envvar>},
          {"posture.cuda_compat_hook", T::kString, A::kNone, false, kPostureEv,
           "The toolkit runs its enable-cuda-compat hook (features.disable-cuda-compat-lib-hook is not true): true, "
           "false or unknown.",
           x_tri<&P::cuda_compat_hook>},
          {"posture.runtime", T::kString, A::kNone, false, kPostureEv,
           "The low-level runtime the toolkit runs: the first of its configured runtimes installed on the host "
           "(runc, crun); no value when not known.",
           x_known<&P::runtime>},
          {"posture.ecc", T::kString, A::kNone, false, kPostureEv,
           "The GPUs' current ECC mode, read by the nvml plugin: on or off (every GPU with ECC memory), mixed "
           "(some on, some off), unsupported (no GPU has ECC memory), or unknown (the plugin is not loaded, or "
           "NVML did not tell).",
           x_ecc},
          {"posture.ecc_pending", T::kString, A::kNone, false, kPostureEv,
           "A GPU's ECC mode changes at its next reboot (its pending mode differs from its current one): true, "
           "false or unknown.",
           x_ecc_pending},
          {"posture.ecc_gpus", T::kList, A::kNone, false, kPostureEv,
           "Each GPU's ECC as index:uuid:mode (0:GPU-8f...:on), with ->mode appended when its mode after the next "
           "reboot differs (1:GPU-3c...:off->on); modes on, off, unsupported, unknown. Empty when not known.",
           x_ecc_gpus},
          {"posture.container", T::kString, A::kNone, false, kPostureEv,
           "Pod reports: the container whose environment asks for GPUs.", x_known<&P::container>},
          {"posture.visible_devices", T::kString, A::kNone, false, kPostureEv,
           "Pod reports: the container's NVIDIA_VISIBLE_DEVICES.", x_known<&P::visible_devices>},
      });
}

}  // namespace vigil::rules
