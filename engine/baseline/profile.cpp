#include "engine/baseline/profile.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>

namespace vigil::baseline {

std::string_view set_name(Set s) {
  switch (s) {
    case Set::kExes: return "exes";
    case Set::kDestinations: return "destinations";
    case Set::kFiles: return "files";
    case Set::kGpuClasses: return "gpu_classes";
  }
  return "?";
}

std::string_view phase_name(Phase p) { return p == Phase::kLocked ? "locked" : "learning"; }

std::size_t DestinationHash::operator()(const Destination& d) const noexcept {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  };
  mix(d.net.family);
  for (auto b : d.net.bytes) mix(b);
  mix(d.prefix);
  mix(static_cast<std::uint8_t>(d.port >> 8));
  mix(static_cast<std::uint8_t>(d.port));
  mix(d.proto);
  return static_cast<std::size_t>(h);
}

event::IpAddr mask(const event::IpAddr& a, int prefix) {
  event::IpAddr m = a;
  const int bits = a.family == AF_INET6 ? 128 : 32;
  prefix = std::clamp(prefix, 0, bits);
  for (int i = 0; i < 16; ++i) {
    const int keep = std::clamp(prefix - i * 8, 0, 8);
    if (i * 8 >= bits) {
      m.bytes[i] = 0;
    } else {
      m.bytes[i] = static_cast<std::uint8_t>(keep == 0 ? 0 : m.bytes[i] & (0xff << (8 - keep)));
    }
  }
  return m;
}

namespace {

std::string_view proto_name(std::uint8_t p) {
  if (p == static_cast<std::uint8_t>(event::L4::kTcp)) return "tcp";
  if (p == static_cast<std::uint8_t>(event::L4::kUdp)) return "udp";
  return "ip";
}

std::uint16_t prefix_key(const event::IpAddr& a, int prefix) {
  return static_cast<std::uint16_t>((a.family == AF_INET6 ? 256 : 0) + prefix);
}

}  // namespace

std::string to_string(const Destination& d) {
  std::string out = event::to_string(d.net);
  out += "/" + std::to_string(d.prefix) + ":" +
         (d.port == kEphemeralPort ? std::string("ephemeral") : std::to_string(d.port)) + "/";
  out += proto_name(d.proto);
  return out;
}

bool parse_destination(std::string_view s, Destination& out) {
  // NET/PREFIX:PORT/PROTO; an IPv6 net has colons, so split from the end.
  const auto pslash = s.rfind('/');
  if (pslash == std::string_view::npos) return false;
  std::string_view proto = s.substr(pslash + 1);
  s = s.substr(0, pslash);
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view port = s.substr(colon + 1);
  s = s.substr(0, colon);
  const auto nslash = s.rfind('/');
  if (nslash == std::string_view::npos) return false;
  std::string_view bits = s.substr(nslash + 1);
  std::string addr(s.substr(0, nslash));
  Destination d;
  if (proto == "tcp") d.proto = static_cast<std::uint8_t>(event::L4::kTcp);
  else if (proto == "udp") d.proto = static_cast<std::uint8_t>(event::L4::kUdp);
  else if (proto == "ip") d.proto = 0;
  else return false;
  unsigned p = 0, prefix = 0;
  auto r1 = std::from_chars(port.data(), port.data() + port.size(), p);
  auto r2 = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  if (port == "ephemeral") {
    p = kEphemeralPort;
  } else if (port.empty() || r1.ec != std::errc() || r1.ptr != port.data() + port.size() || p == 0 || p > 65535) {
    return false;
  }
  if (bits.empty() || r2.ec != std::errc() || r2.ptr != bits.data() + bits.size()) return false;
  if (addr.size() > 64) return false;
  if (inet_pton(AF_INET, addr.c_str(), d.net.bytes.data()) == 1) {
    d.net.family = AF_INET;
    if (prefix > 32) return false;
  } else if (inet_pton(AF_INET6, addr.c_str(), d.net.bytes.data()) == 1) {
    d.net.family = AF_INET6;
    if (prefix > 128) return false;
  } else {
    return false;
  }
  d.prefix = static_cast<std::uint8_t>(prefix);
  d.port = static_cast<std::uint16_t>(p);
  // A net with bits past its prefix is stored masked, as learning would.
  d.net = mask(d.net, d.prefix);
  out = d;
  return true;
}

