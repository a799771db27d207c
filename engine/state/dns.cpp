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
  if (addr.family != 0 && addr.bytes.size() >= 4) {
    // IPv4 uses the first 4 bytes only; ignore whatever follows.
    bool v4 = addr.family == 2;  // AF_INET
    if (v4) {
      for (std::size_t i = 4; i < k.addr.bytes.size(); ++i) k.addr.bytes[i] = 0;
    }
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
