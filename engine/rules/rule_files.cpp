#include "engine/rules/rule_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace vigil::rules {
namespace {

bool has_yaml_ext(const std::filesystem::path& p) {
  auto e = p.extension().string();
  return e == ".yaml" || e == ".yml";
}

}  // namespace

YamlFiles expand_yaml_paths(const std::vector<std::string>& paths, Diagnostics& d) {
  namespace fs = std::filesystem;
  YamlFiles out;
  for (const auto& path : paths) {
    std::error_code ec;
    fs::path p(path);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> entries;
      for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (has_yaml_ext(it->path()) && it->is_regular_file(type_ec)) entries.push_back(it->path());
      }
      if (ec) {
        d.error(code::kFileRead, Pos{path, 0, 0}, "", "cannot list directory: " + ec.message());
        continue;
      }
      std::sort(entries.begin(), entries.end());
      if (entries.empty()) out.empty_dirs.push_back(path);
      for (const auto& e : entries) out.files.push_back(e.string());
    } else if (fs::exists(p, ec)) {
      out.files.push_back(path);
    } else {
      d.error(code::kFileRead, Pos{path, 0, 0}, "", "no such file or directory");
    }
  }
  return out;
}

}  // namespace vigil::rules
