#include "engine/sensor/egress_window.h"

#include <algorithm>

namespace vigil::sensor {

void EgressWindow::drop_old(Counts& c, std::uint64_t now_ns) const {
  while (!c.at.empty() && now_ns >= c.at.front().first && now_ns - c.at.front().first >= window_ns_) {
    c.sum -= c.at.front().second;
    c.at.pop_front();
  }
}

std::uint64_t EgressWindow::add(const Key& key, std::uint64_t now_ns, std::uint64_t bytes) {
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    if (max_keys_ == 0) return bytes;
    if (slots_.size() >= max_keys_) {
      expire(now_ns);
      if (slots_.size() >= max_keys_) {
        // The destination reported longest ago gives way.
        auto last = [](const Counts& c) { return c.at.empty() ? 0 : c.at.back().first; };
        auto oldest = std::min_element(slots_.begin(), slots_.end(),
                                       [&](const auto& a, const auto& b) { return last(a.second) < last(b.second); });
        slots_.erase(oldest);
        ++evicted_;
      }
    }
    it = slots_.emplace(key, Counts{}).first;
  }
  Counts& c = it->second;
  drop_old(c, now_ns);
  if (c.at.size() >= kMaxSlots) {
    // Merge the two oldest: the sum stays, the oldest time is kept.
    const auto first = c.at.front();
    c.at.pop_front();
    c.at.front().first = first.first;
    c.at.front().second += first.second;
  }
  c.at.emplace_back(now_ns, bytes);
  c.sum += bytes;
  return c.sum;
}

void EgressWindow::expire(std::uint64_t now_ns) {
  for (auto it = slots_.begin(); it != slots_.end();) {
    drop_old(it->second, now_ns);
    if (it->second.at.empty()) it = slots_.erase(it);
    else ++it;
  }
}

}  // namespace vigil::sensor
