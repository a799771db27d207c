// NVIDIA devices on the node and GPU allocations of containers.
//
// - read_nvidia_info(): the nvidia-uvm/nvidia-caps majors from /proc/devices and
//   each GPU's UUID and device minor from <nvidia_root>/gpus/*/information.
// - nvidia_node(): whether a device number (or, failing that, a device path
//   named nvidia*) is an NVIDIA node; the name fallback lets test rigs stand in
//   nodes such as "nvidia0" with /dev/null's numbers.
// - resolve_allocation(): the GPUs a pod container was given.
//
// Pure functions except the two readers (which touch only the paths given).
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/state/model.h"

namespace vigil::state {

constexpr std::uint32_t kNvidiaMajor = 195;
constexpr std::uint32_t kNvidiaMaxGpuMinor = 247;
constexpr std::uint32_t kNvidiaCtlMinor = 255;
// A stand-in major for nodes recognised only by name whose real numbers are
// not NVIDIA's (the name fallback). Real majors are 12 bits, so this never
// collides with a real device.
constexpr std::uint32_t kNameOnlyUvmMajor = 0xFFFFF;

// Parses the text of /proc/devices into info's dynamic majors (uvm, caps,
// nvlink, nvswitch).
void parse_proc_devices(std::string_view text, NvidiaInfo* info);
// Parses one "information" file; nullopt when it has no UUID or minor.
std::optional<GpuInfo> parse_gpu_information(std::string_view text, std::string pci);
// The minor of the GPU at `pci` as an Xid line names it ("0000:3b:00",
// domain:bus:device, any case) or as the driver does ("0000:3b:00.0");
// nullopt when no GPU of `info` is there.
std::optional<std::uint32_t> minor_of_pci(std::string_view pci, const NvidiaInfo& info);
// Reads both (bounded: at most 256 GPUs, files of at most 64 KiB).
NvidiaInfo read_nvidia_info(const std::string& proc_devices_path, const std::string& nvidia_root);

enum class NvidiaNodeKind { kNone, kGpu, kCtl, kModeset, kUvm, kUvmTools, kCaps, kNvlink, kNvswitch, kOther };

// "gpu", "ctl", "modeset", "uvm", "uvm-tools", "caps", "nvlink", "nvswitch",
// "other"; "" for kNone.
std::string_view nvidia_node_kind_name(NvidiaNodeKind k);

struct NvidiaNode {
  NvidiaNodeKind kind = NvidiaNodeKind::kNone;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
};

// Classifies a device by number; falls back to the path's basename
// ("nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-cap1", ...) when the number is
// not an NVIDIA one. For a name-only match the numbers are the ones the name
// stands for (nvidia3 → 195:3, nvidiactl → 195:255, nvidia-uvm → uvm major:0).
NvidiaNode nvidia_node(std::uint32_t major, std::uint32_t minor, std::string_view path, const NvidiaInfo& info);

// The allocation of one pod container. GPU indexes are resolved to minors in
// NVML order (GPUs sorted by PCI address) when the GPUs are known, else taken
// as minors; UUIDs (GPU-..., MIG-GPU-<uuid>/gi/ci, "<uuid>::<replica>") through
// info.gpus. Unresolvable ids set `unresolved`.
GpuAllocation resolve_allocation(const PodContainer& pc, const NvidiaInfo& info);

// Whether a container with allocation `a` may use node `n`: driver nodes
// (ctl, uvm, modeset) need any allocation; a GPU node needs its minor in the
// allocation, "all", or an allocation with ids that could not be resolved
// (no evidence which GPU they name). uvm-tools, caps and other nodes are
// never part of an allocation.
bool allocation_allows(const GpuAllocation& a, const NvidiaNode& n);

}  // namespace vigil::state
