#include "engine/posture/bulletins.h"

#include <array>
#include <cstdint>

#include "engine/posture/nvidia_bulletins.h"

namespace vigil::posture {
namespace {

#define VIGIL_BULLETIN_ROW(n, cve, component, branch, fixed, source) Bulletin{n, cve, component, branch, fixed, source},
constexpr Bulletin kBulletins[] = {VG_NVIDIA_BULLETINS(VIGIL_BULLETIN_ROW)};
#undef VIGIL_BULLETIN_ROW

constexpr std::size_t kMaxParts = 8;
constexpr std::size_t kMaxDigits = 9;

struct Parsed {
  std::array<std::uint32_t, kMaxParts> part{};
  std::size_t n = 0;
};

std::optional<Parsed> parse_version(std::string_view v) {
  Parsed p;
  if (v.empty()) return std::nullopt;
  std::size_t digits = 0;
  std::uint32_t cur = 0;
  for (char c : v) {
    if (c == '.') {
      if (digits == 0 || p.n + 1 >= kMaxParts) return std::nullopt;
      p.part[p.n++] = cur;
      cur = 0;
      digits = 0;
      continue;
    }
    if (c < '0' || c > '9' || ++digits > kMaxDigits) return std::nullopt;
    cur = cur * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (digits == 0) return std::nullopt;
  p.part[p.n++] = cur;
  return p;
}

// The branch of a driver version: its first number ("580" of "580.95.05").
std::string_view branch_of(std::string_view version) { return version.substr(0, version.find('.')); }

}  // namespace

std::span<const Bulletin> bulletins() { return kBulletins; }

std::optional<int> compare_versions(std::string_view a, std::string_view b) {
  auto pa = parse_version(a);
  auto pb = parse_version(b);
  if (!pa || !pb) return std::nullopt;
  for (std::size_t i = 0; i < kMaxParts; ++i) {
    if (pa->part[i] != pb->part[i]) return pa->part[i] < pb->part[i] ? -1 : 1;
  }
  return 0;
}

std::vector<Finding> vulnerable_to(std::string_view component, std::string_view version) {
  std::vector<Finding> out;
  if (!parse_version(version)) return out;
  const std::string_view branch = branch_of(version);
  auto listed = [&out](std::string_view cve) {
    for (const Finding& f : out) {
      if (f.cve == cve) return true;
    }
    return false;
  };
  for (const Bulletin& b : kBulletins) {
    if (b.component != component || listed(b.cve)) continue;
    bool exposed = false;
    std::string fixed;
    if (b.branch.empty()) {
      exposed = compare_versions(version, b.first_fixed).value_or(0) < 0;
      fixed = b.first_fixed;
    } else {
      // Every row of this CVE for the component: the one of this branch
      // decides; without one, an older branch than one fixed got no fix.
      const Bulletin* same = nullptr;
      bool newer_fixed = false;
      for (const Bulletin& r : kBulletins) {
        if (r.cve != b.cve || r.component != component || r.branch.empty()) continue;
        if (r.branch == branch) same = &r;
        if (compare_versions(r.branch, branch).value_or(0) > 0) newer_fixed = true;
      }
      if (same != nullptr) {
        exposed = compare_versions(version, same->first_fixed).value_or(0) < 0;
        fixed = same->first_fixed;
      } else {
        exposed = newer_fixed;
      }
    }
    if (exposed) out.push_back({std::string(b.cve), std::string(component), std::move(fixed), b.bulletin});
  }
  return out;
}

}  // namespace vigil::posture
