// NVIDIA's security bulletins as vigil judges them: the data table
// (nvidia_bulletins.h) and the comparison of an installed version against
// its first fixed versions.
//
//   auto cves = posture::vulnerable_to("toolkit", "1.17.3");  // CVE-2025-23359, ...
//
// Thread-safety: constants and pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::posture {

struct Bulletin {
  int bulletin = 0;              // NVIDIA's number (5659)
  std::string_view cve;          // "CVE-2025-23266"
  std::string_view component;    // "driver" or "toolkit"
  std::string_view branch;       // "460", or "" for every version
  std::string_view first_fixed;  // "1.17.8"
  std::string_view source;       // the bulletin's address
};

// Every row of the table, in its order.
std::span<const Bulletin> bulletins();

// Compares two dotted versions number by number ("460.32.03" < "460.106"),
// a missing number counting as 0. nullopt when either is not a dotted
// version of decimal numbers (at most 8 parts of at most 9 digits).
std::optional<int> compare_versions(std::string_view a, std::string_view b);

// One CVE that applies to an installed version.
struct Finding {
  std::string cve;
  std::string component;
  std::string first_fixed;  // for this version's branch; "" when the branch got no fix
  int bulletin = 0;
};

// The CVEs of `component` the table says `version` is exposed to, each once,
// in the table's order. Nothing for a version that is empty or not a dotted
// version (not known: vigil says so elsewhere, it does not guess).
std::vector<Finding> vulnerable_to(std::string_view component, std::string_view version);

}  // namespace vigil::posture
