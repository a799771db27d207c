// DNS answers remembered per scope (a pod, a container, or a host network
// namespace), so a later connection to an address can be matched with the
// name it was resolved from. Bounded: the least recently used answer is
// forgotten first; no TTLs.
//
// Thread-safety: none; owned by the State.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/event/event.h"
#include "engine/util/lru.h"

namespace vigil::state {

class DnsMemory {
 public:
  static constexpr std::size_t kMaxNameLen = 253;

  explicit DnsMemory(std::size_t max_names) : names_(max_names) {}

  // Remembers that `name` resolved to `addr` in `scope`. Names longer than a
  // DNS name can be, and unset addresses, are ignored.
  void remember(std::string_view scope, const event::IpAddr& addr, std::string_view name);
  // The name `addr` was last resolved from in `scope`, "" if none.
  std::string_view lookup(std::string_view scope, const event::IpAddr& addr) const;
  std::size_t size() const { return names_.size(); }

 private:
  struct Key {
    std::uint64_t scope = 0;  // 64-bit hash of the scope string
    event::IpAddr addr;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
  };
  static Key make_key(std::string_view scope, const event::IpAddr& addr);
  util::LruMap<Key, std::string, KeyHash> names_;
};

}  // namespace vigil::state
