#include "engine/pipeline/aggregate.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>
#include <type_traits>

#include "engine/rules/ruleset.h"

namespace vigil::pipeline {

namespace {

// Appends one value to a key: a type letter, then its bytes with their
// length, so that no two values (nor an absent field) write the same bytes.
void put_value(std::string& key, const event::FieldValue& v) {
  auto put_text = [&key](std::string_view s) {
    key += std::to_string(s.size());
    key += ':';
    key += s;
  };
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          key += 'n';
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          key += 'i' + std::to_string(x) + ';';
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
          key += 'u' + std::to_string(x) + ';';
        } else if constexpr (std::is_same_v<T, bool>) {
          key += x ? "t" : "f";
        } else if constexpr (std::is_same_v<T, std::string>) {
          key += 's';
          put_text(x);
        } else {
          key += 'l' + std::to_string(x.size()) + ';';
          for (const auto& e : x) put_text(e);
        }
      },
      v);
}

// "rule\0" and the key's values: the spec's `by` fields as the alert holds
// them (one it lacks counts as no value), or every output field.
std::string key_of(const event::Alert& a, const rules::AggregateSpec& spec) {
  std::string key = a.rule;
  key += '\0';
  if (spec.by.empty()) {
    for (const auto& [name, value] : a.output_fields) {
      key += std::to_string(name.size()) + ':' + name;
      put_value(key, value);
    }
    return key;
  }
  for (const auto& f : spec.by) {
    auto it =
        std::find_if(a.output_fields.begin(), a.output_fields.end(), [&](const auto& kv) { return kv.first == f; });
    put_value(key, it == a.output_fields.end() ? event::FieldValue{} : it->second);
  }
  return key;
}

// A version-8 UUID from text (FNV-1a, two seeds, splitmix64 finaliser): the
// summary's, from the first alert's uuid and its window, so that a replay
// gives the same.
std::string uuid_of(std::string_view text) {
  auto fnv = [text](std::uint64_t h) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    return h;
  };
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const std::uint64_t hi = mix(fnv(0xcbf29ce484222325ull));
  const std::uint64_t lo = mix(fnv(0x6a09e667f3bcc908ull) ^ hi);
  unsigned char b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<unsigned char>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<unsigned char>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x80);  // version 8
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

// "90s", "10m", "1500ms": a window as a rule writes it.
std::string window_text(std::uint64_t ns) {
  constexpr std::uint64_t kMs = 1000000, kS = 1000 * kMs, kM = 60 * kS, kH = 60 * kM;
  if (ns % kH == 0) return std::to_string(ns / kH) + "h";
  if (ns % kM == 0) return std::to_string(ns / kM) + "m";
  if (ns % kS == 0) return std::to_string(ns / kS) + "s";
  return std::to_string(ns / kMs) + "ms";
}

const char* why_name(int why) {
  switch (why) {
    case 0: return "window";
    case 1: return "evicted";
    default: return "end";
  }
}

}  // namespace

AggregatorStats::Rule& AggregatorStats::of(const std::string& rule) {
  auto it = rules_.find(rule);
  if (it != rules_.end()) return it->second;
  const std::string& name = rules_.size() < kMaxRules ? rule : std::string("_other");
  it = rules_.try_emplace(name).first;
  it->second.rule = name;
  return it->second;
}

std::vector<AggregatorStats::Rule> AggregatorStats::snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Rule> v;
  v.reserve(rules_.size());
  for (const auto& [name, r] : rules_) v.push_back(r);
  return v;
}

Aggregator::Aggregator(AggregatorOptions opts, Publisher publish) : opts_(opts), publish_(std::move(publish)) {
  opts_.max_keys = std::max<std::size_t>(opts_.max_keys, 1);
  opts_.max_keys_per_rule = std::max<std::size_t>(opts_.max_keys_per_rule, 1);
}

Aggregator::~Aggregator() = default;

