// Device classification shared by the sensor's user-space side and its tests:
// the same decisions the BPF filter makes on an fd's inode (bpf/progs/fd/*.bpf.c).
#pragma once

#include <cstdint>
#include <string_view>

namespace vigil::sensor {

// The major of the character device named `name` in /proc/devices text
// ("Character devices:\n195 nvidia\n511 nvidia-uvm\n\nBlock devices:..."),
// or 0 when absent. Block devices are not considered.
std::uint32_t char_major(std::string_view proc_devices, std::string_view name);

// Reads /proc/devices and returns char_major(..., "nvidia-uvm"); 0 if none.
std::uint32_t read_uvm_major();

enum class NvidiaDevice { kNone, kNvidia, kUvm };

// How the sensor classifies a character device fd: major 195, the dynamic
// nvidia-uvm major, or (fallback for stand-in nodes) a file name starting
// with "nvidia". Never decided by an ioctl's 'F' type byte.
NvidiaDevice classify_device(std::uint32_t major, std::string_view file_name, std::uint32_t uvm_major);

}  // namespace vigil::sensor
