#include "engine/util/caps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace vigil::util {

CapSet CapSet::of(std::initializer_list<Cap> caps) {
  std::uint64_t bits = 0;
  for (Cap c : caps) bits |= std::uint64_t{1} << static_cast<int>(c);
  return CapSet(bits);
}

std::optional<CapSet> parse_cap_eff(std::string_view status) {
  constexpr std::string_view kKey = "CapEff:";
  std::size_t pos = 0;
  while (pos < status.size()) {
    std::size_t nl = status.find('\n', pos);
    std::string_view line = status.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? status.size() : nl + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.size() > 16) return std::nullopt;
    std::uint64_t bits = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), bits, 16);
    if (ec != std::errc() || end != line.data() + line.size()) return std::nullopt;
    return CapSet(bits);
  }
  return std::nullopt;
}

std::optional<CapSet> effective_caps() {
  int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while (text.size() < (64u << 10) && (n = ::read(fd, buf, sizeof(buf))) > 0)
    text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return parse_cap_eff(text);
}

std::string cap_name(Cap c) {
  switch (c) {
    case Cap::kDacReadSearch: return "CAP_DAC_READ_SEARCH";
    case Cap::kNetAdmin: return "CAP_NET_ADMIN";
    case Cap::kSysPtrace: return "CAP_SYS_PTRACE";
    case Cap::kSysAdmin: return "CAP_SYS_ADMIN";
    case Cap::kSysResource: return "CAP_SYS_RESOURCE";
    case Cap::kSyslog: return "CAP_SYSLOG";
    case Cap::kPerfmon: return "CAP_PERFMON";
    case Cap::kBpf: return "CAP_BPF";
  }
  return "capability " + std::to_string(static_cast<int>(c));
}

std::string missing_caps(CapSet have, std::initializer_list<Cap> needed, std::optional<Cap> instead) {
  if (instead && have.has(*instead)) return "";
  std::string out;
  for (Cap c : needed) {
    if (have.has(c)) continue;
    out += (out.empty() ? "" : " and ") + cap_name(c);
  }
  if (!out.empty() && instead) out += " (or " + cap_name(*instead) + ")";
  return out;
}

std::string errno_name(int err) {
  if (const char* n = strerrorname_np(err)) return n;
  return "errno " + std::to_string(err);
}

}  // namespace vigil::util
