// What the kernel judges of the enforced rules (bpf/progs/policy.bpf.h): one
// slot per rule with its hook and parameters, the comm sets and destination
// sets those slots test, and the NVIDIA majors the device hook classifies
// nodes by. Made by the policy compiler (policy.h) from the rules, written
// into the kernel's maps by the sensor (engine/sensor/policy_maps.cpp).
// Plain data: the sensor depends on this header only.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vigil::policy {

inline constexpr std::size_t kMaxSlots = 64;      // VG_POL_RULES
inline constexpr std::size_t kMaxPorts = 4096;    // pol_ports
inline constexpr std::size_t kMaxComms = 4096;    // pol_comm
inline constexpr std::size_t kMaxNets = 16384;    // pol_net4, pol_net6 each
inline constexpr std::size_t kMaxExes = 4096;     // pol_exe: program files denied by identity
inline constexpr std::size_t kMaxExeIds = 65536;  // identities the enforced rules list

// The kernel hook a rule is enforced at (enum vg_pol_hook).
enum class Hook : std::uint8_t { kNone = 0, kDevice = 1, kNet = 2, kSocket = 3, kExec = 4 };

// One slot (struct vg_pol_rule); flags and kinds are the VG_POLR_* and
// VG_POL_NODE_* bits of bpf/shared/events.h.
struct Slot {
  Hook hook = Hook::kNone;
  std::uint32_t flags = 0;
  std::uint32_t kinds = 0;
  std::uint32_t families = 0;
  std::uint32_t types = 0;
  bool operator==(const Slot&) const = default;
};

// A destination set entry: a network (IPv4 in the first 4 bytes) and the
// slots whose set holds it.
struct NetEntry {
  bool v6 = false;
  std::array<std::uint8_t, 16> addr{};
  std::uint8_t prefix = 0;
  std::uint64_t slots = 0;
  auto operator<=>(const NetEntry&) const = default;
};

// A program file an enforced rule denies by identity, as the exec record
// reported it (struct vg_pol_exe_key, vg_pol_exe_val).
struct ExeEntry {
  std::uint64_t ino = 0;
  std::uint32_t dev = 0;  // the kernel's dev_t: major << 20 | minor
  std::int64_t ctime_ns = 0;
  std::uint64_t slots = 0;
  bool operator==(const ExeEntry&) const = default;
};

struct Tables {
  std::vector<Slot> slots;                     // at most kMaxSlots; index = slot
  std::map<std::string, std::uint64_t> comms;  // comm (at most 15 bytes) -> slots
  // "sha256:<hex>" or "buildid:<hex>" (lower case) -> slots: user space
  // matches identified programs against them and adds their files (pol_exe).
  std::map<std::string, std::uint64_t> exe_ids;
  std::map<std::uint16_t, std::uint64_t> ports;  // destination port -> slots
  std::vector<NetEntry> nets;                    // static destinations (names' addresses are added live)
  std::uint32_t uvm_major = 0, caps_major = 0, nvlink_major = 0, nvswitch_major = 0;
  // Slots per hook, and the slots with a comm set.
  std::uint64_t hook_slots(Hook h) const {
    std::uint64_t m = 0;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].hook == h) m |= 1ull << i;
    return m;
  }
  bool operator==(const Tables&) const = default;
};

// A container cgroup's entry (struct vg_pol_cg).
struct CgroupEntry {
  std::uint64_t slots = 0;                    // enforced slots whose container part holds
  std::array<std::uint64_t, 4> gpu_minors{};  // major 195 minors the allocation allows
  bool gpu_any = false;
  bool operator==(const CgroupEntry&) const = default;
};

}  // namespace vigil::policy
