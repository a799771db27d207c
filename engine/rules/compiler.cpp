#include "engine/rules/compiler.h"

#include "engine/rules/diagnostic.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace vigil::rules {

namespace {

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
  std::int32_t find(std::string_view s) const noexcept {
    const std::size_t n = s.size();
    if (n == 0) return empty_id_;
    if (!((len_mask_ >> (n < 63 ? n : 63)) & 1u)) return -1;
    auto f = static_cast<unsigned char>(s.front());
    auto l = static_cast<unsigned char>(s.back());
    if (!((first_[f >> 6] >> (f & 63)) & 1u) || !((last_[l >> 6] >> (l & 63)) & 1u)) return -1;
    const std::uint64_t h = hash(s);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.len == kEmpty) return -1;
      if (sl.hash == h && sl.len == n && std::memcmp(data_.data() + sl.off, s.data(), n) == 0) {
        return static_cast<std::int32_t>(sl.id);
      }
    }
  }
  static std::uint64_t hash(std::string_view s) noexcept {
    constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15ull;
    std::uint64_t h = 0x84222325cbf29ce4ull ^ (s.size() * kMul);
    const char* p = s.data();
    std::size_t n = s.size();
    while (n >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * kMul;
      h ^= h >> 29;
      p += 8;
      n -= 8;
    }
    std::uint64_t w = 0;
    for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    h = (h ^ w) * kMul;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
  }

 private:
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
      : mode_(op == Op::kStartsWith ? Mode::kPrefix : op == Op::kEndsWith ? Mode::kSuffix : Mode::kAnywhere),
        icase_(op == Op::kIContains) {
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
    }
  }

  bool match(std::string_view s) const noexcept {
    if (always_) return true;
    const std::size_t n = s.size();
    if (mode_ == Mode::kPrefix) return walk(s, 0, +1);
    if (mode_ == Mode::kSuffix) return n > 0 && walk(s, n - 1, -1);
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

  Mode mode_;
  bool icase_;
  bool always_ = false;  // an empty literal: every value matches
  int single_first_ = -1;  // the only byte a literal starts with, -1: several
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::array<std::uint32_t, 256> root_{};
  std::array<std::uint8_t, 256> starts_{};  // input bytes (unfolded) that begin a literal
};

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

bool iequals_prefix(std::string_view h, std::size_t at, std::string_view n) noexcept {
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (lower(h[at + i]) != n[i]) return false;
  }
  return true;
}

bool icontains(std::string_view h, std::string_view lower_needle) noexcept {
  if (lower_needle.size() > h.size()) return false;
  for (std::size_t i = 0; i + lower_needle.size() <= h.size(); ++i) {
    if (iequals_prefix(h, i, lower_needle)) return true;
  }
  return false;
}

bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool ends_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool parse_int(std::string_view t, std::int64_t& out) {
  bool neg = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  if (t.empty()) return false;
  std::uint64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return false;
  if (v > static_cast<std::uint64_t>(INT64_MAX) + (neg ? 1u : 0u)) return false;
  out = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  return true;
}

bool parse_bool(std::string_view t, bool& out) {
  if (t == "true") { out = true; return true; }
  if (t == "false") { out = false; return true; }
  return false;
}

bool hex_decode(std::string_view t, std::string& out) {
  if (t.size() % 2) return false;
  for (std::size_t i = 0; i < t.size(); i += 2) {
    unsigned v = 0;
    auto r = std::from_chars(t.data() + i, t.data() + i + 2, v, 16);
    if (r.ec != std::errc() || r.ptr != t.data() + i + 2) return false;
    out += static_cast<char>(v);
  }
  return true;
}

int b64_val(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
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
          if (p == c) { cur = id; return; }
        }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        nodes_[cur].globs.emplace_back(std::string(c), id);
        nodes_.emplace_back();
        cur = id;
      } else {
        auto it = n.kids.find(c);
        if (it != n.kids.end()) { cur = it->second; return; }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        nodes_[cur].kids.emplace(std::string(c), id);
        nodes_.emplace_back();
        cur = id;
      }
    });
    nodes_[cur].terminal = true;
  }
  bool match(std::string_view path) const noexcept { return walk(0, path, 0); }
  const std::vector<std::string>& literal_paths() const { return literals_; }
  std::vector<std::string> literals_;

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

}  // namespace

// ---------------------------------------------------------------- glob