Aggregator::Verdict Aggregator::offer(event::Alert& a, const rules::AggregateSpec* spec) {
  if (spec == nullptr || spec->window_ns == 0 || a.heartbeat) return Verdict::kSend;
  std::string key = key_of(a, *spec);
  auto found = keys_.find(key);
  if (found != keys_.end()) {
    Key& k = found->second;
    if (k.count == 0) k.first_ns = a.time_ns;
    ++k.count;
    ++k.total;
    k.last_ns = a.time_ns;
    {
      std::lock_guard<std::mutex> l(stats_.mu_);
      ++stats_.of(k.rule).counted;
    }
    if (repeats_wanted_.load(std::memory_order_relaxed)) {
      k.last = a;
      a.repeat = true;
      return Verdict::kRepeat;
    }
    k.last = std::move(a);
    return Verdict::kCounted;
  }
  make_room(a.rule);
  Key k;
  k.rule = a.rule;
  k.by = spec->by;
  k.window_ns = spec->window_ns;
  // A window opens at the first alert's time, or at the event time reached
  // when that is later (an alert a little out of order).
  k.start_ns = std::max(a.time_ns, now_);
  k.end_ns = k.start_ns + k.window_ns;
  k.seq = next_seq_++;
  k.total = 1;
  k.first_uuid = a.uuid;
  auto [it, inserted] = keys_.emplace(std::move(key), std::move(k));
  (void)inserted;
  const Order o{it->second.end_ns, it->second.seq};
  order_.emplace(o, &it->first);
  by_rule_[it->second.rule].emplace(o, &it->first);
  stats_.open_.store(keys_.size(), std::memory_order_relaxed);
  return Verdict::kSend;
}

void Aggregator::make_room(const std::string& rule) {
  auto r = by_rule_.find(rule);
  if (r != by_rule_.end() && r->second.size() >= opts_.max_keys_per_rule) {
    close(order_.find(r->second.begin()->first), Why::kEvicted);
  }
  while (keys_.size() >= opts_.max_keys && !order_.empty()) close(order_.begin(), Why::kEvicted);
}

void Aggregator::summarise(Key& k, Why why) {
  if (k.count == 0 || !k.last) return;
  event::Alert s = std::move(*k.last);
  k.last.reset();
  s.repeat = false;
  s.time_ns = k.last_ns;
  const std::string n = std::to_string(k.count);
  s.output += " (aggregated: " + n + (k.count == 1 ? " repeat" : " repeats") + " in " + window_text(k.window_ns) + ")";
  if (std::find(s.tags.begin(), s.tags.end(), "aggregated") == s.tags.end()) s.tags.emplace_back("aggregated");
  s.uuid = uuid_of(k.first_uuid + "/" + std::to_string(k.start_ns));
  event::AlertAggregate agg;
  agg.count = k.count;
  agg.first_ns = k.first_ns;
  agg.last_ns = k.last_ns;
  agg.window_start_ns = k.start_ns;
  agg.window_end_ns = k.end_ns;
  agg.total = k.total;
  agg.first_uuid = k.first_uuid;
  agg.by = k.by;
  agg.reason = why_name(static_cast<int>(why));
  s.aggregate = std::move(agg);
  {
    std::lock_guard<std::mutex> l(stats_.mu_);
    AggregatorStats::Rule& r = stats_.of(k.rule);
    (why == Why::kWindow ? r.summaries_window : why == Why::kEvicted ? r.summaries_evicted : r.summaries_end) += 1;
  }
  k.count = 0;
  k.first_ns = k.last_ns = 0;
  if (publish_) publish_(std::make_shared<const event::Alert>(std::move(s)));
}

void Aggregator::close(std::map<Order, const std::string*>::iterator it, Why why) {
  if (it == order_.end()) return;
  const Order o = it->first;
  auto kit = keys_.find(*it->second);
  order_.erase(it);
  if (kit == keys_.end()) return;
  Key& k = kit->second;
  if (why == Why::kEvicted) {
    std::lock_guard<std::mutex> l(stats_.mu_);
    ++stats_.of(k.rule).evicted;
  }
  summarise(k, why);
  if (auto r = by_rule_.find(k.rule); r != by_rule_.end()) {
    r->second.erase(o);
    if (r->second.empty()) by_rule_.erase(r);
  }
  keys_.erase(kit);
  stats_.open_.store(keys_.size(), std::memory_order_relaxed);
}

void Aggregator::advance(std::uint64_t now_ns) {
  if (now_ns > now_) now_ = now_ns;
  while (!order_.empty() && order_.begin()->first.first <= now_) {
    auto it = order_.begin();
    const Order o = it->first;
    auto kit = keys_.find(*it->second);
    if (kit == keys_.end() || kit->second.count == 0) {
      close(it, Why::kWindow);  // a window without repeats: the incident is over
      continue;
    }
    // Repeats: their summary, and the key stays open for the next window.
    Key& k = kit->second;
    summarise(k, Why::kWindow);
    const std::string* name = it->second;
    order_.erase(it);
    auto& mine = by_rule_[k.rule];
    mine.erase(o);
    k.start_ns = k.end_ns;
    k.end_ns = k.start_ns + k.window_ns;
    const Order next{k.end_ns, k.seq};
    order_.emplace(next, name);
    mine.emplace(next, name);
  }
}

void Aggregator::flush() {
  while (!order_.empty()) close(order_.begin(), Why::kEnd);
  by_rule_.clear();
}

}  // namespace vigil::pipeline
