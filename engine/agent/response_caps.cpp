#include "engine/agent/response_caps.h"

#include <linux/capability.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "engine/agent/freeze.h"
#include "engine/state/procfs.h"

namespace vigil::agent {

std::optional<std::uint64_t> effective_capabilities(std::string_view status) {
  constexpr std::string_view kKey = "CapEff:";
  for (std::size_t at = 0; at < status.size();) {
    std::size_t nl = status.find('\n', at);
    if (nl == std::string_view::npos) nl = status.size();
    std::string_view line = status.substr(at, nl - at);
    at = nl + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.size() > 16) return std::nullopt;
    std::uint64_t mask = 0;
    for (char c : line) {
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) return std::nullopt;
      mask = (mask << 4) | static_cast<std::uint64_t>(v);
    }
    return mask;
  }
  return std::nullopt;
}

ResponseCaps check_response_caps(const ResponseCapsProbe& probe) {
  ResponseCaps c;
  const auto status = state::read_file_bounded(probe.proc_status, 1u << 16);
  const auto eff = status ? effective_capabilities(*status) : std::nullopt;
  if (!eff) {
    c.kill_why = "cannot read CapEff from " + probe.proc_status;
  } else if ((*eff >> CAP_KILL) & 1u) {
    c.kill = true;
  } else {
    c.kill_why = "CAP_KILL not held: only root's processes";
  }

  std::vector<std::string> mounts = probe.cgroup_mounts;
  if (probe.discover && mounts.empty()) {
    const FreezeRoots roots = discover_freeze_roots();
    for (const std::string& m : {roots.cgroup2, roots.freezer})
      if (!m.empty()) mounts.push_back(m);
  }
  for (const std::string& m : mounts) {
    struct statvfs vfs {};
    if (::statvfs(m.c_str(), &vfs) != 0) {
      c.freeze_why += (c.freeze_why.empty() ? "" : ", ") + m + ": " + std::strerror(errno);
    } else if ((vfs.f_flag & ST_RDONLY) != 0) {
      c.freeze_why += (c.freeze_why.empty() ? "" : ", ") + m + " is read-only";
    }
  }
  if (mounts.empty()) c.freeze_why = "no cgroup v2 mount and no cgroup v1 freezer";
  c.freeze = c.freeze_why.empty();
  return c;
}

std::string describe(const ResponseCaps& c) {
  auto one = [](bool ok, const std::string& why) { return ok ? std::string("yes") : "no (" + why + ")"; };
  return "responses kill: " + one(c.kill, c.kill_why) + ", freeze: " + one(c.freeze, c.freeze_why);
}

}  // namespace vigil::agent
