// NVIDIA driver numbers decoded to names, for the sensor, the rule fields and
// the outputs. Facts from ../shared/reference/nvidia.md (escape numbers, RM
// classes and controls, UVM ioctls, device majors/minors).
//
// All functions are pure and thread-safe. Names are returned as views of
// static strings; an unknown number gives "". The name functions know the
// decoder's own tables below and every row of the driver surface table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vigil::event::nvidia {

constexpr std::uint32_t kMajor = 195;         // /dev/nvidia*, nvidiactl, modeset
constexpr std::uint32_t kCtlMinor = 255;      // /dev/nvidiactl
constexpr std::uint32_t kModesetMinor = 254;  // /dev/nvidia-modeset
constexpr std::uint32_t kMaxGpuMinor = 247;   // /dev/nvidia0 .. /dev/nvidia247
constexpr std::uint32_t kEscRmControl = 0x2A;
constexpr std::uint32_t kEscRmAlloc = 0x2B;
constexpr std::uint32_t kEscXferCmd = 0xD3;

// NV_ESC_* escape name for an ioctl nr ("NV_ESC_RM_ALLOC"), "" if unknown.
std::string_view escape_name(std::uint32_t nr);
std::optional<std::uint32_t> escape_from_name(std::string_view name);

// UVM ioctl name for a raw UVM cmd ("UVM_INITIALIZE"), "" if unknown.
std::string_view uvm_ioctl_name(std::uint32_t cmd);

// RM class name for an hClass ("AMPERE_COMPUTE_A"), "" if unknown.
std::string_view class_name(std::uint32_t cls);
std::optional<std::uint32_t> class_from_name(std::string_view name);

// What an allocated class means: "compute", "channel", "graphics", "copy",
// "video", "memory", "device", "mig", "debugger", "profiler", "p2p", "client",
// "event", "other" ("" for unknown classes).
std::string_view class_kind(std::uint32_t cls);
// True for compute and channel classes (the "sent one by one" allocations).
bool is_compute_or_channel(std::uint32_t cls);

// RM control command name ("NV2080_CTRL_CMD_PERF_SET_POWERSTATE"), "" if unknown.
std::string_view control_name(std::uint32_t cmd);
// What a control changes: "clock", "power", "ecc", "reset", "mig", "other"
// ("" for unknown commands). Used by rules on management from containers.
std::string_view control_kind(std::uint32_t cmd);

// The driver surface table (engine/event/nvidia_surface.tsv, one row per fact
// with its source): every escape, UVM command, RM class and RM control that
// CUDA, NVML and the NVIDIA tools are known to use, per driver branch, and the
// surface each belongs to ("workload", "graphics", "video", "rdma", "fabric",
// "profiler", "debugger", "mig", "management", "internal", "other").
enum class Part : std::uint8_t { kEscape, kUvm, kClass, kControl };
struct SurfaceRow {
  std::uint32_t value;
  std::string_view name;
  std::string_view branches;  // "535-595", "570,580"
  std::string_view surface;
};
// The row of a number, nullptr when the table does not know it.
const SurfaceRow* surface_row(Part part, std::uint32_t value);
// Every row of a kind, sorted by number.
std::span<const SurfaceRow> surface_rows(Part part);
// Surfaces a workload container is given by its driver capabilities
// (compute, utility, graphics, video) and GPUDirect RDMA: workload, graphics,
// video, rdma. The others are for profilers, debuggers and host tools.
bool surface_allowed_for_workload(std::string_view surface);

// The conventional device path for a device number: "/dev/nvidia0",
// "/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm",
// "/dev/nvidia-uvm-tools"; "" when the number is not an NVIDIA device.
// uvm_major is the dynamic nvidia-uvm major (0 when the driver is absent).
std::string device_path(std::uint32_t major, std::uint32_t minor, std::uint32_t uvm_major);

// The GPU index of a device path "/dev/nvidiaN" (N), or -1.
int gpu_index_from_path(std::string_view path);

}  // namespace vigil::event::nvidia
