#include "config.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace vigil::nvml {

namespace {

constexpr std::size_t kMaxLibraryPath = 4096;

bool blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::size_t i = 0;
  std::uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (n > std::numeric_limits<std::uint64_t>::max() / 10 / 3600000) return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0 || i > 12) return std::nullopt;
  std::string_view unit = text.substr(i);
  std::uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60 * 1000;
  else if (unit == "h") scale = 3600 * 1000;
  else return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(n * scale));
}

std::optional<Config> parse_config(const char* json, std::string& error) {
  Config cfg;
  if (json == nullptr || blank(json)) return cfg;
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    error = "init_config is not valid JSON";
    return std::nullopt;
  }
  if (doc.is_null()) return cfg;
  if (!doc.is_object()) {
    error = "init_config must be a JSON object, e.g. {\"interval\": \"1s\"}";
    return std::nullopt;
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "nvml_library") {
      if (!value.is_string()) {
        error = "nvml_library must be a string (a library name or path)";
        return std::nullopt;
      }
      const auto& s = value.get_ref<const std::string&>();
      if (s.empty() || s.size() > kMaxLibraryPath || s.find('\0') != std::string::npos) {
        error = "nvml_library must be a non-empty path of at most 4096 bytes";
        return std::nullopt;
      }
      cfg.nvml_library = s;
    } else if (key == "interval") {
      if (!value.is_string()) {
        error = "interval must be a string with a unit, e.g. \"1s\" or \"500ms\"";
        return std::nullopt;
      }
      auto d = parse_duration(value.get_ref<const std::string&>());
      if (!d) {
        error = "interval '" + value.get<std::string>().substr(0, 64) +
                "' is not a duration: use an integer and ms, s, m or h (\"500ms\", \"1s\")";
        return std::nullopt;
      }
      if (*d < Config::kMinInterval || *d > Config::kMaxInterval) {
        error = "interval must be between 100ms and 1h";
        return std::nullopt;
      }
      cfg.interval = *d;
    } else if (key == "max_processes") {
      // JSON integers arrive signed or unsigned; both are bounded the same way.
      bool in_range = value.is_number_unsigned()
                          ? value.get<std::uint64_t>() >= 1 && value.get<std::uint64_t>() <= Config::kMaxProcessesLimit
                          : value.is_number_integer() && value.get<std::int64_t>() >= 1 &&
                                value.get<std::int64_t>() <= Config::kMaxProcessesLimit;
      if (!in_range) {
        error = "max_processes must be an integer from 1 to 4096";
        return std::nullopt;
      }
      cfg.max_processes = value.get<std::uint32_t>();
    } else {
      error = "unknown key '" + key.substr(0, 64) + "' (known: nvml_library, interval, max_processes)";
      return std::nullopt;
    }
  }
  return cfg;
}

}  // namespace vigil::nvml
