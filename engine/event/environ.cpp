#include "engine/event/environ.h"

namespace vigil::event {

std::vector<std::string> parse_environ(std::string_view raw, bool truncated) {
  if (truncated) {
    const auto last_nul = raw.rfind('\0');
    raw = last_nul == std::string_view::npos ? std::string_view() : raw.substr(0, last_nul + 1);
  }
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    auto nul = raw.find('\0', pos);
    if (nul == std::string_view::npos) nul = raw.size();
    const std::string_view v = raw.substr(pos, nul - pos);
    const auto eq = v.find('=');
    if (eq != std::string_view::npos && eq > 0) out.emplace_back(v);
    pos = nul + 1;
  }
  return out;
}

}  // namespace vigil::event
