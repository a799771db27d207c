// The GPUs' ECC mode in the node's posture. vigil does not ask NVML itself:
// the nvml plugin reads each GPU's current and pending mode
// (nvmlDeviceGetEccMode) every interval and puts them on its device_sample
// events (nvml.device.ecc, nvml.device.ecc_pending, with nvml.devices: how
// many GPUs the sample holds). The agent reads those fields as a rule would
// (engine/agent/posture_ecc.h) and hands each reading here; once a sample's
// every GPU has come, the node's ECC is that sample's, and the posture
// source reports it when it differs from the last (docs/posture.md).
//
//   EccSamples s;
//   if (auto gpus = s.add(ts, devices, reading)) view = *gpus;   // a whole sample
//   ecc_summary(*gpus)       -> "on", "off", "mixed", "unsupported", "" (not known)
//   ecc_pending(*gpus)       -> 1 a GPU's mode changes at its next reboot, 0 none, -1 not known
//   ecc_gpus_text(*gpus)     -> "0:GPU-8f...:on,1:GPU-3c...:off->on"
//
// Thread-safety: plain data; EccSamples is one thread's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::posture {

// One GPU's ECC as one sample of the nvml plugin saw it. Modes: "on", "off",
// "unsupported" (the GPU has no ECC memory), "" (NVML could not tell).
struct GpuEcc {
  std::uint32_t index = 0;  // NVML's index
  std::string uuid;         // "GPU-..."; "" when NVML gave none
  std::string current;
  std::string pending;  // the mode after the GPU's next reboot

  bool operator==(const GpuEcc&) const = default;
};

// At most this many GPUs are kept (NVML's plugin samples at most 64).
inline constexpr std::size_t kMaxEccGpus = 64;

// The node's mode over the GPUs whose mode is known: "on" or "off" when every
// GPU with ECC memory is so, "mixed" when some are on and some off,
// "unsupported" when none has ECC memory; "" when no GPU's mode is known (or
// there are none).
std::string ecc_summary(const std::vector<GpuEcc>& gpus);

// 1 when a GPU's pending mode differs from its current one (a reboot will
// change it), 0 when no GPU's does, -1 when no GPU's modes are both known.
std::int32_t ecc_pending(const std::vector<GpuEcc>& gpus);

// One entry per GPU, comma-separated, by index: "<index>:<uuid>:<current>",
// with "-><pending>" appended when the pending mode differs; an unknown mode
// is "unknown". Characters of the UUID that would break the form (',' ':'
// and anything unprintable) become '_'.
std::string ecc_gpus_text(const std::vector<GpuEcc>& gpus);

// The ready line's words after "ECC": "on (2 GPUs)", "mixed (off: GPU 1)",
// "off (1 GPU), GPU 0 on after reboot", "unknown".
std::string ecc_summary_text(const std::vector<GpuEcc>& gpus);

// Gathers the device readings of the plugin's samples. Every reading of one
// sample carries that sample's time; `devices` is how many GPUs the sample
// holds (0 when the plugin does not say). A sample is whole when it has that
// many readings, or, when the count is not known, when a reading of a later
// sample comes. A sample whose readings come out of order or twice is
// dropped: the next one decides.
class EccSamples {
 public:
  // The whole sample this reading completes (sorted by index), or nullopt.
  std::optional<std::vector<GpuEcc>> add(std::uint64_t ts_ns, std::uint32_t devices, GpuEcc gpu);

 private:
  std::uint64_t ts_ = 0;
  std::uint32_t devices_ = 0;
  bool broken_ = false;
  std::vector<GpuEcc> gpus_;
};

}  // namespace vigil::posture
