#include "engine/agent/own_paths.h"

#include <algorithm>
#include <filesystem>

#include "engine/agent/recording.h"
#include "engine/config/config.h"

namespace vigil::agent {
using config::get_or;

namespace {
// Each path absolute, and its real path where a symlink makes that differ;
// no duplicates, no trailing '/'.
std::vector<std::string> absolute_and_real(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  auto add = [&](const std::filesystem::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  for (const std::string& g : given) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(g, ec);
    if (ec) continue;
    add(abs);
    auto real = std::filesystem::weakly_canonical(abs, ec);
    if (!ec) add(real);
  }
  return out;
}
}  // namespace

std::vector<std::string> own_paths(const std::string& config, const std::vector<std::string>& rules,
                                   const YAML::Node& cfg, const std::string& capture) {
  std::vector<std::string> given;
  if (!config.empty()) given.push_back(config);
  given.insert(given.end(), rules.begin(), rules.end());
  auto state_dir = get_or<std::string>(cfg, "state_dir", "/var/lib/vigil");
  if (state_dir) {
    given.push_back(*state_dir);
    if (auto fr = flight_recorder_options(cfg, *state_dir); fr && fr->enabled) given.push_back(fr->dir);
  }
  if (!capture.empty()) given.push_back(capture);
  return absolute_and_real(given);
}

std::vector<std::string> own_files(const std::string& config, const std::vector<std::string>& rules,
                                   const std::string& capture) {
  std::vector<std::string> given;
  if (!config.empty()) given.push_back(config);
  for (const std::string& r : rules) {
    std::error_code ec;
    if (!std::filesystem::is_directory(r, ec)) {
      given.push_back(r);
      continue;
    }
    std::size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(r, ec);
         !ec && it != std::filesystem::directory_iterator() && n < 64; it.increment(ec), ++n) {
      const auto ext = it->path().extension();
      if (ext == ".yaml" || ext == ".yml") given.push_back(it->path().string());
    }
  }
  if (!capture.empty()) given.push_back(capture);
  return absolute_and_real(given);
}

}  // namespace vigil::agent
