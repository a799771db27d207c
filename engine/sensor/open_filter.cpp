#include "engine/sensor/open_filter.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace vigil::sensor {
namespace {

void set_name(PrefixComponent& c, std::string_view name) {
  c.len = static_cast<std::uint32_t>(name.size());
  unsigned char bytes[16] = {};
  unsigned char mask[16] = {};
  const std::size_t n = std::min<std::size_t>(name.size(), sizeof(bytes));
  std::memcpy(bytes, name.data(), n);
  std::memset(mask, 0xff, n);
  std::memcpy(c.head, bytes, sizeof(bytes));
  std::memcpy(c.mask, mask, sizeof(mask));
}

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

Result<std::vector<PrefixComponent>> prefix_components(std::string_view prefix, std::size_t max_comps) {
  if (prefix.empty() || prefix.front() != '/')
    return Error::bad_input("open filter: a resolved-path prefix must be absolute: '" + std::string(prefix) + "'");
  std::vector<std::string_view> names = split(prefix);
  // The last name is whole when a slash follows it, else the prefix ends
  // inside it.
  const bool last_partial = !names.empty() && prefix.back() != '/';
  std::vector<PrefixComponent> out;
  for (std::size_t k = 0; k < names.size() && k < max_comps; ++k) {
    PrefixComponent c;
    set_name(c, names[k]);
    c.partial = last_partial && k + 1 == names.size();
    out.push_back(c);
  }
  return out;
}

bool components_match(const std::vector<PrefixComponent>& comps, std::string_view path) {
  std::vector<std::string_view> names = split(path);
  if (comps.size() > names.size()) return false;
  for (std::size_t k = 0; k < comps.size(); ++k) {
    PrefixComponent n;
    set_name(n, names[k]);
    const PrefixComponent& c = comps[k];
    if (c.partial ? n.len < c.len : n.len != c.len) return false;
    for (int w = 0; w < 2; ++w)
      if ((n.head[w] ^ c.head[w]) & c.mask[w]) return false;
  }
  return true;
}

}  // namespace vigil::sensor
