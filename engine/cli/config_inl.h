#pragma once
// Template definitions for config.h.
#include <string>

namespace vigil::cli {

namespace detail {
YAML::Node lookup(const YAML::Node& root, std::string_view dotted);
}

template <typename T>
Result<T> get_or(const YAML::Node& root, std::string_view dotted, T def) {
  YAML::Node n = detail::lookup(root, dotted);
  if (!n || n.IsNull()) return def;
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    std::string where;
    if (n.Mark().line >= 0) {
      where = " (line " + std::to_string(n.Mark().line + 1) + ", column " +
              std::to_string(n.Mark().column + 1) + ")";
    }
    return Error::bad_input("config key '" + std::string(dotted) + "' has the wrong type" + where);
  }
}

}  // namespace vigil::cli