bool glob_match(std::string_view p, std::string_view s, bool icase) noexcept {
  std::size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  auto eq = [icase](char a, char b) { return icase ? lower(a) == lower(b) : a == b; };
  while (si < s.size()) {
    if (pi < p.size()) {
      char c = p[pi];
      if (c == '*') {
        star_p = ++pi;
        star_s = si;
        continue;
      }
      if (c == '?') { ++pi; ++si; continue; }
      if (c == '[') {
        std::size_t j = pi + 1;
        bool neg = false;
        if (j < p.size() && (p[j] == '!' || p[j] == '^')) { neg = true; ++j; }
        bool matched = false;
        std::size_t start = j;
        while (j < p.size() && (p[j] != ']' || j == start)) {
          if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char lo = p[j], hi = p[j + 2];
            char sc = s[si];
            if (icase) { lo = lower(lo); hi = lower(hi); sc = lower(sc); }
            if (sc >= lo && sc <= hi) matched = true;
            j += 3;
          } else {
            if (eq(p[j], s[si])) matched = true;
            ++j;
          }
        }
        if (j < p.size() && matched != neg) {
          pi = j + 1;
          ++si;
          continue;
        }
        if (j >= p.size() && eq('[', s[si])) {  // unterminated: literal '['
          ++pi; ++si;
          continue;
        }
      } else {
        if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
        if (eq(c, s[si])) { ++pi; ++si; continue; }
      }
    }
    if (star_p != std::string_view::npos) {
      pi = star_p;
      si = ++star_s;
      continue;
    }
    return false;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// ---------------------------------------------------------------- compiled form

// Members the event path reads come first, so a check's evaluation touches
// few cache lines.
struct CCheck {
  int id = -1;  // CheckCache slot, -1: not cached
  // 0 or 1: the check gives this result for every event (its field does not
  // depend on the event: evt.source, evt.num, evt.dir); -1: it depends.
  std::int8_t constant = -1;
  FieldType ltype = FieldType::kString;
  bool multi_all_in = false;     // list field with `in`: every element must be in the set
  bool multi = false;            // several values: any must hold
  Op op = Op::kEq;
  Modifier mod = Modifier::kNone;
  bool rhs_field = false;
  bool boolean = false;
  FieldInst lhs;
  std::vector<Transformer> ltr;  // innermost first
  // Right-hand side, prepared by type.
  std::string str;               // single string (lower-cased for icontains/iglob)
  LiteralSet set;
  std::vector<std::int64_t> nums;
  std::vector<std::int64_t> numset;  // sorted, unique
  std::vector<Cidr> nets;
  std::vector<std::unique_ptr<RE2>> res;
  // Parallel to res: literals one of which any match must contain (found by
  // RE2's FilteredRE2 analysis, matched case-insensitively); null: none known.
  std::vector<std::unique_ptr<LiteralMatcher>> re_pre;
  std::unique_ptr<PathTrie> trie;
  // `anyof` over contains/icontains/startswith/endswith, and or-chains of
  // contains on one field, as one literal matcher (one pass).
  std::unique_ptr<LiteralMatcher> any_lit;
  std::vector<std::string> strs; // modifier values
  FieldInst rf;
  std::vector<Transformer> rtr;
  FieldType rtype = FieldType::kString;
  // Not used on the event path.
  std::string text;  // canonical text of the check (plans, diagnostics)
  // A check on fd.name & co whose values are literal paths/prefixes (for the
  // sensor's open filter).
  bool path_check = false;
  std::vector<PathLiteral> path_literals;
};

struct CNode {
  enum class Kind : std::uint8_t { kAnd, kOr, kNot, kCheck, kBool, kTypeMask };
  Kind kind = Kind::kBool;
  bool value = false;           // kBool
  event::TypeMask mask;         // kTypeMask
  std::vector<CNode> kids;
  std::shared_ptr<const CCheck> check;  // shared by the per-event-type copies
};

Expr::Expr() { flat_start_.fill(kNoProgram); }
namespace {
void flatten_node(const CNode& n, std::vector<FNode>& out);
}  // namespace
namespace {

// A rough cost of evaluating a node, to evaluate cheap tests of an and/or
// first (both are pure, so their order does not change the result).
int cost(const CNode& n) {
  switch (n.kind) {
    case CNode::Kind::kBool:
    case CNode::Kind::kTypeMask: return 0;
    case CNode::Kind::kNot: return cost(n.kids[0]);
    case CNode::Kind::kAnd:
    case CNode::Kind::kOr: {
      int c = 0;
      for (const auto& k : n.kids) c += cost(k);
      return c;
    }
    case CNode::Kind::kCheck: {
      const CCheck& k = *n.check;
      int c = 2;
      if (!k.ltr.empty()) c += 4;
      if (k.multi) c += 4;
      if (k.rhs_field) c += 3;
      if (k.op == Op::kRegex) c += 8;
      if (k.any_lit) c += 4;
      if (k.op == Op::kContains || k.op == Op::kIContains || k.op == Op::kGlob || k.op == Op::kIGlob ||
          k.op == Op::kPMatch || k.mod != Modifier::kNone) {
        c += 3;
      }
      std::string_view f = k.lhs.def ? k.lhs.def->name : std::string_view();
      // Fields that compose strings or look up other processes or the state.
      if (f == "proc.cmdline" || f == "proc.args" || f == "proc.pcmdline" || f.find(".aname") != f.npos ||
          f.find(".apid") != f.npos || f.find(".aexe") != f.npos || f == "user.name" || f == "group.name" ||
          f == "proc.pname" || f == "proc.pexe" || f == "proc.pexepath" || f == "fd.name" || f.find("sip.name") != f.npos ||
          f == "evt.arg.flags" || f.rfind("gpu.all", 0) == 0) {
        c += 3;
      }
      return c;
    }
  }
  return 1;
}

// A rough guess of how often a node is true for a benign event. Positive
// tests (=, in, contains, startswith, regex...) rarely hold; their negations
// (the `and not ...` exceptions of most rules) almost always do.
double true_share(const CNode& n) {
  switch (n.kind) {
    case CNode::Kind::kBool: return n.value ? 1.0 : 0.0;
    case CNode::Kind::kTypeMask: return 0.5;
    case CNode::Kind::kNot: return 1.0 - true_share(n.kids[0]);
    case CNode::Kind::kAnd: {
      double p = 1.0;
      for (const auto& k : n.kids) p *= true_share(k);
      return p;
    }
    case CNode::Kind::kOr: {
      double q = 1.0;
      for (const auto& k : n.kids) q *= 1.0 - true_share(k);
      return 1.0 - q;
    }
    case CNode::Kind::kCheck: {
      const CCheck& k = *n.check;
      // A field only some events of a type fill (gpu.device: opens of NVIDIA
      // device nodes; fd.sip.name: servers a DNS answer named) is rarely there.
      const bool narrow = k.lhs.def && !k.lhs.def->events.all();
      switch (k.op) {
        case Op::kNe: return 0.9;
        case Op::kExists: return narrow ? 0.3 : 0.9;
        case Op::kLt: case Op::kLe: case Op::kGt: case Op::kGe: return 0.5;
        default: break;
      }
      if (k.ltype == FieldType::kBool) return 0.5;
      return 0.1;
    }
  }
  return 0.5;
}

// Orders the children of an and (or) so that the expected work before the
// first false (true) child is smallest: by cost over the chance of deciding
// the result. Both are pure, so the order never changes the result.
void order_kids(std::vector<CNode>& kids, bool is_and) {
  auto key = [is_and](const CNode& n) {
    double p = std::clamp(true_share(n), 0.02, 0.98);
    double decide = is_and ? 1.0 - p : p;
    return (static_cast<double>(cost(n)) + 0.5) / decide;
  };
  std::vector<std::pair<double, std::size_t>> keyed;
  keyed.reserve(kids.size());
  for (std::size_t i = 0; i < kids.size(); ++i) keyed.emplace_back(key(kids[i]), i);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CNode> out;
  out.reserve(kids.size());
  for (const auto& [k, i] : keyed) out.push_back(std::move(kids[i]));
  kids = std::move(out);
}

// A copy of `n` specialised for events of one type: evt.type tests become
// constants, constants fold away, and nested and/or of one kind are flattened.
// With `fold`, checks whose result is the same for every event become
// constants too.
// Without `reorder`, children keep their order as written.
CNode specialise(const CNode& n, unsigned type, bool fold, bool reorder) {
  CNode c;
  switch (n.kind) {
    case CNode::Kind::kTypeMask:
      c.kind = CNode::Kind::kBool;
      c.value = n.mask.test(static_cast<event::Type>(type));
      return c;
    case CNode::Kind::kCheck:
      if (fold && n.check && n.check->constant >= 0) {
        c.kind = CNode::Kind::kBool;
        c.value = n.check->constant == 1;
        return c;
      }
      [[fallthrough]];
    case CNode::Kind::kBool:
      c.kind = n.kind;
      c.value = n.value;
      c.check = n.check;
      return c;
    case CNode::Kind::kNot: {
      CNode k = specialise(n.kids[0], type, fold, reorder);
      if (k.kind == CNode::Kind::kBool) {
        k.value = !k.value;
        return k;
      }
      c.kind = CNode::Kind::kNot;
      c.kids.push_back(std::move(k));
      return c;
    }
    case CNode::Kind::kAnd:
    case CNode::Kind::kOr: {
      bool is_and = n.kind == CNode::Kind::kAnd;
      c.kind = n.kind;
      for (const auto& kid : n.kids) {
        CNode k = specialise(kid, type, fold, reorder);
        if (k.kind == CNode::Kind::kBool) {
          if (k.value != is_and) {  // false in an and, true in an or: decides it
            CNode r;
            r.kind = CNode::Kind::kBool;
            r.value = k.value;
            return r;
          }
          continue;  // true in an and, false in an or: no effect
        }
        if (k.kind == n.kind) {
          for (auto& g : k.kids) c.kids.push_back(std::move(g));
        } else {
          c.kids.push_back(std::move(k));
        }
      }
      if (c.kids.empty()) {
        CNode r;
        r.kind = CNode::Kind::kBool;
        r.value = is_and;
        return r;
      }
      if (c.kids.size() == 1) return std::move(c.kids[0]);
      if (reorder) order_kids(c.kids, is_and);
      return c;
    }
  }
  return c;
}

}  // namespace

Expr::Expr(std::unique_ptr<CNode> root, bool optimise) : root_(std::move(root)) {
  flat_start_.fill(kNoProgram);
  for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
    // The type mask rules are listed and checked under ignores constant
    // checks (a rule guarded by never_true still "runs" for its types).
    CNode plain = specialise(*root_, t, false, false);
    if (plain.kind == CNode::Kind::kBool && !plain.value) continue;  // can never match this type
    type_bits_.set(static_cast<event::Type>(t));
    CNode s = specialise(*root_, t, optimise, optimise);
    if (s.kind == CNode::Kind::kBool && !s.value) continue;  // never true: not evaluated
    flat_start_[t] = static_cast<std::uint32_t>(flat_.size());
    flatten_node(s, flat_);
    by_type_[t] = std::make_unique<CNode>(std::move(s));
  }
}
Expr::~Expr() = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

// ---------------------------------------------------------------- extraction

namespace {

void apply_transformer(Transformer t, FieldType in, Extracted& e, Arena& a, FieldType& out) noexcept {
  if (t == Transformer::kLen) {
    std::int64_t len = 0;
    if (in == FieldType::kList) {
      len = static_cast<std::int64_t>(e.n);
      e.n = 1;
    } else if (e.n > 0) {
      for (std::size_t i = 0; i < e.n; ++i) e.v[i].i = static_cast<std::int64_t>(e.v[i].s.size());
      out = FieldType::kInt;
      return;
    } else {
      e.n = 1;
    }
    e.v[0].i = len;
    out = FieldType::kInt;
    return;
  }
  out = in;
  for (std::size_t i = 0; i < e.n; ++i) {
    std::string_view s = e.v[i].s;
    switch (t) {
      case Transformer::kToLower:
      case Transformer::kToUpper: {
        a.begin();
        std::size_t got = 0;
        char* p = a.extend(s.size(), got);
        // ASCII letters only, branch-free: one subtraction and compare a byte.
        const unsigned char from = t == Transformer::kToLower ? 'A' : 'a';
        const int delta = t == Transformer::kToLower ? ('a' - 'A') : -('a' - 'A');
        for (std::size_t k = 0; k < got; ++k) {
          auto ch = static_cast<unsigned char>(s[k]);
          bool letter = static_cast<unsigned char>(ch - from) < 26;
          p[k] = static_cast<char>(ch + (letter ? delta : 0));
        }
        e.v[i].s = a.finish();
        break;
      }
      case Transformer::kBasename: {
        auto p = s.rfind('/');
        e.v[i].s = p == std::string_view::npos ? s : s.substr(p + 1);
        break;
      }
      case Transformer::kB64: {
        a.begin();
        std::uint32_t acc = 0;
        int bits = 0;
        bool bad = false;
        for (char c : s) {
          if (c == '=') break;
          int v = b64_val(c);
          if (v < 0) { bad = true; break; }
          acc = (acc << 6) | static_cast<std::uint32_t>(v);
          bits += 6;
          if (bits >= 8) {
            bits -= 8;
            a.append(static_cast<char>((acc >> bits) & 0xff));
          }
        }
        if (bad) {
          // Not base64: no value (Falco's behaviour for a failed transform).
          e.v[i] = e.v[e.n - 1];
          --e.n;
          --i;
          continue;
        }
        e.v[i].s = a.finish();
        break;
      }
      case Transformer::kLen: break;
    }
  }
}

}  // namespace

