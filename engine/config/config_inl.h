#pragma once
// Template definitions for config.h.
#include <string>

namespace vigil::config {

namespace detail {
YAML::Node lookup(const YAML::Node& root, std::string_view dotted);
// The schema's verdict on the value of `dotted` ("" when fine or unknown to it).
std::string schema_problem(std::string_view dotted, const YAML::Node& value);
}  // namespace detail

template <typename T>
Result<T> get_or(const YAML::Node& root, std::string_view dotted, T def) {
  YAML::Node n = detail::lookup(root, dotted);
  if (!n || n.IsNull()) return def;
  if (std::string why = detail::schema_problem(dotted, n); !why.empty()) {
    return Error::bad_input("config key '" + std::string(dotted) + "': " + why);
  }
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    std::string where;
    if (n.Mark().line >= 0) {
      where = " (line " + std::to_string(n.Mark().line + 1) + ", column " + std::to_string(n.Mark().column + 1) + ")";
    }
    return Error::bad_input("config key '" + std::string(dotted) + "' has the wrong type" + where);
  }
}

}  // namespace vigil::config
