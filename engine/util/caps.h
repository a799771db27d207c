// Linux capabilities as vigil reasons about them: the effective set of this
// process (CapEff of /proc/self/status), their names, and which of the ones a
// part needs are missing. Each part of vigil (the BPF sensor, the kmsg
// reader, /proc reads...) uses these to say which capability would turn it on
// (docs/install.md, "Privileges").
//
//   util::CapSet have = util::effective_caps().value_or(util::CapSet::all());
//   std::string m = util::missing_caps(have, {util::Cap::kBpf, util::Cap::kPerfmon}, util::Cap::kSysAdmin);
//   // "CAP_PERFMON" when only that one is missing; "" when nothing is
//
// Pure functions except effective_caps(). Thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::util {

// The capabilities vigil's parts need (numbers of linux/capability.h).
enum class Cap : int {
  kDacReadSearch = 2,
  kNetAdmin = 12,
  kSysPtrace = 19,
  kSysAdmin = 21,
  kSysResource = 24,
  kSyslog = 34,
  kPerfmon = 38,
  kBpf = 39,
};

class CapSet {
 public:
  constexpr CapSet() = default;
  constexpr explicit CapSet(std::uint64_t bits) : bits_(bits) {}
  static constexpr CapSet all() { return CapSet(~std::uint64_t{0}); }
  static CapSet of(std::initializer_list<Cap> caps);
  bool has(Cap c) const { return (bits_ >> static_cast<int>(c)) & 1u; }
  std::uint64_t bits() const { return bits_; }

 private:
  std::uint64_t bits_ = 0;
};

// The CapEff line of a /proc/<pid>/status text ("CapEff:\t000001ffffffffff");
// nullopt when it is missing or not hexadecimal.
std::optional<CapSet> parse_cap_eff(std::string_view status);

// CapEff of this process; nullopt when /proc/self/status cannot be read.
std::optional<CapSet> effective_caps();

// "CAP_BPF", "CAP_SYS_ADMIN"...
std::string cap_name(Cap c);

// The capabilities of `needed` that `have` lacks, joined with " and "
// ("CAP_BPF and CAP_PERFMON"); "" when none is missing. With an `instead`
// capability (CAP_SYS_ADMIN stands in for CAP_BPF, CAP_PERFMON and
// CAP_NET_ADMIN), nothing is missing when `have` holds it, and the text adds
// " (or CAP_SYS_ADMIN)".
std::string missing_caps(CapSet have, std::initializer_list<Cap> needed, std::optional<Cap> instead = std::nullopt);

// The symbolic name of an errno value ("ENOENT"; "errno 1234" when unknown).
std::string errno_name(int err);

}  // namespace vigil::util
