// String matchers that compiled checks hold (built by the compiler, run on
// the event path): LiteralSet for `in` lists, LiteralMatcher for any of many
// literals as a prefix, suffix or substring, PathTrie for pmatch, and the
// ASCII helpers the comparisons share. Internal to engine/rules.
//
// Thread-safety: built once when rules compile; lookups are const, noexcept
// and never allocate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"

namespace vigil::rules {

struct SvHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// The string values of an `in` list, for the event path: one flat
// open-addressing table over one buffer (no node chasing, no division), with
// filters on the length and the first and last byte that reject most
// non-members before any hashing. Lookups never allocate; the table is at most
// half full, so a probe ends at an empty slot.
class LiteralSet {
 public:
  void build(const std::vector<std::string>& vals) {
    std::unordered_set<std::string_view> seen;
    members_.clear();
    for (const auto& v : vals) {
      if (seen.insert(v).second) members_.push_back(v);
    }
    std::size_t cap = 4;
    while (cap < members_.size() * 2) cap *= 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    std::size_t total = 0;
    for (const auto& v : members_) total += v.size();
    data_.clear();
    data_.reserve(total);
    for (std::size_t id = 0; id < members_.size(); ++id) {
      std::string_view v = members_[id];
      if (v.empty()) {
        empty_id_ = static_cast<std::int32_t>(id);
        continue;
      }
      len_mask_ |= std::uint64_t{1} << (v.size() < 63 ? v.size() : 63);
      auto f = static_cast<unsigned char>(v.front());
      auto l = static_cast<unsigned char>(v.back());
      first_[f >> 6] |= std::uint64_t{1} << (f & 63);
      last_[l >> 6] |= std::uint64_t{1} << (l & 63);
      std::uint64_t h = hash(v);
      std::size_t i = h & mask_;
      while (slots_[i].len != kEmpty) i = (i + 1) & mask_;
      slots_[i] = Slot{h, static_cast<std::uint32_t>(data_.size()), static_cast<std::uint32_t>(v.size()),
                       static_cast<std::uint32_t>(id)};
      data_.append(v);
    }
  }
  // The members, in first-seen order; find() returns an index into it.
  const std::vector<std::string>& members() const noexcept { return members_; }
  bool contains(std::string_view s) const noexcept { return find(s) >= 0; }
  // The filters inline (most lookups of guard values miss), the hash and
  // probe out of line.
  [[gnu::always_inline]] std::int32_t find(std::string_view s) const noexcept {
    const std::size_t n = s.size();
    if (n == 0) return empty_id_;
    if (!((len_mask_ >> (n < 63 ? n : 63)) & 1u)) return -1;
    auto f = static_cast<unsigned char>(s.front());
    auto l = static_cast<unsigned char>(s.back());
    if (!((first_[f >> 6] >> (f & 63)) & 1u) || !((last_[l >> 6] >> (l & 63)) & 1u)) return -1;
    return probe(s);
  }
  [[gnu::noinline]] std::int32_t probe(std::string_view s) const noexcept {
    const std::size_t n = s.size();
    const std::uint64_t h = hash(s);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.len == kEmpty) return -1;
      if (sl.hash == h && sl.len == n && std::memcmp(data_.data() + sl.off, s.data(), n) == 0) {
        return static_cast<std::int32_t>(sl.id);
      }
    }
  }
  static std::uint64_t hash(std::string_view s) noexcept { return hash_as<false>(s); }
  // find(tolower(s)) without lower-casing a copy of s: the hash and the
  // comparison lower-case ASCII letters as they read. A member with an
  // upper-case letter (which no lower-cased value equals) is never found.
  [[gnu::always_inline]] std::int32_t find_lower(std::string_view s) const noexcept {
    const std::size_t n = s.size();
    if (n == 0) return empty_id_;
    if (!((len_mask_ >> (n < 63 ? n : 63)) & 1u)) return -1;
    auto f = fold(static_cast<unsigned char>(s.front()));
    auto l = fold(static_cast<unsigned char>(s.back()));
    if (!((first_[f >> 6] >> (f & 63)) & 1u) || !((last_[l >> 6] >> (l & 63)) & 1u)) return -1;
    return probe_lower(s);
  }
  [[gnu::noinline]] std::int32_t probe_lower(std::string_view s) const noexcept {
    const std::size_t n = s.size();
    const std::uint64_t h = hash_as<true>(s);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.len == kEmpty) return -1;
      if (sl.hash == h && sl.len == n) {
        const char* m = data_.data() + sl.off;
        std::size_t k = 0;
        while (k < n && static_cast<unsigned char>(m[k]) == fold(static_cast<unsigned char>(s[k]))) ++k;
        if (k == n) return static_cast<std::int32_t>(sl.id);
      }
    }
  }

 private:
  static unsigned char fold(unsigned char b) noexcept {
    return b >= 'A' && b <= 'Z' ? static_cast<unsigned char>(b + ('a' - 'A')) : b;
  }
  // Eight bytes with their ASCII upper-case letters lowered (as tolower()
  // does, eight at a time): bit 7 of `letter` marks the bytes in 'A'..'Z'.
  static std::uint64_t lower8(std::uint64_t w) noexcept {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull;
    constexpr std::uint64_t kHigh = 0x8080808080808080ull;
    const std::uint64_t low7 = w & ~kHigh;
    const std::uint64_t ge_a = low7 + (0x80u - 'A') * kOnes;
    const std::uint64_t gt_z = low7 + (0x80u - 'A' - 26) * kOnes;
    const std::uint64_t letter = ge_a & ~gt_z & ~w & kHigh;
    return w ^ (letter >> 2);
  }
  // hash(s), or with kLower hash(tolower(s)).
  template <bool kLower>
  static std::uint64_t hash_as(std::string_view s) noexcept {
    constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15ull;
    std::uint64_t h = 0x84222325cbf29ce4ull ^ (s.size() * kMul);
    const char* p = s.data();
    std::size_t n = s.size();
    while (n >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      if constexpr (kLower) w = lower8(w);
      h = (h ^ w) * kMul;
      h ^= h >> 29;
      p += 8;
      n -= 8;
    }
    // The last 0 to 7 bytes: with 8 or more in all, the last eight (some
    // hashed already; the length is in h, so equal strings still agree);
    // else two loads of up to four, overlapping. No byte loop.
    std::uint64_t w = 0;
    if (s.size() >= 8) {
      if (n) std::memcpy(&w, s.data() + s.size() - 8, 8);
    } else if (n >= 4) {
      std::uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      w = (static_cast<std::uint64_t>(b) << 32) | a;
    } else if (n) {
      w = static_cast<std::uint64_t>(static_cast<unsigned char>(p[0])) |
          static_cast<std::uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8 |
          static_cast<std::uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16;
    }
    if constexpr (kLower) w = lower8(w);
    h = (h ^ w) * kMul;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
  }

  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t off = 0;
    std::uint32_t len = kEmpty;
    std::uint32_t id = 0;
  };
  std::vector<Slot> slots_{Slot{}};
  std::size_t mask_ = 0;
  std::string data_;
  std::uint64_t len_mask_ = 0;  // bit n: a member of length n (63: 63 or more)
  std::uint64_t first_[4] = {0, 0, 0, 0};
  std::uint64_t last_[4] = {0, 0, 0, 0};
  std::int32_t empty_id_ = -1;
  std::vector<std::string> members_;
};