void Profile::lock(std::uint64_t at_ns, std::string cause) {
  if (phase_ == Phase::kLocked) return;
  phase_ = Phase::kLocked;
  locked_at_ns_ = at_ns;
  lock_cause_ = std::move(cause);
}

void Profile::restore_state(Phase p, std::uint64_t updated_ns, std::uint64_t locked_at_ns, std::string cause) {
  phase_ = p;
  updated_ns_ = updated_ns;
  locked_at_ns_ = p == Phase::kLocked ? locked_at_ns : 0;
  lock_cause_ = p == Phase::kLocked ? std::move(cause) : std::string();
}

bool Profile::add_exe(std::string_view path, std::string_view sha256, const Caps& caps, std::uint64_t at_ns) {
  if (path.empty()) return false;
  auto it = exes_.find(path);
  if (it == exes_.end()) {
    if (exe_count_ >= caps.exes) {
      ++full_[static_cast<std::size_t>(Set::kExes)];
      return true;
    }
    std::vector<std::string> hashes;
    if (!sha256.empty()) hashes.emplace_back(sha256);
    exes_.emplace(std::string(path), std::move(hashes));
    ++exe_count_;
    updated_ns_ = at_ns;
    return true;
  }
  if (sha256.empty()) return false;
  auto& hashes = it->second;
  if (std::find(hashes.begin(), hashes.end(), sha256) != hashes.end()) return false;
  // A path learnt with no hash counts one entry; its first hash takes that entry.
  if (!hashes.empty() && exe_count_ >= caps.exes) {
    ++full_[static_cast<std::size_t>(Set::kExes)];
    return true;
  }
  if (!hashes.empty()) ++exe_count_;
  hashes.emplace_back(sha256);
  updated_ns_ = at_ns;
  return true;
}

bool Profile::has_exe(std::string_view path, std::string_view sha256) const {
  auto it = exes_.find(path);
  if (it == exes_.end()) return false;
  if (sha256.empty() || it->second.empty()) return true;
  return std::find(it->second.begin(), it->second.end(), sha256) != it->second.end();
}

bool Profile::add_destination(const Destination& d, const Caps& caps, std::uint64_t at_ns) {
  if (destinations_.count(d)) return false;
  if (destinations_.size() >= caps.destinations) {
    ++full_[static_cast<std::size_t>(Set::kDestinations)];
    return true;
  }
  destinations_.insert(d);
  prefixes_.insert(prefix_key(d.net, d.prefix));
  updated_ns_ = at_ns;
  return true;
}

bool Profile::has_destination(const event::IpAddr& addr, std::uint16_t port, std::uint8_t proto) const {
  if (destinations_.empty()) return false;
  const std::uint16_t base = addr.family == AF_INET6 ? 256 : 0;
  for (std::uint16_t k : prefixes_) {
    if ((k & 256) != base) continue;
    Destination d;
    d.prefix = static_cast<std::uint8_t>(k & 255);
    d.net = mask(addr, d.prefix);
    d.port = port;
    d.proto = proto;
    if (destinations_.count(d)) return true;
  }
  return false;
}

bool Profile::add_file(std::string_view path, const Caps& caps, std::uint64_t at_ns) {
  if (path.empty()) return false;
  if (files_.find(path) != files_.end()) return false;
  if (files_.size() >= caps.files) {
    ++full_[static_cast<std::size_t>(Set::kFiles)];
    return true;
  }
  files_.emplace(path);
  updated_ns_ = at_ns;
  return true;
}

bool Profile::add_gpu_class(std::uint32_t c, const Caps& caps, std::uint64_t at_ns) {
  if (gpu_classes_.count(c)) return false;
  if (gpu_classes_.size() >= caps.gpu_classes) {
    ++full_[static_cast<std::size_t>(Set::kGpuClasses)];
    return true;
  }
  gpu_classes_.insert(c);
  updated_ns_ = at_ns;
  return true;
}

std::map<std::string, std::set<std::string>> Profile::exes_sorted() const {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [path, hashes] : exes_) out[path].insert(hashes.begin(), hashes.end());
  return out;
}

std::vector<std::string> Profile::destinations_sorted() const {
  std::vector<std::string> out;
  out.reserve(destinations_.size());
  for (const auto& d : destinations_) out.push_back(to_string(d));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Profile::files_sorted() const {
  std::vector<std::string> out(files_.begin(), files_.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vigil::baseline
