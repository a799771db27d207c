#include "engine/rules/rule_files.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace vigil::rules {
namespace {

bool has_yaml_ext(const std::filesystem::path& p) {
  auto e = p.extension().string();
  return e == ".yaml" || e == ".yml";
}

}  // namespace

bool is_rule_test_name(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string stem = p.stem().string();
  constexpr std::string_view kSuffix = "_test";
  return has_yaml_ext(p) && stem.size() > kSuffix.size() &&
         stem.compare(stem.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

YamlFiles expand_yaml_paths(const std::vector<std::string>& paths, Diagnostics& d, YamlKind kind) {
  const bool want_tests = kind == YamlKind::kRuleTests;
  namespace fs = std::filesystem;
  YamlFiles out;
  for (const auto& path : paths) {
    std::error_code ec;
    fs::path p(path);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> entries;
      for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (!has_yaml_ext(it->path()) || is_rule_test_name(it->path().string()) != want_tests) continue;
        if (it->is_regular_file(type_ec)) entries.push_back(it->path());
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