// Any of a set of literals as a prefix (startswith), a suffix (endswith) or
// anywhere (contains, icontains: literals lower-case, input ASCII-folded as
// the single comparisons do). A byte trie with a direct table at the root:
// a scan for `contains` touches the trie only at bytes that start some
// literal, and memory and time are bounded by the literals given.
class LiteralMatcher {
 public:
  LiteralMatcher(const std::vector<std::string>& lits, Op op)
      : mode_(op == Op::kStartsWith ? Mode::kPrefix
              : op == Op::kEndsWith ? Mode::kSuffix
                                    : Mode::kAnywhere),
        icase_(op == Op::kIContains),
        lits_(lits) {
    nodes_.emplace_back();
    for (const auto& l : lits) {
      if (l.empty()) {
        always_ = true;
        continue;
      }
      std::uint32_t cur = 0;
      for (std::size_t i = 0; i < l.size(); ++i) {
        auto b = static_cast<unsigned char>(mode_ == Mode::kSuffix ? l[l.size() - 1 - i] : l[i]);
        cur = child_or_add(cur, b);
      }
      nodes_[cur].terminal = true;
    }
    // Sorted edges, laid out per node.
    for (auto& n : nodes_) {
      std::sort(n.build.begin(), n.build.end());
      n.first = static_cast<std::uint32_t>(edges_.size());
      n.count = static_cast<std::uint32_t>(n.build.size());
      for (const auto& e : n.build) edges_.push_back(e);
      n.build.clear();
      n.build.shrink_to_fit();
    }
    root_.fill(0);
    starts_.fill(0);
    for (std::uint32_t i = 0; i < nodes_[0].count; ++i) {
      const Edge& e = edges_[nodes_[0].first + i];
      root_[e.byte] = e.child;
      starts_[e.byte] = 1;
      if (icase_ && e.byte >= 'a' && e.byte <= 'z') starts_[e.byte - ('a' - 'A')] = 1;
    }
    // One possible first byte of the input (a letter has two when folding):
    // a `contains` scan jumps between its occurrences with memchr.
    if (nodes_[0].count == 1) {
      unsigned char b = edges_[nodes_[0].first].byte;
      if (!(icase_ && b >= 'a' && b <= 'z')) single_first_ = b;
      else pair_first_ = b;  // a letter, matched in either case
    }
    if (mode_ == Mode::kAnywhere && !always_) build_dfa();
  }

