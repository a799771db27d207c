// The sliding-window sums behind egress events' window_bytes: what a
// container sent to one destination within the last `window_ns`, from the
// per-interval counts the kernel's egress map gives.
//
//   EgressWindow w(300 * kSec, 16384);
//   std::uint64_t in_window = w.add(key, now_ns, bytes_this_interval);
//
// Bounded: at most `max_keys` destinations (a new one beyond that replaces
// the one reported longest ago, counted in evicted()), and at most
// kMaxSlots counts per destination (older counts merge into the oldest).
// Not thread-safe: the sensor's loop thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace vigil::sensor {

class EgressWindow {
 public:
  static constexpr std::size_t kMaxSlots = 512;
  using Key = std::array<std::uint8_t, 32>;  // struct vg_egress_key's bytes

  EgressWindow(std::uint64_t window_ns, std::size_t max_keys) : window_ns_(window_ns), max_keys_(max_keys) {}

  // Records `bytes` sent to `key` at `now_ns` (not earlier than the previous
  // call's) and returns the bytes sent to it within the window ending now,
  // these included.
  std::uint64_t add(const Key& key, std::uint64_t now_ns, std::uint64_t bytes);
  // Forgets destinations with nothing sent within the window.
  void expire(std::uint64_t now_ns);

  std::size_t size() const { return slots_.size(); }
  std::uint64_t evicted() const { return evicted_; }
  std::uint64_t window_ns() const { return window_ns_; }

 private:
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::string_view>()(std::string_view(reinterpret_cast<const char*>(k.data()), k.size()));
    }
  };
  struct Counts {
    std::deque<std::pair<std::uint64_t, std::uint64_t>> at;  // (time, bytes), oldest first
    std::uint64_t sum = 0;
  };
  void drop_old(Counts& c, std::uint64_t now_ns) const;

  std::uint64_t window_ns_;
  std::size_t max_keys_;
  std::unordered_map<Key, Counts, KeyHash> slots_;
  std::uint64_t evicted_ = 0;
};

}  // namespace vigil::sensor