FieldType extract_field(const ExtractCtx& x, const FieldInst& f,
                        const std::vector<Transformer>& tr, Extracted& out) noexcept {
  out.n = 0;
  FieldCache* c = x.cache;
  if (c && f.slot >= 0) {
    auto s = static_cast<unsigned>(f.slot);
    if ((c->done[s / 64] >> (s % 64)) & 1u) {
      out.n = c->count[s];
      if (out.n) out.v[0] = c->val[s];
    } else {
      f.def->fn(x, f, out);
      if (out.n <= 1) {
        c->done[s / 64] |= std::uint64_t{1} << (s % 64);
        c->count[s] = static_cast<std::uint8_t>(out.n);
        if (out.n) c->val[s] = out.v[0];
      }
    }
  } else {
    f.def->fn(x, f, out);
  }
  FieldType t = f.def->type;
  for (auto it = tr.begin(); it != tr.end(); ++it) apply_transformer(*it, t, out, *x.arena, t);
  return t;
}

// ---------------------------------------------------------------- evaluation

namespace {

bool cmp_str(const CCheck& c, Op op, std::string_view v, std::string_view rhs, std::size_t idx) noexcept {
  switch (op) {
    case Op::kEq: return v == rhs;
    case Op::kNe: return v != rhs;
    case Op::kContains: return v.find(rhs) != std::string_view::npos;
    case Op::kIContains: return icontains(v, rhs);
    case Op::kBContains: return v.find(rhs) != std::string_view::npos;
    case Op::kStartsWith: return starts_with(v, rhs);
    case Op::kBStartsWith: return starts_with(v, rhs);
    case Op::kEndsWith: return ends_with(v, rhs);
    case Op::kGlob: return glob_match(rhs, v, false);
    case Op::kIGlob: return glob_match(rhs, v, true);
    case Op::kRegex: {
      if (idx >= c.res.size() || !c.res[idx]) return false;
      if (idx < c.re_pre.size() && c.re_pre[idx] && !c.re_pre[idx]->match(v)) return false;
      return RE2::FullMatch(re2::StringPiece(v.data(), v.size()), *c.res[idx]);
    }
    case Op::kIn:
    case Op::kIntersects: return c.set.contains(v);
    case Op::kPMatch: return c.trie && c.trie->match(v);
    default: return false;
  }
}

bool cmp_num(Op op, std::int64_t v, std::int64_t r) noexcept {
  switch (op) {
    case Op::kEq: return v == r;
    case Op::kNe: return v != r;
    case Op::kLt: return v < r;
    case Op::kLe: return v <= r;
    case Op::kGt: return v > r;
    case Op::kGe: return v >= r;
    default: return false;
  }
}

// One value against the prepared right-hand side (no modifier).
bool test_one(const CCheck& c, Op op, const Val& v) noexcept {
  switch (c.ltype) {
    case FieldType::kString:
    case FieldType::kList:
      return cmp_str(c, op, v.s, c.str, 0);
    case FieldType::kInt:
    case FieldType::kUint:
      if (op == Op::kIn || op == Op::kIntersects) {
        return std::binary_search(c.numset.begin(), c.numset.end(), v.i);
      }
      return cmp_num(op, v.i, c.nums.empty() ? 0 : c.nums[0]);
    case FieldType::kBool:
      if (op == Op::kIn || op == Op::kIntersects) {
        for (auto n : c.nums) if ((n != 0) == v.b) return true;
        return false;
      }
      return op == Op::kEq ? v.b == c.boolean : v.b != c.boolean;
    case FieldType::kIp: {
      bool any = false;
      for (const auto& n : c.nets) {
        if (n.contains(*v.ip)) { any = true; break; }
      }
      return op == Op::kNe ? !any : any;
    }
  }
  return false;
}

bool test_modifier(const CCheck& c, const Val& v) noexcept {
  if (c.any_lit) return c.any_lit->match(v.s);
  std::size_t hits = 0;
  for (std::size_t i = 0; i < c.strs.size(); ++i) {
    bool h = cmp_str(c, c.op, v.s, c.strs[i], i);
    if (h) {
      ++hits;
      if (c.mod == Modifier::kAnyOf) return true;
    } else if (c.mod == Modifier::kAllOf) {
      return false;
    }
  }
  if (c.mod == Modifier::kAllOf) return !c.strs.empty();
  if (c.mod == Modifier::kOneOf) return hits == 1;
  return false;
}

bool compare_vals(Op op, FieldType t, const Val& a, const Val& b) noexcept {
  switch (t) {
    case FieldType::kString:
    case FieldType::kList:
      switch (op) {
        case Op::kEq: case Op::kIn: case Op::kIntersects: return a.s == b.s;
        case Op::kNe: return a.s != b.s;
        case Op::kContains: return a.s.find(b.s) != std::string_view::npos;
        case Op::kStartsWith: return starts_with(a.s, b.s);
        case Op::kEndsWith: return ends_with(a.s, b.s);
        case Op::kGlob: return glob_match(b.s, a.s, false);
        case Op::kIGlob: return glob_match(b.s, a.s, true);
        case Op::kIContains: {
          for (std::size_t i = 0; i + b.s.size() <= a.s.size(); ++i) {
            bool ok = true;
            for (std::size_t j = 0; j < b.s.size() && ok; ++j) ok = lower(a.s[i + j]) == lower(b.s[j]);
            if (ok) return true;
          }
          return false;
        }
        default: return false;
      }
    case FieldType::kInt:
    case FieldType::kUint: return cmp_num(op == Op::kIn || op == Op::kIntersects ? Op::kEq : op, a.i, b.i);
    case FieldType::kBool: return op == Op::kNe ? a.b != b.b : a.b == b.b;
    case FieldType::kIp: return op == Op::kNe ? !(*a.ip == *b.ip) : *a.ip == *b.ip;
  }
  return false;
}

bool eval_check(const CCheck& c, const ExtractCtx& x) noexcept {
  Extracted l;
  extract_field(x, c.lhs, c.ltr, l);
  if (c.op == Op::kExists) return l.n > 0;
  if (l.n == 0) return false;
  if (c.rhs_field) {
    Extracted r;
    extract_field(x, c.rf, c.rtr, r);
    if (r.n == 0) return false;
    for (std::size_t i = 0; i < l.n; ++i) {
      for (std::size_t j = 0; j < r.n; ++j) {
        if (compare_vals(c.op, c.ltype, l.v[i], r.v[j])) return true;
      }
    }
    return false;
  }
  if (c.mod != Modifier::kNone) {
    for (std::size_t i = 0; i < l.n; ++i) {
      if (test_modifier(c, l.v[i])) return true;
    }
    return false;
  }
  if (c.multi_all_in) {
    for (std::size_t i = 0; i < l.n; ++i) {
      if (!test_one(c, c.op, l.v[i])) return false;
    }
    return true;
  }
  if (c.op == Op::kNe && l.n > 1) {
    for (std::size_t i = 0; i < l.n; ++i) {
      if (test_one(c, Op::kEq, l.v[i])) return false;
    }
    return true;
  }
  for (std::size_t i = 0; i < l.n; ++i) {
    if (test_one(c, c.op, l.v[i])) return true;
  }
  return false;
}


void flatten_node(const CNode& n, std::vector<FNode>& out) {
  std::size_t at = out.size();
  FNode f;
  f.kind = static_cast<std::uint8_t>(n.kind);
  f.value = n.kind == CNode::Kind::kBool ? n.value : false;
  if (n.kind == CNode::Kind::kTypeMask) {  // folded by specialise(); kept for completeness
    f.kind = static_cast<std::uint8_t>(CNode::Kind::kBool);
    f.value = true;
  }
  if (n.kind == CNode::Kind::kCheck) {
    f.check = n.check.get();
    f.id = n.check->id;
  }
  out.push_back(f);
  for (const auto& k : n.kids) flatten_node(k, out);
  out[at].size = static_cast<std::uint32_t>(out.size() - at);
}

bool eval_flat(const FNode* n, const ExtractCtx& x) noexcept {
  switch (static_cast<CNode::Kind>(n->kind)) {
    case CNode::Kind::kAnd: {
      const FNode* end = n + n->size;
      for (const FNode* k = n + 1; k < end; k += k->size) {
        if (!eval_flat(k, x)) return false;
      }
      return true;
    }
    case CNode::Kind::kOr: {
      const FNode* end = n + n->size;
      for (const FNode* k = n + 1; k < end; k += k->size) {
        if (eval_flat(k, x)) return true;
      }
      return false;
    }
    case CNode::Kind::kNot: return !eval_flat(n + 1, x);
    case CNode::Kind::kBool:
    case CNode::Kind::kTypeMask: return n->value;
    case CNode::Kind::kCheck: {
      CheckCache* cc = x.checks;
      if (!cc || n->id < 0) return eval_check(*n->check, x);
      auto id = static_cast<unsigned>(n->id);
      std::uint64_t bit = std::uint64_t{1} << (id % 64);
      if (cc->done[id / 64] & bit) return (cc->value[id / 64] & bit) != 0;
      bool v = eval_check(*n->check, x);
      cc->done[id / 64] |= bit;
      if (v) cc->value[id / 64] |= bit;
      else cc->value[id / 64] &= ~bit;
      return v;
    }
  }
  return false;
}

event::TypeMask mask_of(const CNode& n, bool neg) {
  switch (n.kind) {
    case CNode::Kind::kTypeMask: return neg ? ~n.mask : n.mask;
    case CNode::Kind::kBool: return (n.value != neg) ? event::TypeMask::all() : event::TypeMask();
    case CNode::Kind::kCheck: return event::TypeMask::all();
    case CNode::Kind::kNot: return mask_of(n.kids[0], !neg);
    case CNode::Kind::kAnd:
    case CNode::Kind::kOr: {
      bool intersect = (n.kind == CNode::Kind::kAnd) != neg;
      event::TypeMask m = intersect ? event::TypeMask::all() : event::TypeMask();
      for (const auto& k : n.kids) {
        auto km = mask_of(k, neg);
        m = intersect ? (m & km) : (m | km);
      }
      return m;
    }
  }
  return event::TypeMask::all();
}

// Every way to satisfy the node needs one of the returned path prefixes.
bool prefixes_of(const CNode& n, std::vector<PathLiteral>& out) {
  switch (n.kind) {
    case CNode::Kind::kCheck:
      if (!n.check || !n.check->path_check) return false;
      out.insert(out.end(), n.check->path_literals.begin(), n.check->path_literals.end());
      return true;
    case CNode::Kind::kBool: return !n.value;  // false needs nothing to be true... never true
    case CNode::Kind::kAnd: {
      for (const auto& k : n.kids) {
        std::vector<PathLiteral> tmp;
        if (prefixes_of(k, tmp)) {
          out.insert(out.end(), tmp.begin(), tmp.end());
          return true;
        }
      }
      return false;
    }
    case CNode::Kind::kOr: {
      std::vector<PathLiteral> all;
      for (const auto& k : n.kids) {
        if (!prefixes_of(k, all)) return false;
      }
      out.insert(out.end(), all.begin(), all.end());
      return true;
    }
    default: return false;
  }
}

}  // namespace