  // The literals it was built from, as given (LiteralScan combines them).
  const std::vector<std::string>& literals() const noexcept { return lits_; }
  bool icase() const noexcept { return icase_; }
  bool anywhere() const noexcept { return mode_ == Mode::kAnywhere; }

  bool match(std::string_view s) const noexcept {
    if (always_) return true;
    const std::size_t n = s.size();
    if (mode_ == Mode::kPrefix) return walk(s, 0, +1);
    if (mode_ == Mode::kSuffix) return n > 0 && walk(s, n - 1, -1);
    if (!dfa_.empty()) return scan(s);
    if (single_first_ >= 0) {
      const char* base = s.data();
      const char* p = base;
      const char* end = base + n;
      while (p < end) {
        p = static_cast<const char*>(std::memchr(p, single_first_, static_cast<std::size_t>(end - p)));
        if (!p) return false;
        if (walk(s, static_cast<std::size_t>(p - base), +1)) return true;
        ++p;
      }
      return false;
    }
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    for (std::size_t i = 0; i < n; ++i) {
      if (starts_[b[i]] && walk(s, i, +1)) return true;
    }
    return false;
  }

 private:
  enum class Mode : std::uint8_t { kPrefix, kSuffix, kAnywhere };
  struct Edge {
    unsigned char byte;
    std::uint32_t child;
    bool operator<(const Edge& o) const { return byte < o.byte; }
  };
  struct Node {
    std::uint32_t first = 0, count = 0;
    bool terminal = false;
    std::vector<Edge> build;
  };

