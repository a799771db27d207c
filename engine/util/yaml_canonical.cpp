#include "engine/util/yaml_canonical.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace vigil {
namespace {

void append(const YAML::Node& n, std::string& out) {
  if (!n.IsDefined()) {
    out += '~';
    return;
  }
  switch (n.Type()) {
    case YAML::NodeType::Scalar: out += 's' + std::to_string(n.Scalar().size()) + ':' + n.Scalar(); return;
    case YAML::NodeType::Sequence:
      out += '[';
      for (const auto& e : n) append(e, out);
      out += ']';
      return;
    case YAML::NodeType::Map: {
      std::vector<std::pair<std::string, std::string>> kvs;
      for (const auto& kv : n) {
        std::string k, v;
        append(kv.first, k);
        append(kv.second, v);
        kvs.emplace_back(std::move(k), std::move(v));
      }
      std::sort(kvs.begin(), kvs.end());
      out += '{';
      for (const auto& [k, v] : kvs) out += k + '=' + v + ',';
      out += '}';
      return;
    }
    default: out += '~';
  }
}

}  // namespace

std::string canonical_yaml(const YAML::Node& n) {
  std::string out;
  append(n, out);
  return out;
}

}  // namespace vigil