bool Expr::eval(const ExtractCtx& x) const noexcept {
  auto t = static_cast<std::size_t>(x.ctx->ev->hdr.type);
  if (t >= by_type_.size()) return false;
  std::uint32_t at = flat_start_[t];
  return at != kNoProgram && eval_flat(flat_.data() + at, x);
}
event::TypeMask Expr::type_mask() const {
  if (!root_) return {};
  event::TypeMask m = mask_of(*root_, false);
  // Drop the types for which the specialised condition is constant false.
  return m & type_bits_;
}
bool eval_program(const FNode* program, const ExtractCtx& x) noexcept { return eval_flat(program, x); }

void Expr::append_program(event::Type t, std::vector<FNode>& out) const {
  auto i = static_cast<std::size_t>(t);
  if (i >= by_type_.size() || flat_start_[i] == kNoProgram) return;
  auto b = flat_.begin() + flat_start_[i];
  out.insert(out.end(), b, b + b->size);
}

event::TypeMask Expr::eval_mask() const {
  event::TypeMask m;
  for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
    if (by_type_[t]) m.set(static_cast<event::Type>(t));
  }
  return m;
}
namespace {
void render_plan(const CNode& n, int depth, std::string& out) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  switch (n.kind) {
    case CNode::Kind::kAnd: out += "and\n"; break;
    case CNode::Kind::kOr: out += "or\n"; break;
    case CNode::Kind::kNot: out += "not\n"; break;
    case CNode::Kind::kBool: out += n.value ? "true\n" : "false\n"; return;
    case CNode::Kind::kTypeMask: out += "evt.type in (" + event::type_names(n.mask) + ")\n"; return;
    case CNode::Kind::kCheck: {
      const CCheck& c = *n.check;
      out += c.text.empty() ? "anyof(" + std::string(op_name(c.op)) + ") on " +
                                  std::string(c.lhs.def ? c.lhs.def->name : "?")
                            : c.text;
      out += '\n';
      return;
    }
  }
  for (const auto& k : n.kids) render_plan(k, depth + 1, out);
}
}  // namespace

std::string Expr::plan(event::Type t) const {
  auto i = static_cast<std::size_t>(t);
  if (i >= by_type_.size() || !by_type_[i]) return "false\n";
  std::string out;
  render_plan(*by_type_[i], 0, out);
  return out;
}
bool Expr::path_prefixes(std::vector<PathLiteral>& out) const {
  return root_ && prefixes_of(*root_, out);
}

// ---------------------------------------------------------------- guard index

struct GuardIndex::Field {
  FieldInst inst;
  LiteralSet values;                 // string values some guard compares with
  std::vector<std::uint64_t> masks;  // words() words per member of `values`
  std::vector<std::uint64_t> exists; // rules that only need a value; empty: none
  std::vector<std::pair<std::string, std::uint32_t>> pending_rules;  // while building
};

GuardIndex::GuardIndex() = default;
GuardIndex::~GuardIndex() = default;
GuardIndex::GuardIndex(GuardIndex&&) noexcept = default;
GuardIndex& GuardIndex::operator=(GuardIndex&&) noexcept = default;

namespace {

bool guard_check(const CCheck& c) {
  if (c.rhs_field || c.mod != Modifier::kNone || !c.ltr.empty() || c.multi || !c.lhs.def) return false;
  if (c.op == Op::kExists) return true;
  if (c.op != Op::kEq && c.op != Op::kIn) return false;
  return c.ltype == FieldType::kString || c.ltype == FieldType::kInt || c.ltype == FieldType::kUint ||
         c.ltype == FieldType::kBool;
}

// A guard value as a lookup key: strings as they are, numbers as their 8
// bytes, booleans as one byte (one field always has one type).
std::string int_key(std::int64_t v) {
  std::string k(8, '\0');
  std::memcpy(k.data(), &v, 8);
  return k;
}
std::string bool_key(bool b) { return std::string(1, b ? '\1' : '\0'); }

// The values a guard check lets through, as keys.
std::vector<std::string> guard_keys(const CCheck& c) {
  std::vector<std::string> keys;
  switch (c.ltype) {
    case FieldType::kString:
      if (c.op == Op::kEq) keys.push_back(c.str);
      else keys = c.set.members();
      break;
    case FieldType::kInt:
    case FieldType::kUint:
      if (c.op == Op::kEq) keys.push_back(int_key(c.nums.empty() ? 0 : c.nums[0]));
      else for (auto v : c.numset) keys.push_back(int_key(v));
      break;
    case FieldType::kBool:
      if (c.op == Op::kEq) keys.push_back(bool_key(c.boolean));
      else for (auto v : c.nums) keys.push_back(bool_key(v != 0));
      break;
    default: break;
  }
  return keys;
}

// The tests of `n` when `n` is a guard: a guard check, an or of guards, or
// (inside an or) an and with a guard among its terms, which stands for it:
// the and needs it. In an and, a value test is taken over `exists` and
// booleans.
bool guard_terms(const CNode& n, std::vector<const CCheck*>& out, bool in_or = false) {
  if (n.kind == CNode::Kind::kCheck) {
    if (!n.check || !guard_check(*n.check)) return false;
    out.push_back(n.check.get());
    return true;
  }
  if (n.kind == CNode::Kind::kOr) {
    for (const auto& k : n.kids) {
      if (!guard_terms(k, out, true)) return false;
    }
    return !n.kids.empty();
  }
  if (n.kind == CNode::Kind::kAnd && in_or) {
    std::vector<const CCheck*> best;
    bool best_is_value = false;
    for (const auto& k : n.kids) {
      std::vector<const CCheck*> g;
      if (!guard_terms(k, g, false)) continue;
      bool value = true;
      for (const CCheck* c : g) value = value && c->op != Op::kExists && c->ltype != FieldType::kBool;
      if (best.empty() || (value && !best_is_value)) {
        best = std::move(g);
        best_is_value = value;
      }
    }
    if (best.empty()) return false;
    out.insert(out.end(), best.begin(), best.end());
    return true;
  }
  return false;
}

// The guard candidates of a specialised condition: the condition itself or
// each of its top-level `and` terms that is a guard.
std::vector<std::vector<const CCheck*>> guard_candidates(const CNode& root) {
  std::vector<std::vector<const CCheck*>> out;
  auto consider = [&](const CNode& n) {
    std::vector<const CCheck*> g;
    if (guard_terms(n, g)) out.push_back(std::move(g));
  };
  if (root.kind == CNode::Kind::kAnd) {
    for (const auto& k : root.kids) consider(k);
  } else {
    consider(root);
  }
  return out;
}

bool same_field(const FieldInst& a, const FieldInst& b) {
  return a.def == b.def && a.arg == b.arg && a.has_arg == b.has_arg && a.index == b.index;
}

}  // namespace