  unsigned char fold(char c) const noexcept {
    auto b = static_cast<unsigned char>(c);
    return icase_ && b >= 'A' && b <= 'Z' ? static_cast<unsigned char>(b + ('a' - 'A')) : b;
  }
  std::uint32_t child_or_add(std::uint32_t node, unsigned char b) {
    for (const auto& e : nodes_[node].build) {
      if (e.byte == b) return e.child;
    }
    auto id = static_cast<std::uint32_t>(nodes_.size());
    nodes_[node].build.push_back(Edge{b, id});
    nodes_.emplace_back();
    return id;
  }
  std::uint32_t step(std::uint32_t node, unsigned char b) const noexcept {
    if (node == 0) return root_[b];
    const Node& n = nodes_[node];
    const Edge* e = edges_.data() + n.first;
    for (std::uint32_t i = 0; i < n.count; ++i) {
      if (e[i].byte == b) return e[i].child;
      if (e[i].byte > b) break;
    }
    return 0;
  }
  // Walks from s[at] in direction dir; true when a literal ends on the way.
  bool walk(std::string_view s, std::size_t at, int dir) const noexcept {
    std::uint32_t cur = 0;
    for (std::size_t i = at; i < s.size(); i += static_cast<std::size_t>(dir)) {
      cur = step(cur, fold(s[i]));
      if (cur == 0) return false;
      if (nodes_[cur].terminal) return true;
      if (dir < 0 && i == 0) break;
    }
    return false;
  }

  // The trie as an Aho-Corasick automaton over byte classes (bytes no
  // literal has are one class; with icase_, a letter's two cases are one):
  // dfa_[state * classes + class] is the next state, times `classes`, with
  // kHit set when a literal ends there. A `contains` scan then takes one
  // table step a byte, where walking the trie from every byte that may
  // start a literal went over the same bytes again (" --port" against
  // " --par", " --algo", ...). Built when it has at most kMaxDfa entries
  // (else the scan walks the trie).
  static constexpr std::uint32_t kHit = 0x80000000u;
  static constexpr std::size_t kMaxDfa = 16384;
  void build_dfa() {
    std::array<std::uint32_t, 256> class_of{};  // literal byte -> class (0: none)
    std::uint32_t classes = 1;
    for (const auto& e : edges_) {
      if (class_of[e.byte] == 0) class_of[e.byte] = classes++;
    }
    const std::size_t states = nodes_.size();
    if (states * classes > kMaxDfa) return;
    for (unsigned b = 0; b < 256; ++b) cls_[b] = static_cast<std::uint16_t>(class_of[fold(static_cast<char>(b))]);
    std::vector<std::uint32_t> delta(states * classes, 0);  // unscaled next states
    std::vector<std::uint32_t> fail(states, 0);
    std::vector<bool> hit(states, false);
    for (std::size_t i = 0; i < states; ++i) hit[i] = nodes_[i].terminal;
    // Breadth first: a state's failure state is shallower, so already complete.
    std::vector<std::uint32_t> queue;
    queue.push_back(0);
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const std::uint32_t u = queue[q];
      const Node& nu = nodes_[u];
      // Transitions the trie lacks follow the failure state's.
      for (std::uint32_t c = 0; c < classes; ++c) delta[u * classes + c] = u == 0 ? 0 : delta[fail[u] * classes + c];
      for (std::uint32_t k = 0; k < nu.count; ++k) {
        const Edge& e = edges_[nu.first + k];
        const std::uint32_t c = class_of[e.byte];
        const std::uint32_t v = e.child;
        fail[v] = u == 0 ? 0 : delta[fail[u] * classes + c];
        hit[v] = hit[v] || hit[fail[v]];
        delta[u * classes + c] = v;
        queue.push_back(v);
      }
    }
    dfa_.resize(states * classes);
    for (std::size_t i = 0; i < dfa_.size(); ++i) {
      const std::uint32_t v = delta[i];
      dfa_[i] = v * classes | (hit[v] ? kHit : 0);
    }
  }
  // The automaton's scan. In the start state it skips to the next byte that
  // may begin a literal (memchr when only one can), as the walks did.
  bool scan(std::string_view s) const noexcept {
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    const std::uint32_t* d = dfa_.data();
    std::uint32_t st = 0;
    std::size_t i = 0;
    std::size_t next_lo = 0, next_up = 0;  // pair_first_: next of each case at or after i (n: none)
    if (pair_first_ >= 0) {
      next_lo = find_from(b, n, 0, pair_first_);
      next_up = find_from(b, n, 0, pair_first_ - ('a' - 'A'));
    }
    while (i < n) {
      if (st == 0) {
        if (single_first_ >= 0) {
          const void* p = std::memchr(b + i, single_first_, n - i);
          if (!p) return false;
          i = static_cast<std::size_t>(static_cast<const unsigned char*>(p) - b);
        } else if (pair_first_ >= 0) {
          // The next of either case of the one first letter: each case's
          // next position is searched for again only once passed.
          if (next_lo < i) next_lo = find_from(b, n, i, pair_first_);
          if (next_up < i) next_up = find_from(b, n, i, pair_first_ - ('a' - 'A'));
          i = next_lo < next_up ? next_lo : next_up;
          if (i >= n) return false;
        } else {
          while (i < n && !starts_[b[i]]) ++i;
          if (i == n) return false;
        }
      }
      st = d[st + cls_[b[i]]];
      if (st & kHit) return true;
      ++i;
    }
    return false;
  }

  // The first position at or after `from` of byte c, or n.
  static std::size_t find_from(const unsigned char* b, std::size_t n, std::size_t from, int c) noexcept {
    if (from >= n) return n;
    const void* p = std::memchr(b + from, c, n - from);
    return p ? static_cast<std::size_t>(static_cast<const unsigned char*>(p) - b) : n;
  }

  Mode mode_;
  bool icase_;
  std::vector<std::string> lits_;
  int pair_first_ = -1;  // with icase_: the only (lower-case) letter a literal starts with, -1: none
  std::vector<std::uint32_t> dfa_;
  std::array<std::uint16_t, 256> cls_{};
  bool always_ = false;    // an empty literal: every value matches
  int single_first_ = -1;  // the only byte a literal starts with, -1: several
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::array<std::uint32_t, 256> root_{};
  std::array<std::uint8_t, 256> starts_{};  // input bytes (unfolded) that begin a literal
};

