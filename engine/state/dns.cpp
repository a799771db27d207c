#include "engine/state/dns.h"

namespace vigil::state {
namespace {

// FNV-1a, 64 bit: stable across runs (replay must give the same answers).
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 14695981039346656037ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::size_t DnsMemory::KeyHash::operator()(const Key& k) const noexcept {
  std::uint64_t h = k.scope ^ k.addr.family;
  h = fnv1a(std::string_view(reinterpret_cast<const char*>(k.addr.bytes.data()), k.addr.bytes.size()), h);
  return static_cast<std::size_t>(h);
}

DnsMemory::Key DnsMemory::make_key(std::string_view scope, const event::IpAddr& addr) {
  Key k;
  k.scope = fnv1a(scope);
  k.addr = addr;
  constexpr std::uint8_t kInet = 2, kInet6 = 10;  // AF_INET, AF_INET6
  if (addr.family == kInet6) {
    // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address.
    bool mapped = addr.bytes[10] == 0xff && addr.bytes[11] == 0xff;
    for (std::size_t i = 0; i < 10 && mapped; ++i) mapped = addr.bytes[i] == 0;
    if (mapped) {
      k.addr = event::IpAddr{};
      k.addr.family = kInet;
      for (std::size_t i = 0; i < 4; ++i) k.addr.bytes[i] = addr.bytes[12 + i];
    }
  } else if (addr.family == kInet) {
    // IPv4 uses the first 4 bytes only; ignore whatever follows.
    for (std::size_t i = 4; i < k.addr.bytes.size(); ++i) k.addr.bytes[i] = 0;
  }
  return k;
}

void DnsMemory::remember(std::string_view scope, const event::IpAddr& addr, std::string_view name) {
  if (addr.family == 0 || name.empty() || name.size() > kMaxNameLen) return;
  names_.put(make_key(scope, addr), std::string(name));
}

std::string_view DnsMemory::lookup(std::string_view scope, const event::IpAddr& addr) const {
  if (addr.family == 0) return {};
  const std::string* n = names_.peek(make_key(scope, addr));
  return n ? std::string_view(*n) : std::string_view();
}

}  // namespace vigil::state