void GuardIndex::build(const std::vector<const Expr*>& exprs, event::Type t) {
  fields_.clear();
  active_ = false;
  const std::size_t n = exprs.size();
  words_ = (n + 63) / 64;
  always_.assign(words_, 0);
  if (n > kMaxRules) return;
  auto ti = static_cast<std::size_t>(t);
  std::vector<std::vector<std::vector<const CCheck*>>> cands(n);
  for (std::size_t r = 0; r < n; ++r) {
    const Expr* e = exprs[r];
    const CNode* root = e && ti < e->by_type_.size() ? e->by_type_[ti].get() : nullptr;
    if (root) cands[r] = guard_candidates(*root);
  }
  // How many distinct values the rules compare each field with: a field
  // with few (fd.typechar = f in every open rule) lets nearly every event
  // through, one with many (fd.name) sorts events well.
  std::map<std::tuple<const FieldDef*, std::string, std::int64_t>, std::set<std::string>> distinct;
  for (const auto& rc : cands) {
    for (const auto& g : rc) {
      for (const CCheck* c : g) {
        auto& d = distinct[{c->lhs.def, c->lhs.arg, c->lhs.index}];
        if (c->op == Op::kExists) continue;
        for (auto& k : guard_keys(*c)) d.insert(std::move(k));
      }
    }
  }
  // A guard's worth, compared as (strong, cardinality): a term is strong
  // when its field is compared with several numbers or with some string
  // longer than 3 bytes (fd.typechar = f, fd.l4proto = tcp, gpu.limit = 0,
  // booleans and `exists` are weak: many events have such values). Over the
  // terms of an `or`, the weakest.
  // Ties go to fields more rules can be guarded by (one extraction serves
  // them all).
  std::map<std::tuple<const FieldDef*, std::string, std::int64_t>, std::size_t> popular;
  for (const auto& rc : cands) {
    std::set<std::tuple<const FieldDef*, std::string, std::int64_t>> mine;
    for (const auto& g : rc) {
      for (const CCheck* c : g) mine.insert({c->lhs.def, c->lhs.arg, c->lhs.index});
    }
    for (const auto& f : mine) ++popular[f];
  }
  auto worth = [&](const std::vector<const CCheck*>& g) {
    std::tuple<int, std::size_t, std::size_t> w{2, SIZE_MAX, SIZE_MAX};
    for (const CCheck* c : g) {
      std::tuple<const FieldDef*, std::string, std::int64_t> key{c->lhs.def, c->lhs.arg, c->lhs.index};
      // A boolean is weakest of all (evt.failed = false holds for most events).
      std::tuple<int, std::size_t, std::size_t> k{c->ltype == FieldType::kBool && c->op != Op::kExists ? 0 : 1, 1,
                                                  popular[key]};
      if (c->op != Op::kExists && c->ltype != FieldType::kBool) {
        const auto& d = distinct[key];
        bool strong = c->ltype != FieldType::kString && d.size() >= 2;
        for (const auto& v : d) strong = strong || (c->ltype == FieldType::kString && v.size() > 3);
        k = {strong ? 2 : 1, d.size(), popular[key]};
      }
      w = std::min(w, k);
    }
    return w;
  };
  std::size_t guarded = 0;
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<const CCheck*> g;
    std::tuple<int, std::size_t, std::size_t> best{0, 0, 0};
    for (const auto& cand : cands[r]) {
      auto w = worth(cand);
      // Only strong value tests and `exists` pay for their lookup: a weak
      // value test or a boolean lets most events through anyway.
      bool all_exists = true;
      for (const CCheck* c : cand) all_exists = all_exists && c->op == Op::kExists;
      if (std::get<0>(w) < 2 && !all_exists) continue;
      if (g.empty() || w > best) {
        g = cand;
        best = w;
      }
    }
    if (g.empty()) {
      always_[r / 64] |= std::uint64_t{1} << (r % 64);
      continue;
    }
    ++guarded;
    for (const CCheck* c : g) {
      Field* f = nullptr;
      for (auto& have : fields_) {
        if (same_field(have.inst, c->lhs)) f = &have;
      }
      if (!f) {
        fields_.emplace_back();
        f = &fields_.back();
        f->inst = c->lhs;
      }
      auto rr = static_cast<std::uint32_t>(r);
      if (c->op == Op::kExists) {
        if (f->exists.empty()) f->exists.assign(words_, 0);
        f->exists[r / 64] |= std::uint64_t{1} << (r % 64);
      } else {
        for (auto& k : guard_keys(*c)) f->pending_rules.emplace_back(std::move(k), rr);
      }
    }
  }
  for (auto& f : fields_) {
    std::vector<std::string> vals;
    vals.reserve(f.pending_rules.size());
    for (const auto& [v, r] : f.pending_rules) vals.push_back(v);
    f.values.build(vals);
    f.masks.assign(f.values.members().size() * words_, 0);
    for (const auto& [v, r] : f.pending_rules) {
      auto id = static_cast<std::size_t>(f.values.find(v));
      f.masks[id * words_ + r / 64] |= std::uint64_t{1} << (r % 64);
    }
    f.pending_rules.clear();
    f.pending_rules.shrink_to_fit();
  }
  active_ = guarded >= 2;
}

void GuardIndex::candidates(const ExtractCtx& x, std::uint64_t* out) const noexcept {
  for (std::size_t w = 0; w < words_; ++w) out[w] = always_[w];
  static const std::vector<Transformer> kNone;
  for (const auto& f : fields_) {
    Extracted e;
    extract_field(x, f.inst, kNone, e);
    if (e.n == 0) continue;
    if (!f.exists.empty()) {
      for (std::size_t w = 0; w < words_; ++w) out[w] |= f.exists[w];
    }
    if (f.masks.empty()) continue;
    for (std::size_t i = 0; i < e.n; ++i) {
      std::int32_t id = -1;
      switch (f.inst.def->type) {
        case FieldType::kString: id = f.values.find(e.v[i].s); break;
        case FieldType::kInt:
        case FieldType::kUint: {
          char k[8];
          std::memcpy(k, &e.v[i].i, 8);
          id = f.values.find(std::string_view(k, 8));
          break;
        }
        case FieldType::kBool: {
          char k = e.v[i].b ? '\1' : '\0';
          id = f.values.find(std::string_view(&k, 1));
          break;
        }
        default: break;
      }
      if (id < 0) continue;
      const std::uint64_t* m = f.masks.data() + static_cast<std::size_t>(id) * words_;
      for (std::size_t w = 0; w < words_; ++w) out[w] |= m[w];
    }
  }
}

std::vector<std::string> GuardIndex::fields() const {
  std::vector<std::string> v;
  for (const auto& f : fields_) {
    std::string n(f.inst.def->name);
    if (f.inst.has_arg) n += "[" + f.inst.arg + "]";
    v.push_back(std::move(n));
  }
  return v;
}

// ---------------------------------------------------------------- compiler