// Several `contains` literal sets looked for in one pass over a value (an
// `or` of contains, icontains and regex prefilters on one field, such as the
// bundled miner rule's pool URLs, flags and algorithm flags on
// proc.cmdline): an Aho-Corasick automaton over the union of their
// literals, ASCII-folded, that reports which sets have a literal in the
// value. A set is matched as LiteralMatcher matches it: an icase set's
// literals are lower case and compared with the value folded (one with an
// upper-case letter, which no folded value holds, is never found); a
// case-sensitive set's literal found by the folded automaton is confirmed
// against the value's own bytes. At most kMaxSets sets; ok() is false when
// a set has no literals or an empty one (every value holds it), or when the
// automaton would have more than kMaxDfa entries. Lookups are const,
// noexcept and never allocate.
class LiteralScan {
 public:
  static constexpr std::size_t kMaxSets = 32;
  static constexpr std::size_t kMaxDfa = 32768;
  struct Set {
    std::vector<std::string> lits;
    bool icase = false;
  };
  explicit LiteralScan(const std::vector<Set>& sets);
  bool ok() const noexcept { return ok_; }
  std::size_t states() const noexcept { return mask_.size(); }
  // The sets with a literal in `s` (bit i: sets[i]). The scan ends early
  // once it has found a set in `stop`, or every set.
  std::uint32_t scan(std::string_view s, std::uint32_t stop) const noexcept;

 private:
  static constexpr std::uint32_t kHit = 0x80000000u;
  struct Verify {
    std::uint32_t set;
    std::string lit;  // as given: compared with the value's bytes
  };
  bool ok_ = false;
  std::uint32_t classes_ = 1;
  std::uint32_t all_ = 0;                   // every set's bit
  std::array<std::uint16_t, 256> cls_{};    // input byte -> class of its folded byte (0: in no literal)
  std::array<std::uint8_t, 256> starts_{};  // input bytes that may begin a literal
  std::vector<std::uint32_t> dfa_;          // [state * classes + class]: next state * classes, kHit
  std::vector<std::uint32_t> mask_;         // per state: the sets found there without a check
  std::vector<std::uint32_t> verify_at_;    // per state + 1: its checks are verify_[at[s], at[s + 1])
  std::vector<Verify> verify_;
};

