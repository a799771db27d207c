// The profile of one workload: what it was seen doing while it learnt, in
// bounded sets, and whether it still learns.
//
//   executables    program file path (proc.exepath), each with the SHA-256s
//                  seen at that path (proc.exe_sha256; none when unknown)
//   destinations   outbound connect/sendto/sendmsg: server address grouped
//                  to a network (/24 and /64 by default, Caps), port, tcp/udp
//   files          paths opened for writing under the watched prefixes
//   gpu_classes    NVIDIA RM classes allocated (NV_ESC_RM_ALLOC)
//
// A set that is full takes nothing more: what did not fit is counted per set
// (`full`), saved with the profile and shown by `vigil baseline show`; once
// locked, what did not fit is a deviation like anything else never seen.
//
// Thread-safety: a value; the Store's one thread owns its profiles.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/event/event.h"

namespace vigil::baseline {

struct Caps {
  std::size_t exes = 512;
  std::size_t destinations = 1024;
  std::size_t files = 1024;
  std::size_t gpu_classes = 128;
};

// The sets of a profile, in the order of Profile::full.
enum class Set : std::uint8_t { kExes = 0, kDestinations = 1, kFiles = 2, kGpuClasses = 3 };
inline constexpr std::size_t kSets = 4;
std::string_view set_name(Set s);  // "exes", "destinations", "files", "gpu_classes"

enum class Phase : std::uint8_t { kLearning, kLocked };
std::string_view phase_name(Phase p);  // "learning", "locked"

// An outbound destination as learnt: the server's network, port and protocol.
struct Destination {
  event::IpAddr net;        // masked to `prefix` bits
  std::uint8_t prefix = 0;  // 0..32 (IPv4), 0..128 (IPv6)
  std::uint16_t port = 0;   // kEphemeralPort: any port from Config::ephemeral_from up
  std::uint8_t proto = 0;   // event::L4: kTcp, kUdp (kUnknown when not known)
  bool operator==(const Destination&) const = default;
};
// The port of a destination whose port was in the ephemeral range (a UDP
// server's reply to a client's random port): written "ephemeral".
inline constexpr std::uint16_t kEphemeralPort = 0;

struct DestinationHash {
  std::size_t operator()(const Destination& d) const noexcept;
};
// "10.0.0.0/24:443/tcp", "fd00::/64:53/udp", "10.96.0.0/24:ephemeral/udp"
std::string to_string(const Destination& d);
// The reverse of to_string; false when `s` is not one.
bool parse_destination(std::string_view s, Destination& out);
// a masked to `prefix` bits.
event::IpAddr mask(const event::IpAddr& a, int prefix);

// Lookups by string_view without building a std::string (the event path).
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class Profile {
 public:
  explicit Profile(std::string key = {}) : key_(std::move(key)) {}

  const std::string& key() const { return key_; }
  Phase phase() const { return phase_; }
  std::uint64_t first_seen_ns() const { return first_seen_ns_; }
  std::uint64_t updated_ns() const { return updated_ns_; }
  std::uint64_t locked_at_ns() const { return locked_at_ns_; }
  const std::string& lock_cause() const { return lock_cause_; }  // "time", "command", "" while learning
  // What did not fit, by Set.
  const std::array<std::uint64_t, kSets>& full() const { return full_; }

  void set_first_seen(std::uint64_t ns) { first_seen_ns_ = ns; }
  // Locks it (a locked profile stays as it is).
  void lock(std::uint64_t at_ns, std::string cause);

  // Learning: each returns true when the profile changed (a new item, or one
  // more that did not fit). `at_ns` becomes updated_ns when it changed.
  bool add_exe(std::string_view path, std::string_view sha256, const Caps& caps, std::uint64_t at_ns);
  bool add_destination(const Destination& d, const Caps& caps, std::uint64_t at_ns);
  bool add_file(std::string_view path, const Caps& caps, std::uint64_t at_ns);
  bool add_gpu_class(std::uint32_t rm_class, const Caps& caps, std::uint64_t at_ns);
  void add_full(Set s, std::uint64_t n) { full_[static_cast<std::size_t>(s)] += n; }

  // Matching. An executable is in the profile when its path is, and, when
  // both the event and the profile know SHA-256s for that path, its hash is
  // one of them (a program swapped at a known path is a deviation).
  bool has_exe(std::string_view path, std::string_view sha256) const;
  // Some learnt destination with this port and protocol holds the address.
  bool has_destination(const event::IpAddr& addr, std::uint16_t port, std::uint8_t proto) const;
  bool has_file(std::string_view path) const { return files_.find(path) != files_.end(); }
  bool has_gpu_class(std::uint32_t c) const { return gpu_classes_.count(c) != 0; }

  // Sizes and contents (sorted where it matters: the file format and `show`).
  std::size_t exe_count() const { return exe_count_; }
  std::size_t destination_count() const { return destinations_.size(); }
  std::size_t file_count() const { return files_.size(); }
  std::size_t gpu_class_count() const { return gpu_classes_.size(); }
  std::map<std::string, std::set<std::string>> exes_sorted() const;
  std::vector<std::string> destinations_sorted() const;
  std::vector<std::string> files_sorted() const;
  const std::set<std::uint32_t>& gpu_classes() const { return gpu_classes_; }

  // Restoring a saved profile (profile_file.cpp).
  void restore_state(Phase p, std::uint64_t updated_ns, std::uint64_t locked_at_ns, std::string cause);

 private:
  std::string key_;
  Phase phase_ = Phase::kLearning;
  std::uint64_t first_seen_ns_ = 0;
  std::uint64_t updated_ns_ = 0;
  std::uint64_t locked_at_ns_ = 0;
  std::string lock_cause_;
  std::array<std::uint64_t, kSets> full_{};
  // path -> the SHA-256s seen there ("" is not stored: a path learnt with no
  // hash has an empty set).
  std::unordered_map<std::string, std::vector<std::string>, StringHash, std::equal_to<>> exes_;
  std::size_t exe_count_ = 0;  // entries: a path with no hash counts 1, else one per hash
  std::unordered_set<Destination, DestinationHash> destinations_;
  std::set<std::uint16_t> prefixes_;  // the prefixes in destinations_: IPv4 as is, IPv6 + 256
  std::unordered_set<std::string, StringHash, std::equal_to<>> files_;
  std::set<std::uint32_t> gpu_classes_;
};

}  // namespace vigil::baseline