namespace {

// A prefilter for a regular expression: the literals (atoms, at least three
// bytes) RE2's FilteredRE2 finds that every match needs some of. When no
// atom is present the expression cannot match, so the matcher is a necessary
// condition. Null when the expression can match without any atom.
std::unique_ptr<LiteralMatcher> regex_prefilter(const std::string& pattern, const RE2::Options& o) {
  // The atoms are lower-cased by Unicode rules and the input is only
  // ASCII-folded here: keep to case-sensitive expressions (no flag groups)
  // whose atoms are ASCII, where that folding lets through a superset.
  if (!o.case_sensitive() || pattern.find("(?") != std::string::npos) return nullptr;
  re2::FilteredRE2 f(3);
  int id = -1;
  if (f.Add(pattern, o, &id) != RE2::NoError) return nullptr;
  std::vector<std::string> atoms;
  f.Compile(&atoms);
  // The shrinking below costs atoms^2 filter evaluations: bounded, so a
  // hostile rule file cannot stall loading (a huge alternation simply runs
  // without a prefilter).
  constexpr std::size_t kMaxAtoms = 256;
  if (atoms.empty() || atoms.size() > kMaxAtoms) return nullptr;
  for (const auto& a : atoms) {
    for (char ch : a) {
      if (static_cast<unsigned char>(ch) >= 0x80) return nullptr;
    }
  }
  auto passes = [&f](const std::vector<int>& present) {
    std::vector<int> passed;
    f.AllPotentials(present, &passed);
    return !passed.empty();
  };
  if (passes({})) return nullptr;  // passes the filter with no atom at all
  // The filter is an and/or of atoms. Shrink the required set: an atom moves
  // to `present` when the filter still fails with it there, so at the end the
  // filter fails whenever no atom of `required` is in the text. Atoms that
  // start with a letter or digit (costly to scan for) are tried first, so the
  // set kept favours rare leading bytes (" --algo" over "kawpow").
  std::vector<int> order(atoms.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto costly = [&atoms](int i) { return std::isalnum(static_cast<unsigned char>(atoms[i][0])) != 0; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (costly(a) != costly(b)) return costly(a);
    return atoms[a].size() < atoms[b].size();
  });
  std::vector<int> present;
  std::vector<bool> kept(atoms.size(), true);
  for (int i : order) {
    present.push_back(i);
    if (passes(present)) {
      present.pop_back();
    } else {
      kept[i] = false;
    }
  }
  std::vector<std::string> required;
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    if (kept[i]) required.push_back(atoms[i]);
  }
  if (required.empty()) return nullptr;
  // Atoms are lower-case; matching them case-insensitively only lets more through.
  return std::make_unique<LiteralMatcher>(required, Op::kIContains);
}

// One matcher for any of the literals: as a prefix, a suffix or anywhere.
// Null for fewer than two (the plain comparison is as fast).
std::unique_ptr<LiteralMatcher> literal_set(const std::vector<std::string>& lits, Op op) {
  if (lits.size() < 2) return nullptr;
  return std::make_unique<LiteralMatcher>(lits, op);
}

bool mergeable_contains(const CNode& n) {
  if (n.kind != CNode::Kind::kCheck || !n.check) return false;
  const CCheck& c = *n.check;
  return (c.op == Op::kContains || c.op == Op::kIContains) && c.mod == Modifier::kNone && !c.rhs_field &&
         c.ltr.empty() && c.ltype == FieldType::kString && !c.multi && !c.str.empty();
}

// Or-chains of `f contains a or f contains b ...` on one field become one
// check with a literal set: the field is scanned once instead of once per literal.
void merge_contains(CNode& n) {
  for (auto& k : n.kids) merge_contains(k);
  if (n.kind != CNode::Kind::kOr) return;
  std::vector<CNode> out;
  std::vector<bool> used(n.kids.size(), false);
  for (std::size_t i = 0; i < n.kids.size(); ++i) {
    if (used[i]) continue;
    if (!mergeable_contains(n.kids[i])) {
      out.push_back(std::move(n.kids[i]));
      continue;
    }
    const CCheck& a = *n.kids[i].check;
    std::vector<std::string> lits{a.str};
    std::vector<std::size_t> group{i};
    for (std::size_t j = i + 1; j < n.kids.size(); ++j) {
      if (used[j] || !mergeable_contains(n.kids[j])) continue;
      const CCheck& b = *n.kids[j].check;
      if (b.op == a.op && b.lhs.def == a.lhs.def && b.lhs.arg == a.lhs.arg) {
        lits.push_back(b.str);
        group.push_back(j);
      }
    }
    std::unique_ptr<LiteralMatcher> re = group.size() > 1 ? literal_set(lits, a.op) : nullptr;
    if (!re) {
      out.push_back(std::move(n.kids[i]));
      continue;
    }
    auto merged = std::make_shared<CCheck>();
    merged->lhs = a.lhs;
    merged->ltype = a.ltype;
    merged->op = a.op;
    merged->mod = Modifier::kAnyOf;
    merged->strs = lits;
    merged->any_lit = std::move(re);
    for (auto g : group) used[g] = true;
    CNode m;
    m.kind = CNode::Kind::kCheck;
    m.check = std::move(merged);
    out.push_back(std::move(m));
  }
  n.kids = std::move(out);
  if (n.kids.size() == 1) {
    CNode only = std::move(n.kids[0]);
    n = std::move(only);
  }
}

}  // namespace

int FieldSlots::slot_for(const FieldInst& f) {
  // Multi-valued fields are recomputed (the cache keeps one value per slot).
  if (f.def->any_of && f.index < 0) return -1;
  if (f.def->type == FieldType::kList) return -1;
  auto key = std::make_pair(f.def, f.arg);
  auto it = slots_.find(key);
  if (it != slots_.end()) return it->second;
  if (static_cast<int>(slots_.size()) >= FieldCache::kSlots) return -1;
  int s = static_cast<int>(slots_.size());
  slots_.emplace(key, s);
  return s;
}

std::shared_ptr<CCheck> FieldSlots::shared_check(const std::string& key) const {
  auto it = checks_.find(key);
  return it == checks_.end() ? nullptr : it->second;
}

void FieldSlots::remember(const std::string& key, std::shared_ptr<CCheck> c) {
  if (static_cast<int>(checks_.size()) < CheckCache::kChecks) c->id = static_cast<int>(checks_.size());
  checks_.emplace(key, std::move(c));
}

class Compiler {
 public:
  Compiler(const MacroMap& macros, const ListMap& lists, const FieldCatalog& cat, CompileResult& r,
           FieldSlots* slots, bool optimise)
      : macros_(macros), lists_(lists), cat_(cat), r_(r), slots_(slots), optimise_(optimise) {}

  // Expands macros in place. Returns false on an undefined macro or a cycle.
  bool expand_macros(NodePtr& n, std::vector<std::string>& stack) {
    if (n->kind == Node::Kind::kMacro) {
      auto it = macros_.find(n->macro);
      if (it == macros_.end()) {
        error(code::kUndefinedMacro, n->offset, "undefined macro '" + n->macro + "' used in condition");
        return false;
      }
      if (std::find(stack.begin(), stack.end(), n->macro) != stack.end() || stack.size() > 64) {
        error(code::kMacroCycle, n->offset, "macro '" + n->macro + "' refers to itself");
        return false;
      }
      r_.used_macros.insert(n->macro);
      if (!it->second.ast) return false;  // its own parse error is reported with the macro
      expanded_ += count_nodes(*it->second.ast);
      if (expanded_ > kMaxExpandedNodes) {
        error(code::kConditionSyntax, n->offset, "the condition is too large after macro expansion (over " +
                                                     std::to_string(kMaxExpandedNodes) + " nodes)");
        return false;
      }
      NodePtr body = it->second.ast->clone();
      stack.push_back(n->macro);
      bool ok = expand_macros(body, stack);
      stack.pop_back();
      std::size_t off = n->offset;
      n = std::move(body);
      set_offset(*n, off);
      return ok;
    }
    bool ok = true;
    for (auto& c : n->children) {
      ok = expand_macros(c, stack) && ok;
      if (expanded_ > kMaxExpandedNodes) return false;
    }
    return ok;
  }

  CNode compile(const Node& n) {
    CNode c;
    switch (n.kind) {
      case Node::Kind::kAnd:
      case Node::Kind::kOr:
        c.kind = n.kind == Node::Kind::kAnd ? CNode::Kind::kAnd : CNode::Kind::kOr;
        for (const auto& k : n.children) c.kids.push_back(compile(*k));
        return c;
      case Node::Kind::kNot:
        c.kind = CNode::Kind::kNot;
        c.kids.push_back(compile(*n.children[0]));
        return c;
      case Node::Kind::kBool:
        c.kind = CNode::Kind::kBool;
        c.value = n.bool_value;
        return c;
      case Node::Kind::kMacro:
        c.kind = CNode::Kind::kBool;  // unreachable after expansion
        return c;
      case Node::Kind::kCheck: return compile_check(n);
    }
    return c;
  }

 private:
  static constexpr std::size_t kMaxExpandedNodes = 200000;
  static constexpr std::size_t kMaxListValues = 1000000;
  static std::size_t count_nodes(const Node& n) {
    std::size_t c = 1;
    for (const auto& k : n.children) c += count_nodes(*k);
    return c;
  }
  static void set_offset(Node& n, std::size_t off) {
    n.offset = off;
    for (auto& c : n.children) set_offset(*c, off);
  }
  void error(const char* code, std::size_t off, std::string msg) {
    r_.errors.push_back({off, std::move(msg)});
    r_.error_codes.push_back(code);
  }