inline char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

inline bool iequals_prefix(std::string_view h, std::size_t at, std::string_view n) noexcept {
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (lower(h[at + i]) != n[i]) return false;
  }
  return true;
}

inline bool icontains(std::string_view h, std::string_view lower_needle) noexcept {
  if (lower_needle.size() > h.size()) return false;
  for (std::size_t i = 0; i + lower_needle.size() <= h.size(); ++i) {
    if (iequals_prefix(h, i, lower_needle)) return true;
  }
  return false;
}

inline bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
inline bool ends_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Path prefix trie for pmatch: components, with glob components allowed.
class PathTrie {
 public:
  PathTrie() { nodes_.emplace_back(); }
  void add(std::string_view path) {
    std::uint32_t cur = 0;
    for_each_component(path, [&](std::string_view c) {
      bool glob = c.find_first_of("*?[") != std::string_view::npos;
      auto& n = nodes_[cur];
      if (glob) {
        for (auto& [p, id] : n.globs) {
          if (p == c) {
            cur = id;
            return;
          }
        }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        nodes_[cur].globs.emplace_back(std::string(c), id);
        nodes_.emplace_back();
        cur = id;
      } else {
        auto it = n.kids.find(c);
        if (it != n.kids.end()) {
          cur = it->second;
          return;
        }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        nodes_[cur].kids.emplace(std::string(c), id);
        nodes_.emplace_back();
        cur = id;
      }
    });
    nodes_[cur].terminal = true;
  }
  bool match(std::string_view path) const noexcept { return walk(0, path, 0); }
  // The first path component of every pattern, when each is literal: a path
  // that matches has one of them as its own first_component(). False when a
  // pattern begins with a glob or has no component ("/" matches any path).
  bool first_components(std::vector<std::string>& out) const {
    const N& root = nodes_[0];
    if (root.terminal || !root.globs.empty() || root.kids.empty()) return false;
    for (const auto& [c, id] : root.kids) out.push_back(c);
    return true;
  }
  // The component match() compares first: leading slashes skipped, up to
  // the next one ("" for "", "/" and "//").
  static std::string_view first_component(std::string_view path) noexcept {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    return path.substr(0, path.find('/'));
  }

 private:
  template <typename Fn>
  static void for_each_component(std::string_view p, Fn fn) {
    while (!p.empty()) {
      while (!p.empty() && p.front() == '/') p.remove_prefix(1);
      if (p.empty()) break;
      auto e = p.find('/');
      fn(p.substr(0, e));
      if (e == std::string_view::npos) break;
      p.remove_prefix(e);
    }
  }
  bool walk(std::uint32_t node, std::string_view rest, int depth) const noexcept {
    const N& n = nodes_[node];
    if (n.terminal) return true;
    if (depth > 128) return false;
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) return false;
    auto e = rest.find('/');
    std::string_view comp = rest.substr(0, e);
    std::string_view after = e == std::string_view::npos ? std::string_view() : rest.substr(e);
    auto it = n.kids.find(comp);
    if (it != n.kids.end() && walk(it->second, after, depth + 1)) return true;
    for (const auto& [pat, id] : n.globs) {
      if (glob_match(pat, comp, false) && walk(id, after, depth + 1)) return true;
    }
    return false;
  }
  struct N {
    std::unordered_map<std::string, std::uint32_t, SvHash, std::equal_to<>> kids;
    std::vector<std::pair<std::string, std::uint32_t>> globs;
    bool terminal = false;
  };
  std::vector<N> nodes_;
};

}  // namespace vigil::rules
