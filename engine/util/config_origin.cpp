#include "engine/util/config_origin.h"

#include <algorithm>

namespace vigil {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// True when `a` is a prefix of `b`, part by part.
bool prefix_of(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

ConfigOrigin::ConfigOrigin(std::string file) : file_(std::move(file)) {}

void ConfigOrigin::add_override(std::string_view dotted_key, std::string text) {
  overrides_.push_back({split(dotted_key), std::move(text)});
}

std::string ConfigOrigin::where(const std::vector<std::string>& path, const YAML::Node& node) const {
  // An override at the path or above it replaced what the file had there.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (prefix_of(it->path, path)) return "-o " + it->text;
  }
  const YAML::Mark m = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (m.line >= 0 && m.column >= 0 && !file_.empty()) {
    return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  // No position: the node was made by an override below it (a new section
  // or list entry), the first such override made it.
  for (const Override& o : overrides_) {
    if (prefix_of(path, o.path)) return "-o " + o.text;
  }
  return file_.empty() ? "configuration" : file_;
}

Error ConfigOrigin::error(const std::vector<std::string>& path, const YAML::Node& node, const std::string& why) const {
  const std::string key = display(path);
  return Error::bad_input(where(path, node) + ": " + (key.empty() ? "" : key + ": ") + why);
}

std::string ConfigOrigin::display(const std::vector<std::string>& path) {
  constexpr std::size_t kMaxPart = 64;  // a hostile key is not echoed whole
  std::string out;
  for (const std::string& p : path) {
    if (is_index(p) && !out.empty()) {
      out += "[" + p.substr(0, kMaxPart) + "]";
    } else {
      out += (out.empty() ? "" : ".") + (p.size() > kMaxPart ? p.substr(0, kMaxPart) + "..." : p);
    }
  }
  return out;
}

std::vector<std::string> ConfigOrigin::split(std::string_view dotted) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    std::size_t dot = dotted.find('.', start);
    if (dot == std::string_view::npos) dot = dotted.size();
    parts.emplace_back(dotted.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

}  // namespace vigil