  bool resolve_field(const FieldExpr& f, std::size_t off, FieldInst& out, FieldType& type) {
    std::string err;
    bool unknown = false;
    if (!cat_.resolve(f.name, f.has_arg, f.arg, out, err, unknown)) {
      if (unknown) {
        if (std::find(r_.unknown_fields.begin(), r_.unknown_fields.end(), f.name) == r_.unknown_fields.end()) {
          r_.unknown_fields.push_back(f.name);
        }
      } else {
        error(code::kTypeError, off, err);
      }
      return false;
    }
    type = out.def->type;
    if (slots_) out.slot = slots_->slot_for(out);
    for (auto it = f.transformers.begin(); it != f.transformers.end(); ++it) {
      if (*it == Transformer::kLen) {
        if (type != FieldType::kString && type != FieldType::kList) {
          error(code::kTypeError, off, "len() needs a string or list field, '" + f.name + "' is " +
                                           std::string(field_type_name(type)));
          return false;
        }
        type = FieldType::kInt;
      } else if (type != FieldType::kString) {
        error(code::kTypeError, off, std::string(transformer_name(*it)) + "() needs a string field, '" +
                                         f.name + "' is " + std::string(field_type_name(type)));
        return false;
      }
    }
    return true;
  }

  // Flattens a value into strings, expanding list names among bare list items.
  // A list never expands inside itself, and the expansion is bounded.
  void flatten(const Value& v, std::vector<std::string>& out) {
    std::vector<std::string_view> active;
    if (v.kind == Value::Kind::kList) {
      for (const auto& i : v.items) flatten_item(i.kind == Value::Kind::kString, i.text, i.bare, out, active);
      return;
    }
    out.push_back(v.text);
  }
  void flatten_item(bool is_string, std::string_view text, bool bare, std::vector<std::string>& out,
                    std::vector<std::string_view>& active) {
    if (!is_string) return;
    if (out.size() >= kMaxListValues) {
      if (!too_many_) error(code::kTypeError, SIZE_MAX, "a list expands to more than " +
                                                           std::to_string(kMaxListValues) + " values");
      too_many_ = true;
      return;
    }
    if (bare && std::find(active.begin(), active.end(), text) == active.end()) {
      auto it = lists_.find(text);
      if (it != lists_.end()) {
        r_.used_lists.insert(std::string(text));
        active.push_back(text);
        for (const auto& s : it->second) flatten_item(true, s, true, out, active);
        active.pop_back();
        return;
      }
    }
    out.emplace_back(text);
  }

  CNode compile_check(const Node& n) {
    CNode c;
    c.kind = CNode::Kind::kBool;
    c.value = false;
    const std::string& fname = n.field.name;
    // evt.type compares against event types: a bitmask test, no strings.
    if (fname == "evt.type" && n.field.transformers.empty() && !n.field.has_arg &&
        n.modifier == Modifier::kNone && (n.op == Op::kEq || n.op == Op::kNe || n.op == Op::kIn) &&
        n.value.kind != Value::Kind::kField) {
      std::vector<std::string> names;
      flatten(n.value, names);
      event::TypeMask mask;
      for (const auto& s : names) {
        bool known = false;
        mask |= evt_type_mask(s, known);
        if (!known) {
          if (std::find(r_.unknown_evttypes.begin(), r_.unknown_evttypes.end(), s) == r_.unknown_evttypes.end()) {
            r_.unknown_evttypes.push_back(s);
          }
        }
      }
      c.kind = CNode::Kind::kTypeMask;
      c.mask = mask;
      if (n.op == Op::kNe) {
        CNode neg;
        neg.kind = CNode::Kind::kNot;
        neg.kids.push_back(std::move(c));
        return neg;
      }
      return c;
    }
    // An identical check compiled before (same text, same lists) is shared.
    const std::string key = n.to_string();
    if (slots_) {
      if (auto shared = slots_->shared_check(key)) {
        c.kind = CNode::Kind::kCheck;
        c.check = shared;
        return c;
      }
    }
    auto chk = std::make_shared<CCheck>();
    if (!resolve_field(n.field, n.offset, chk->lhs, chk->ltype)) return c;
    chk->ltr = n.field.transformers;
    chk->op = n.op;
    chk->mod = n.modifier;
    FieldType t = chk->ltype;
    bool list_type = t == FieldType::kList;
    chk->multi = list_type || (chk->lhs.def->any_of && chk->lhs.index < 0);
    chk->multi_all_in = list_type && n.op == Op::kIn && chk->ltr.empty();
    const std::string op = std::string(op_name(n.op));
    auto bad_op = [&]() {
      error(code::kTypeError, n.offset, "operator '" + op + "' cannot be used with " +
                                            std::string(field_type_name(t)) + " field '" +
                                            n.field.to_string() + "'");
    };
    // Which operators each type takes.
    switch (t) {
      case FieldType::kString:
      case FieldType::kList:
        if (n.op == Op::kLt || n.op == Op::kLe || n.op == Op::kGt || n.op == Op::kGe) { bad_op(); return c; }
        break;
      case FieldType::kInt:
      case FieldType::kUint:
      case FieldType::kBool:
      case FieldType::kIp: {
        bool ok = n.op == Op::kEq || n.op == Op::kNe || n.op == Op::kIn || n.op == Op::kIntersects ||
                  n.op == Op::kExists;
        if ((t == FieldType::kInt || t == FieldType::kUint) &&
            (n.op == Op::kLt || n.op == Op::kLe || n.op == Op::kGt || n.op == Op::kGe)) {
          ok = true;
        }
        if (!ok || n.modifier != Modifier::kNone) { bad_op(); return c; }
        break;
      }
    }
    if (n.op == Op::kExists) return finish(c, key, std::move(chk));
    if (n.value.kind == Value::Kind::kField) {
      FieldType rt;
      if (!resolve_field(n.value.field, n.offset, chk->rf, rt)) return c;
      bool compatible = rt == t || (rt == FieldType::kList && t == FieldType::kString) ||
                        (t == FieldType::kList && rt == FieldType::kString) ||
                        ((rt == FieldType::kInt || rt == FieldType::kUint) &&
                         (t == FieldType::kInt || t == FieldType::kUint));
      if (!compatible || n.op == Op::kRegex || n.op == Op::kPMatch || n.op == Op::kBContains ||
          n.op == Op::kBStartsWith) {
        error(code::kTypeError, n.offset, "cannot compare " + std::string(field_type_name(t)) + " field '" +
                                              n.field.to_string() + "' with '" +
                                              n.value.field.to_string() + "' using '" + op + "'");
        return c;
      }
      chk->rhs_field = true;
      chk->rtr = n.value.field.transformers;
      chk->rtype = rt;
      return finish(c, key, std::move(chk));
    }
    std::vector<std::string> vals;
    flatten(n.value, vals);
    bool is_list_op = op_takes_list(n.op) || n.modifier != Modifier::kNone;
    if (!is_list_op && vals.size() != 1) {
      error(code::kTypeError, n.offset, "operator '" + op + "' takes a single value");
      return c;
    }
    switch (t) {
      case FieldType::kString:
      case FieldType::kList: {
        for (auto& v : vals) {
          if (n.op == Op::kIContains || n.op == Op::kIGlob) {
            std::transform(v.begin(), v.end(), v.begin(), lower);
          }
          if (n.op == Op::kBContains || n.op == Op::kBStartsWith) {
            std::string bytes;
            if (!hex_decode(v, bytes)) {
              error(code::kTypeError, n.offset, "'" + v + "' is not a hex byte string for '" + op + "'");
              return c;
            }
            v = bytes;
          }
          if (n.op == Op::kRegex) {
            RE2::Options o;
            o.set_log_errors(false);
            o.set_max_mem(8 << 20);
            auto re = std::make_unique<RE2>(v, o);
            if (!re->ok()) {
              error(code::kRegex, n.offset, "bad regular expression '" + v + "': " + re->error());
              return c;
            }
            chk->re_pre.push_back(optimise_ ? regex_prefilter(v, o) : nullptr);
            chk->res.push_back(std::move(re));
          }
        }
        if (n.op == Op::kIn || n.op == Op::kIntersects) {
          chk->set.build(vals);
        } else if (n.op == Op::kPMatch) {
          chk->trie = std::make_unique<PathTrie>();
          for (auto& v : vals) chk->trie->add(v);
        } else if (n.modifier != Modifier::kNone) {
          chk->strs = vals;
          if (n.modifier == Modifier::kAnyOf &&
              (n.op == Op::kContains || n.op == Op::kIContains || n.op == Op::kStartsWith ||
               n.op == Op::kEndsWith)) {
            if (optimise_) chk->any_lit = literal_set(vals, n.op);
          }
        } else {
          chk->str = vals[0];
        }
        // Literal path prefixes for the sensor's open filter.
        if ((fname == "fd.name" || fname == "fd.directory" || fname == "evt.arg.path" ||
             fname == "evt.arg.name" || fname == "fd.nameraw") &&
            chk->ltr.empty() && n.modifier != Modifier::kAnyOf) {
          bool usable = true;
          // fd.name and the path arguments hold the resolved path of a
          // successful open: equality with a literal is a whole-path match.
          // fd.directory and fd.nameraw give prefixes only.
          const bool whole_field = fname == "fd.name" || fname == "evt.arg.path" || fname == "evt.arg.name";
          std::vector<PathLiteral> pre;
          for (const auto& v : vals) {
            PathLiteral p{v, false};
            if (n.op == Op::kGlob) p.path = p.path.substr(0, p.path.find_first_of("*?["));
            else if (n.op != Op::kEq && n.op != Op::kIn && n.op != Op::kStartsWith &&
                     n.op != Op::kPMatch) usable = false;
            if (n.op == Op::kPMatch) p.path = p.path.substr(0, p.path.find_first_of("*?["));
            if (p.path.empty() || p.path[0] != '/') usable = false;
            p.whole = whole_field && (n.op == Op::kEq || n.op == Op::kIn) && p.path.back() != '/';
            pre.push_back(std::move(p));
          }
          if (usable && n.modifier == Modifier::kNone) {
            chk->path_check = true;
            chk->path_literals = std::move(pre);
          }
        }
        break;
      }
      case FieldType::kInt:
      case FieldType::kUint:
        for (const auto& v : vals) {
          std::int64_t x;
          if (!parse_int(v, x)) {
            error(code::kTypeError, n.offset, "'" + v + "' is not a number, but '" + n.field.to_string() +
                                                  "' is an " + std::string(field_type_name(t)) + " field");
            return c;
          }
          chk->nums.push_back(x);
          chk->numset.push_back(x);
        }
        std::sort(chk->numset.begin(), chk->numset.end());
        chk->numset.erase(std::unique(chk->numset.begin(), chk->numset.end()), chk->numset.end());
        break;
      case FieldType::kBool:
        for (const auto& v : vals) {
          bool b;
          if (!parse_bool(v, b)) {
            error(code::kTypeError, n.offset, "'" + v + "' is not true or false, but '" +
                                                  n.field.to_string() + "' is a bool field");
            return c;
          }
          chk->boolean = b;
          chk->nums.push_back(b ? 1 : 0);
        }
        break;
      case FieldType::kIp:
        for (const auto& v : vals) {
          Cidr net;
          if (!parse_cidr(v, net)) {
            error(code::kTypeError, n.offset, "'" + v + "' is not an IP address or network, but '" +
                                                  n.field.to_string() + "' is an ip field");
            return c;
          }
          chk->nets.push_back(net);
        }
        break;
    }
    return finish(c, key, std::move(chk));
  }

