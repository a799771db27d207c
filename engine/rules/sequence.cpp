#include "engine/rules/sequence.h"

#include <algorithm>

#include "engine/rules/ruleset.h"

namespace vigil::rules {

void bound_step_field(std::string& text) {
  if (text.size() <= kMaxStepFieldBytes) return;
  text.resize(kMaxStepFieldBytes - 3);
  text += "...";
}

void bound_key(std::string& key) {
  if (key.size() <= kMaxKeyBytes) return;
  // Two FNV-1a 64-bit hashes with different offsets: 128 bits, so two keys
  // that share a head collide with negligible probability.
  std::uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  for (auto& x : h) {
    for (unsigned char c : key) {
      x ^= c;
      x *= 0x100000001b3ull;
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  key.resize(kMaxKeyBytes - 33);
  key += '#';
  for (auto x : h) {
    for (int i = 60; i >= 0; i -= 4) key += kHex[(x >> i) & 15];
  }
}

EvictionCounts* SequenceStats::counts(const std::string& sequence) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, c] : counts_) {
    if (name == sequence) return c.get();
  }
  if (counts_.size() >= kMaxSequences) {
    for (auto& [name, c] : counts_) {
      if (name == "_other") return c.get();
    }
    counts_.emplace_back("_other", std::make_unique<EvictionCounts>());
    return counts_.back().second.get();
  }
  counts_.emplace_back(sequence, std::make_unique<EvictionCounts>());
  return counts_.back().second.get();
}

std::vector<SequenceStats::Row> SequenceStats::snapshot() const {
  std::vector<Row> rows;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [name, c] : counts_) {
      rows.push_back({name, c->expired.load(std::memory_order_relaxed), c->capacity.load(std::memory_order_relaxed)});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.sequence < b.sequence; });
  return rows;
}

PartialMatches::PartialMatches(std::uint64_t window_ns, std::size_t capacity, EvictionCounts* counts)
    : window_ns_(window_ns), capacity_(std::max<std::size_t>(capacity, 1)), counts_(counts) {}

void PartialMatches::drop(std::list<Entry>::iterator it) {
  index_.erase(std::string_view(it->key));
  order_.erase(it);
}

bool PartialMatches::slide(Partial& p, std::uint64_t now_ns) const {
  auto& t = p.first_times;
  if (t.size() < 2 || p.next > 1) return false;
  auto live =
      std::find_if(t.begin(), t.end(), [&](std::uint64_t at) { return !(now_ns > at && now_ns - at > window_ns_); });
  if (live == t.end()) return false;
  t.erase(t.begin(), live);
  p.first_ns = t.front();
  p.next = 0;  // fewer than its count now
  p.step_hits = 0;
  return true;
}

Partial* PartialMatches::find(std::string_view key, std::uint64_t now_ns) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (expired(it->second->p, now_ns)) {
    if (slide(it->second->p, now_ns)) {
      order_.splice(order_.end(), order_, it->second);  // its window starts later now
      return &it->second->p;
    }
    if (counts_) counts_->expired.fetch_add(1, std::memory_order_relaxed);
    drop(it->second);
    return nullptr;
  }
  return &it->second->p;
}

void PartialMatches::expire(std::uint64_t now_ns) {
  while (!order_.empty() && expired(order_.front().p, now_ns)) {
    if (slide(order_.front().p, now_ns)) {
      order_.splice(order_.end(), order_, order_.begin());
      continue;
    }
    if (counts_) counts_->expired.fetch_add(1, std::memory_order_relaxed);
    drop(order_.begin());
  }
}

Partial& PartialMatches::start(std::string_view key, std::uint64_t now_ns) {
  if (auto it = index_.find(key); it != index_.end()) {
    // Starts again in place: the newest now, its buffers kept (no allocation).
    auto entry = it->second;
    order_.splice(order_.end(), order_, entry);
    entry->p.first_ns = now_ns;
    entry->p.next = 1;
    entry->p.first_times.clear();
    entry->p.step_hits = 0;
    expire(now_ns);
    return entry->p;
  }
  expire(now_ns);
  if (index_.size() >= capacity_) {
    if (counts_) counts_->capacity.fetch_add(1, std::memory_order_relaxed);
    drop(order_.begin());
  }
  order_.push_back(Entry{std::string(key), Partial{}});
  auto last = std::prev(order_.end());
  index_.emplace(std::string_view(last->key), last);
  last->p.first_ns = now_ns;
  return last->p;
}

void PartialMatches::erase(std::string_view key) {
  if (auto it = index_.find(key); it != index_.end()) drop(it->second);
}

SequenceState::SequenceState(const Ruleset& rules, SequenceStats* stats) : rules_(&rules) {
  const auto infos = rules.sequences();
  tables_.reserve(infos.size());
  for (const auto& s : infos) {
    tables_.emplace_back(s.within_ns, rules.sequence_capacity(), stats ? stats->counts(s.name) : nullptr);
  }
}

std::size_t SequenceState::size() const {
  std::size_t n = 0;
  for (const auto& t : tables_) n += t.size();
  return n;
}

}  // namespace vigil::rules
