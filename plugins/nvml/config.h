// The nvml plugin's init_config: which NVML library to load, how often to
// sample, and how much one sample may hold.
//
//   {"nvml_library": "libnvidia-ml.so.1", "interval": "1s", "max_processes": 1024}
//
// Every key is optional; an unknown key, a wrong type or a value out of range
// is an error that names the key.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::nvml {

struct Config {
  static constexpr std::chrono::milliseconds kMinInterval{100};
  static constexpr std::chrono::milliseconds kMaxInterval{3600 * 1000};
  static constexpr std::uint32_t kMaxProcessesLimit = 4096;

  std::string nvml_library = "libnvidia-ml.so.1";
  std::chrono::milliseconds interval{1000};
  // Processes reported per device per sample; the rest are counted
  // (nvml.device.processes_dropped).
  std::uint32_t max_processes = 1024;
};

// "500ms", "1s", "2m", "1h": a positive integer and a unit. nullopt when the
// text is not one (no bounds check here).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Parses init_config (a JSON object; NULL, empty or blank text means
// defaults). On failure returns nullopt and sets `error` to one line.
std::optional<Config> parse_config(const char* json, std::string& error);

}  // namespace vigil::nvml