  CNode finish(CNode& c, const std::string& key, std::shared_ptr<CCheck> chk) {
    chk->text = key;
    chk->constant = constant_result(*chk);
    if (slots_) slots_->remember(key, chk);
    c.kind = CNode::Kind::kCheck;
    c.check = std::move(chk);
    return std::move(c);
  }

  // Fields whose value is the same for every event: a check on one of them
  // (Falco's never_true, evt.source = x) is evaluated once, here.
  static std::int8_t constant_result(const CCheck& c) {
    static constexpr std::string_view kConstantFields[] = {"evt.source", "evt.num", "evt.dir"};
    if (!c.lhs.def || c.rhs_field) return -1;
    if (std::find(std::begin(kConstantFields), std::end(kConstantFields), c.lhs.def->name) ==
        std::end(kConstantFields)) {
      return -1;
    }
    event::Event ev;
    state::EvalContext ctx;
    ctx.ev = &ev;
    auto arena = std::make_unique<Arena>();
    ExtractCtx x{&ctx, arena.get()};
    return eval_check(c, x) ? 1 : 0;
  }

  const MacroMap& macros_;
  const ListMap& lists_;
  const FieldCatalog& cat_;
  CompileResult& r_;
  FieldSlots* slots_;
  bool optimise_ = true;
  std::size_t expanded_ = 0;
  bool too_many_ = false;
};

void collect_macro_refs(const Node& n, std::set<std::string>& out) {
  if (n.kind == Node::Kind::kMacro) out.insert(n.macro);
  for (const auto& c : n.children) collect_macro_refs(*c, out);
}

namespace {
void list_refs_value(const Value& v, const ListMap& lists, std::set<std::string>& out, int depth) {
  if (v.kind == Value::Kind::kList) {
    for (const auto& i : v.items) list_refs_value(i, lists, out, depth);
    return;
  }
  if (v.kind == Value::Kind::kString && v.bare && depth < 32) {
    auto it = lists.find(v.text);
    if (it != lists.end() && out.insert(v.text).second) {
      for (const auto& s : it->second) {
        Value sub;
        sub.text = s;
        sub.bare = true;
        list_refs_value(sub, lists, out, depth + 1);
      }
    }
  }
}
}  // namespace

void collect_list_refs(const Node& n, const ListMap& lists, std::set<std::string>& out) {
  if (n.kind == Node::Kind::kCheck && n.value.kind == Value::Kind::kList) {
    list_refs_value(n.value, lists, out, 0);
  }
  for (const auto& c : n.children) collect_list_refs(*c, lists, out);
}

CompileResult compile_condition(NodePtr root, const MacroMap& macros, const ListMap& lists,
                                const FieldCatalog& catalog, FieldSlots* slots, bool optimise) {
  CompileResult r;
  Compiler comp(macros, lists, catalog, r, slots, optimise);
  std::vector<std::string> stack;
  if (!comp.expand_macros(root, stack)) {
    if (r.errors.empty()) {
      r.errors.push_back({SIZE_MAX, "a macro used here did not compile"});
      r.error_codes.push_back(code::kUndefinedMacro);
    }
    return r;
  }
  CNode c = comp.compile(*root);
  if (optimise) merge_contains(c);
  if (!r.errors.empty() || !r.unknown_fields.empty()) return r;
  r.expr = std::make_unique<Expr>(std::make_unique<CNode>(std::move(c)), optimise);
  return r;
}

// ---------------------------------------------------------------- output format

OutputFormat OutputFormat::parse(std::string_view text, const FieldCatalog& catalog,
                                 std::vector<std::string>& unknown, std::string& error) {
  OutputFormat f;
  std::string lit;
  auto flush = [&]() {
    if (!lit.empty()) {
      Token t;
      t.literal = std::move(lit);
      f.tokens_.push_back(std::move(t));
      lit.clear();
    }
  };
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '%') { lit += c; ++i; continue; }
    if (i + 1 < text.size() && text[i + 1] == '%') { lit += '%'; i += 2; continue; }
    std::size_t start = i + 1;
    std::string_view expr;
    std::size_t end;
    if (start < text.size() && text[start] == '(') {
      auto close = text.find(')', start);
      if (close == std::string_view::npos) {
        error = "unterminated %( at offset " + std::to_string(i);
        return f;
      }
      expr = text.substr(start + 1, close - start - 1);
      end = close + 1;
    } else {
      std::size_t j = start;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;  // %20proc.name
      std::size_t name_start = j;
      while (j < text.size() && ident(text[j])) ++j;
      std::string_view name = text.substr(name_start, j - name_start);
      // A transformer: %toupper(proc.name)
      if (j < text.size() && text[j] == '(' && name.find('.') == std::string_view::npos && !name.empty()) {
        int depth = 0;
        std::size_t k = j;
        for (; k < text.size(); ++k) {
          if (text[k] == '(') ++depth;
          if (text[k] == ')' && --depth == 0) break;
        }
        if (k >= text.size()) {
          error = "unterminated transformer at offset " + std::to_string(i);
          return f;
        }
        expr = text.substr(name_start, k + 1 - name_start);
        end = k + 1;
      } else {
        while (!name.empty() && name.back() == '.' ) { name.remove_suffix(1); --j; }
        if (j < text.size() && text[j] == '[') {
          auto close = text.find(']', j);
          if (close == std::string_view::npos) {
            error = "unterminated field argument at offset " + std::to_string(j);
            return f;
          }
          j = close + 1;
        }
        expr = text.substr(name_start, j - name_start);
        end = j;
      }
      if (name.empty()) {
        lit += '%';
        ++i;
        continue;
      }
    }
    FieldExpr fe;
    std::string perr;
    if (!parse_field_expr(expr, fe, perr)) {
      error = "bad field '" + std::string(expr) + "' in output: " + perr;
      return f;
    }
    flush();
    Token t;
    t.is_field = true;
    t.name = std::string(expr);
    t.transformers = fe.transformers;
    std::string rerr;
    bool unk = false;
    if (!catalog.resolve(fe.name, fe.has_arg, fe.arg, t.field, rerr, unk)) {
      if (!unk) {
        error = rerr;
        return f;
      }
      unknown.push_back(fe.name);
      t.field = FieldInst{};
    } else {
      t.type = t.field.def->type;
      for (auto it = t.transformers.begin(); it != t.transformers.end(); ++it) {
        if (*it == Transformer::kLen) t.type = FieldType::kInt;
      }
    }
    f.tokens_.push_back(std::move(t));
    i = end;
  }
  flush();
  return f;
}

}  // namespace vigil::rules
