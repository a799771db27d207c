#include "engine/state/users.h"

#include <charconv>

#include "engine/state/procfs.h"

namespace vigil::state {

bool NameDb::load(const std::string& path) {
  auto text = read_file_bounded(path, kMaxFileBytes);
  if (!text) return false;
  names_.clear();
  parse(*text);
  return true;
}

void NameDb::parse(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size() && names_.size() < kMaxEntries) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') continue;
    std::size_t c1 = line.find(':');
    if (c1 == 0 || c1 == std::string_view::npos || c1 > 256) continue;
    std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::size_t c3 = line.find(':', c2 + 1);
    if (c3 == std::string_view::npos) c3 = line.size();
    std::string_view id_text = line.substr(c2 + 1, c3 - c2 - 1);
    std::uint32_t id = 0;
    auto r = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (r.ec != std::errc() || r.ptr != id_text.data() + id_text.size() || id_text.empty()) continue;
    // The first entry for an id wins, as with getpwuid().
    names_.emplace(id, std::string(line.substr(0, c1)));
  }
}

std::string_view NameDb::name(std::uint32_t id) const {
  auto it = names_.find(id);
  return it == names_.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace vigil::state
