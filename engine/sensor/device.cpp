#include "engine/sensor/device.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/event/nvidia.h"

namespace vigil::sensor {

std::uint32_t char_major(std::string_view text, std::string_view name) {
  bool in_char = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.starts_with("Character devices:")) {
      in_char = true;
      continue;
    }
    if (line.starts_with("Block devices:")) {
      in_char = false;
      continue;
    }
    if (!in_char) continue;
    auto first = line.find_first_not_of(' ');
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    auto sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::uint32_t major = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + sp, major);
    if (ec != std::errc() || p != line.data() + sp) continue;
    if (line.substr(sp + 1) == name) return major;
  }
  return 0;
}

std::uint32_t read_uvm_major() {
  std::ifstream in("/proc/devices");
  if (!in) return 0;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > (1u << 20)) text.resize(1u << 20);
  return char_major(text, "nvidia-uvm");
}

NvidiaDevice classify_device(std::uint32_t major, std::string_view file_name, std::uint32_t uvm_major) {
  if (major == event::nvidia::kMajor) return NvidiaDevice::kNvidia;
  if (uvm_major != 0 && major == uvm_major) return NvidiaDevice::kUvm;
  if (file_name.starts_with("nvidia")) {
    return file_name.starts_with("nvidia-uvm") ? NvidiaDevice::kUvm : NvidiaDevice::kNvidia;
  }
  return NvidiaDevice::kNone;
}

}  // namespace vigil::sensor
