// A bounded map that forgets its least recently used entry when full: every
// table of engine/state and the caches of engine/ident use one, so their
// memory has a fixed ceiling.
//
//   LruMap<std::uint32_t, Process> m(1000);
//   m.put(42, p);            // inserts or replaces; may evict the oldest entry
//   Process* q = m.get(42);  // marks 42 as most recently used
//   const Process* r = m.peek(42);  // does not change the order
//
// Pointers returned by get()/peek()/put() stay valid until that entry is
// erased or evicted (entries live in list nodes that never move).
// Thread-safety: none; owned by one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>

namespace vigil::util {

template <typename K, typename V, typename Hash = std::hash<K>>
class LruMap {
 public:
  explicit LruMap(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return capacity_; }
  bool contains(const K& k) const { return index_.count(k) != 0; }

  V* get(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  const V* peek(const K& k) const {
    auto it = index_.find(k);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  V* peek_mut(const K& k) {
    auto it = index_.find(k);
    return it == index_.end() ? nullptr : &it->second->second;
  }

  // Inserts or replaces k as the most recently used entry. When that makes
  // the map exceed its capacity, the least recently used entry is evicted and
  // returned.
  std::optional<std::pair<K, V>> put(const K& k, V v, V** where = nullptr) {
    auto it = index_.find(k);
    if (it != index_.end()) {
      it->second->second = std::move(v);
      order_.splice(order_.begin(), order_, it->second);
      if (where) *where = &it->second->second;
      return std::nullopt;
    }
    order_.emplace_front(k, std::move(v));
    index_.emplace(k, order_.begin());
    if (where) *where = &order_.front().second;
    if (index_.size() > capacity_) {
      auto last = std::prev(order_.end());
      std::pair<K, V> evicted = std::move(*last);
      index_.erase(evicted.first);
      order_.erase(last);
      return evicted;
    }
    return std::nullopt;
  }

  bool erase(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return false;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  void clear() {
    index_.clear();
    order_.clear();
  }

  // Most recently used first.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& kv : order_) f(kv.first, kv.second);
  }
  template <typename F>
  void for_each_mut(F&& f) {
    for (auto& kv : order_) f(kv.first, kv.second);
  }

 private:
  using List = std::list<std::pair<K, V>>;
  std::size_t capacity_;
  List order_;
  std::unordered_map<K, typename List::iterator, Hash> index_;
};

}  // namespace vigil::util
