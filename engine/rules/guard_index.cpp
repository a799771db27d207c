// The guard index (GuardIndex, compiler.h): per event type, a map from the
// values of guard fields to the rules whose conditions need them.
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/rules/compiled.h"

namespace vigil::rules {

struct GuardIndex::Field {
  FieldInst inst;
  LiteralSet values;                  // string values some guard compares with
  std::vector<std::uint64_t> masks;   // words() words per member of `values`
  std::vector<std::uint64_t> exists;  // rules that only need a value; empty: none
  // A boolean field: the members of `values` for true and false (-1: none).
  std::int32_t true_id = -1, false_id = -1;
  std::vector<std::pair<std::string, std::uint32_t>> pending_rules;  // while building
};

// A literal guard field: the rules some literal of theirs lets through, by
// how the literal is compared. Prefixes and suffixes are one byte trie
// (suffixes reversed), walked once along the value; `contains` literals are
// searched one by one; pmatch patterns are keyed by their first component.
enum class LitMode : std::uint8_t { kPrefix, kSuffix, kContains, kFirstComponent };

struct GuardIndex::LitField {
  FieldInst inst;
  LitMode mode = LitMode::kPrefix;
  struct Node {
    std::uint32_t first = 0, count = 0;  // edges[first, first + count), sorted by byte
    std::int32_t mask = -1;              // a literal ends here: its row of masks; -1: none
  };
  struct Edge {
    unsigned char byte = 0;
    std::uint32_t child = 0;
  };
  std::vector<Node> nodes;  // kPrefix, kSuffix (node 0: the root)
  std::vector<Edge> edges;
  std::vector<std::pair<std::string, std::uint32_t>> needles;        // kContains: literal, row
  LiteralSet components;                                             // kFirstComponent: id = row
  std::vector<std::uint64_t> masks;                                  // words() words per row
  std::vector<std::pair<std::string, std::uint32_t>> pending_rules;  // while building

  void add_row(std::uint32_t row, std::size_t words, std::uint32_t rule) {
    if (masks.size() < (row + 1) * words) masks.resize((row + 1) * words, 0);
    masks[row * words + rule / 64] |= std::uint64_t{1} << (rule % 64);
  }
  void build(std::size_t words) {
    std::vector<std::string> lits;
    for (const auto& [l, r] : pending_rules) lits.push_back(l);
    std::sort(lits.begin(), lits.end());
    lits.erase(std::unique(lits.begin(), lits.end()), lits.end());
    auto row_of = [&](const std::string& l) {
      return static_cast<std::uint32_t>(std::lower_bound(lits.begin(), lits.end(), l) - lits.begin());
    };
    if (mode == LitMode::kFirstComponent) {
      components.build(lits);  // members in the order given: id == row
    } else if (mode == LitMode::kContains) {
      for (std::size_t i = 0; i < lits.size(); ++i) needles.emplace_back(lits[i], static_cast<std::uint32_t>(i));
    } else {
      // A trie built with per-node edge lists, then laid out flat.
      std::vector<std::vector<Edge>> kids(1);
      std::vector<std::int32_t> ends(1, -1);
      for (std::size_t i = 0; i < lits.size(); ++i) {
        std::uint32_t cur = 0;
        const std::string& l = lits[i];
        for (std::size_t k = 0; k < l.size(); ++k) {
          auto b = static_cast<unsigned char>(mode == LitMode::kSuffix ? l[l.size() - 1 - k] : l[k]);
          std::uint32_t next = 0;
          for (const auto& e : kids[cur]) {
            if (e.byte == b) next = e.child;
          }
          if (next == 0) {
            next = static_cast<std::uint32_t>(kids.size());
            kids[cur].push_back(Edge{b, next});
            kids.emplace_back();
            ends.push_back(-1);
          }
          cur = next;
        }
        ends[cur] = static_cast<std::int32_t>(i);
      }
      nodes.resize(kids.size());
      for (std::size_t n = 0; n < kids.size(); ++n) {
        std::sort(kids[n].begin(), kids[n].end(), [](const Edge& a, const Edge& b) { return a.byte < b.byte; });
        nodes[n].first = static_cast<std::uint32_t>(edges.size());
        nodes[n].count = static_cast<std::uint32_t>(kids[n].size());
        nodes[n].mask = ends[n];
        edges.insert(edges.end(), kids[n].begin(), kids[n].end());
      }
    }
    masks.assign(lits.size() * words, 0);
    for (const auto& [l, r] : pending_rules) add_row(row_of(l), words, r);
    pending_rules.clear();
    pending_rules.shrink_to_fit();
  }

  // ORs into `out` the rows of the literals `v` holds (as this field compares them).
  void lookup(std::string_view v, std::size_t words, std::uint64_t* out) const noexcept {
    auto add = [&](std::size_t row) {
      const std::uint64_t* m = masks.data() + row * words;
      for (std::size_t w = 0; w < words; ++w) out[w] |= m[w];
    };
    switch (mode) {
      case LitMode::kFirstComponent: {
        std::int32_t id = components.find(PathTrie::first_component(v));
        if (id >= 0) add(static_cast<std::size_t>(id));
        return;
      }
      case LitMode::kContains:
        for (const auto& [needle, row] : needles) {
          if (v.find(needle) != std::string_view::npos) add(row);
        }
        return;
      case LitMode::kPrefix:
      case LitMode::kSuffix: {
        const std::size_t n = v.size();
        const bool rev = mode == LitMode::kSuffix;
        std::uint32_t cur = 0;
        for (std::size_t i = 0; i < n; ++i) {
          auto b = static_cast<unsigned char>(v[rev ? n - 1 - i : i]);
          const Node& nd = nodes[cur];
          const Edge* e = edges.data() + nd.first;
          std::uint32_t next = 0;
          for (std::uint32_t k = 0; k < nd.count; ++k) {
            if (e[k].byte >= b) {
              if (e[k].byte == b) next = e[k].child;
              break;
            }
          }
          if (next == 0) return;
          cur = next;
          if (nodes[cur].mask >= 0) add(static_cast<std::size_t>(nodes[cur].mask));
        }
        return;
      }
    }
  }
};

// What a lookup of one value guard field reads, in one place: candidates()
// walks these rather than the Fields (their build-time members in between).
struct GuardIndex::Lookup {
  ExtractFn fn = nullptr;
  const FieldInst* inst = nullptr;
  int slot = -1;
  std::uint32_t slot_word = 0;  // slot / 64
  std::uint64_t slot_bit = 0;   // 1 << (slot % 64)
  FieldType type = FieldType::kString;
  std::int32_t true_id = -1, false_id = -1;
  const std::uint64_t* exists = nullptr;  // null: no rule needs only a value
  const std::uint64_t* masks = nullptr;   // null: no values
  const LiteralSet* values = nullptr;
};

GuardIndex::GuardIndex() = default;
GuardIndex::~GuardIndex() = default;
GuardIndex::GuardIndex(GuardIndex&&) noexcept = default;
GuardIndex& GuardIndex::operator=(GuardIndex&&) noexcept = default;

namespace {

// A check usable as a literal guard: the literals one of which a value it
// holds must contain (as `mode` compares), or false. Only single-valued
// string fields without transformers; an empty literal (every value holds
// it) or a pmatch pattern that starts with a glob or is "/" makes none.
bool literal_guard(const CCheck& c, LitMode& mode, std::vector<std::string>* lits = nullptr) {
  if (c.rhs_field || !c.ltr.empty() || c.multi || !c.lhs.def || c.ltype != FieldType::kString) return false;
  if (c.op == Op::kPMatch) {
    std::vector<std::string> comps;
    if (c.mod != Modifier::kNone || !c.trie || !c.trie->first_components(comps)) return false;
    mode = LitMode::kFirstComponent;
    if (lits) *lits = std::move(comps);
    return true;
  }
  if (c.op == Op::kStartsWith) mode = LitMode::kPrefix;
  else if (c.op == Op::kEndsWith) mode = LitMode::kSuffix;
  else if (c.op == Op::kContains) mode = LitMode::kContains;
  else return false;
  if (c.mod == Modifier::kNone) {
    if (c.str.empty()) return false;
    if (lits) *lits = {c.str};
    return true;
  }
  if (c.mod != Modifier::kAnyOf || c.strs.empty()) return false;
  for (const auto& l : c.strs) {
    if (l.empty()) return false;
  }
  if (lits) *lits = c.strs;
  return true;
}

// A flag guard: `F = true` on a boolean field (proc.is_exe_shell = true,
// proc.is_32bit = true): the value a rule needs is the one most events do
// not have, and its lookup is one extraction and no search.
bool is_flag_term(const CCheck& c) {
  return c.ltype == FieldType::kBool && c.op == Op::kEq && c.boolean && !c.rhs_field && c.mod == Modifier::kNone &&
         c.ltr.empty() && !c.multi && c.lhs.def;
}

bool is_literal_term(const CCheck& c) {
  LitMode m;
  return c.op != Op::kEq && c.op != Op::kIn && c.op != Op::kExists && literal_guard(c, m);
}

// An address test (`fd.sip in (169.254.169.254, fd00:ec2::254)`) whose
// networks are all single addresses (/32, /128): a guard by value, keyed by
// the address. A wider network is not a single value.
bool whole_addresses(const CCheck& c) {
  if (c.nets.empty()) return false;
  for (const auto& n : c.nets) {
    if (!((n.net.family == AF_INET && n.prefix == 32) || (n.net.family == AF_INET6 && n.prefix == 128))) return false;
  }
  return true;
}

bool guard_check(const CCheck& c, bool allow_literal) {
  if (allow_literal) {
    LitMode m;
    if (literal_guard(c, m)) return true;
  }
  if (c.rhs_field || c.mod != Modifier::kNone || !c.ltr.empty() || c.multi || !c.lhs.def) return false;
  if (c.op == Op::kExists) return true;
  if (c.op != Op::kEq && c.op != Op::kIn) return false;
  if (c.ltype == FieldType::kIp) return whole_addresses(c);
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
// An address: its family byte, then its 4 or 16 bytes (what Cidr::contains
// compares for a whole-address network).
std::size_t ip_key(const event::IpAddr& a, char* out) noexcept {
  const std::size_t n = a.family == AF_INET ? 4 : 16;
  out[0] = static_cast<char>(a.family);
  std::memcpy(out + 1, a.bytes.data(), n);
  return n + 1;
}

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
      else
        for (auto v : c.numset) keys.push_back(int_key(v));
      break;
    case FieldType::kBool:
      if (c.op == Op::kEq) keys.push_back(bool_key(c.boolean));
      else
        for (auto v : c.nums) keys.push_back(bool_key(v != 0));
      break;
    case FieldType::kIp:
      for (const auto& n : c.nets) {
        char k[17];
        keys.emplace_back(k, ip_key(n.net, k));
      }
      break;
    default: break;
  }
  return keys;
}

// The tests of `n` when `n` is a guard: a guard check, an or of guards, or
// (inside an or) an and with a guard among its terms, which stands for it:
// the and needs it. In an and, a value test is taken over `exists` and
// booleans.
// With `lit`, literal guards count too; in an and, a value test is taken
// over a literal one, and a literal one over `exists` and booleans.
bool guard_terms(const CNode& n, std::vector<const CCheck*>& out, bool lit, bool in_or = false) {
  if (n.kind == CNode::Kind::kCheck) {
    if (!n.check || !guard_check(*n.check, lit)) return false;
    out.push_back(n.check.get());
    return true;
  }
  if (n.kind == CNode::Kind::kOr) {
    for (const auto& k : n.kids) {
      if (!guard_terms(k, out, lit, true)) return false;
    }
    return !n.kids.empty();
  }
  if (n.kind == CNode::Kind::kAnd && in_or) {
    std::vector<const CCheck*> best;
    int best_rank = -1;
    for (const auto& k : n.kids) {
      std::vector<const CCheck*> g;
      if (!guard_terms(k, g, lit, false)) continue;
      int rank = 2;  // 2: values, 1: some literal, 0: some exists or boolean
      for (const CCheck* c : g) {
        if (c->op == Op::kExists || c->ltype == FieldType::kBool) rank = 0;
        else if (rank > 1 && is_literal_term(*c)) rank = 1;
      }
      if (rank > best_rank) {
        best = std::move(g);
        best_rank = rank;
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
std::vector<std::vector<const CCheck*>> guard_candidates(const CNode& root, bool lit) {
  std::vector<std::vector<const CCheck*>> out;
  auto consider = [&](const CNode& n) {
    std::vector<const CCheck*> g;
    if (guard_terms(n, g, lit)) out.push_back(std::move(g));
  };
  if (root.kind == CNode::Kind::kAnd) {
    for (const auto& k : root.kids) consider(k);
  } else {
    consider(root);
  }
  return out;
}

// A check whose negation, as a term of a rule's `and`, keeps the rule out of
// the events for which the check holds: an address field (one value, no
// transformers) `in` or `=` a list of networks. Such a check is one
// extraction (shared with the rules through the FieldCache) and a few
// network comparisons; it is evaluated as the rules evaluate it.
bool exclusion_check(const CCheck& c) {
  return c.ltype == FieldType::kIp && (c.op == Op::kIn || c.op == Op::kEq) && !c.rhs_field &&
         c.mod == Modifier::kNone && c.ltr.empty() && !c.multi && !c.multi_all_in && c.lhs.def && !c.nets.empty() &&
         c.constant < 0;
}

bool same_field(const FieldInst& a, const FieldInst& b) {
  return a.def == b.def && a.arg == b.arg && a.has_arg == b.has_arg && a.index == b.index;
}

// Chooses each rule's guard: the terms of its condition whose values pick
// the rule (guard_candidates), weighed by how well their fields sort events.
// Value guards first, for every rule; then, for the rules left without one,
// literal guards (when value guards alone make the index worth using) and
// flag guards; literal guards after flag guards when value and flag guards
// together make the index worth using. A literal guard keeps out more events
// than a flag guard (only the events with that value for the field get
// through), so it goes first where it can.
class GuardChooser {
 public:
  // `roots`: each rule's condition specialised for the index's event type
  // (null: none).
  explicit GuardChooser(const std::vector<const CNode*>& roots) : roots_(roots), cands_(roots.size()) {
    for (std::size_t r = 0; r < roots.size(); ++r) {
      if (roots[r]) cands_[r] = guard_candidates(*roots[r], false);
    }
    count_values();
  }

  // Each rule's guard (empty: none); `guarded`: how many rules have one.
  std::vector<std::vector<const CCheck*>> choose(std::size_t& guarded) {
    const std::size_t n = roots_.size();
    std::vector<std::vector<const CCheck*>> chosen(n);
    std::size_t value_guarded = 0;
    for (std::size_t r = 0; r < n; ++r) {
      chosen[r] = value_choice(r);
      if (!chosen[r].empty()) {
        ++value_guarded;
        for (const CCheck* c : chosen[r]) in_use_.insert(lookup_of(c));
      }
    }
    guarded = value_guarded;
    auto more = [&](bool flags) {
      for (std::size_t r = 0; r < n; ++r) {
        if (!chosen[r].empty()) continue;
        chosen[r] = literal_choice(r, flags);
        if (!chosen[r].empty()) ++guarded;
      }
    };
    const bool literal_first = value_guarded >= 2;
    if (literal_first) more(false);
    more(true);
    if (!literal_first && guarded >= 2) more(false);
    return chosen;
  }

 private:
  using FieldKey = std::tuple<const FieldDef*, std::string, std::int64_t>;
  struct FieldStats {
    std::set<std::string> values;  // while counting
    std::size_t distinct = 0;
    bool long_string = false;
    std::size_t popular = 0;
  };
  // The lookup a guard term costs: its field, and how it is compared (-1:
  // by value, else the literal mode).
  using LookupKey = std::tuple<const FieldDef*, std::string, std::int64_t, int>;
  using Worth = std::tuple<int, std::size_t, std::size_t>;

  static FieldKey key_of(const CCheck* c) { return FieldKey{c->lhs.def, c->lhs.arg, c->lhs.index}; }

  // Per guard field: how many distinct values the rules compare it with (a
  // field with few, fd.typechar = f in every open rule, lets nearly every
  // event through; one with many, fd.name, sorts events well), whether one
  // of them is a string longer than 3 bytes, and how many rules could be
  // guarded by it. Summarised once per field, so weighing a candidate costs
  // a lookup and not a walk over the field's values (a rule of n terms on
  // one field would otherwise cost n^2).
  void count_values() {
    for (const auto& rc : cands_) {
      std::set<FieldKey> mine;
      for (const auto& g : rc) {
        for (const CCheck* c : g) {
          FieldKey key = key_of(c);
          auto& st = stats_[key];
          if (mine.insert(key).second) ++st.popular;
          if (c->op == Op::kExists) continue;
          for (auto& k : guard_keys(*c)) {
            if (k.size() > 3) st.long_string = true;
            st.values.insert(std::move(k));
          }
        }
      }
    }
    for (auto& [key, st] : stats_) {
      st.distinct = st.values.size();
      std::set<std::string>().swap(st.values);
    }
  }

  // A guard's worth, compared as (strong, cardinality): a term is strong
  // when its field is compared with several numbers or with some string
  // longer than 3 bytes (fd.typechar = f, fd.l4proto = tcp, gpu.limit = 0,
  // booleans and `exists` are weak: many events have such values). Over the
  // terms of an `or`, the weakest.
  // Ties go to fields more rules can be guarded by (one extraction serves
  // them all).
  Worth worth(const std::vector<const CCheck*>& g) const {
    Worth w{2, SIZE_MAX, SIZE_MAX};
    for (const CCheck* c : g) {
      const FieldStats& st = stats_.at(key_of(c));
      // A boolean is weakest of all (evt.failed = false holds for most events).
      Worth k{c->ltype == FieldType::kBool && c->op != Op::kExists ? 0 : 1, 1, st.popular};
      if (c->op != Op::kExists && c->ltype != FieldType::kBool) {
        bool strong = c->ltype == FieldType::kString || c->ltype == FieldType::kIp ? st.long_string : st.distinct >= 2;
        k = {strong ? 2 : 1, st.distinct, st.popular};
      }
      w = std::min(w, k);
    }
    return w;
  }

  // The best value guard of rule r: only strong value tests and `exists` pay
  // for their lookup (a weak value test or a boolean lets most events through
  // anyway); empty when none.
  std::vector<const CCheck*> value_choice(std::size_t r) const {
    std::vector<const CCheck*> g;
    Worth best{0, 0, 0};
    for (const auto& cand : cands_[r]) {
      auto w = worth(cand);
      bool all_exists = true;
      for (const CCheck* c : cand) all_exists = all_exists && c->op == Op::kExists;
      if (std::get<0>(w) < 2 && !all_exists) continue;
      if (g.empty() || w > best) {
        g = cand;
        best = w;
      }
    }
    return g;
  }

  bool strong(const CCheck* c) const {
    auto it = stats_.find(key_of(c));
    if (it != stats_.end()) {
      return c->ltype == FieldType::kString || c->ltype == FieldType::kIp ? it->second.long_string
                                                                          : it->second.distinct >= 2;
    }
    auto keys = guard_keys(*c);
    if (c->ltype == FieldType::kString || c->ltype == FieldType::kIp) {
      return std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.size() > 3; });
    }
    return c->ltype != FieldType::kBool && keys.size() >= 2;
  }

  static LookupKey lookup_of(const CCheck* c) {
    LitMode m = LitMode::kPrefix;
    bool lit = is_literal_term(*c) && literal_guard(*c, m);
    return LookupKey{c->lhs.def, c->lhs.arg, c->lhs.index, lit ? static_cast<int>(m) : -1};
  }

  // A rule with no value guard worth its lookup may have a literal one: of
  // the candidates whose every term is a literal test, `exists` or a strong
  // value test, adding at most two lookups (a field, and how it is
  // compared) to those of the guards chosen before it, the one with the
  // fewest `contains` terms (each a search of the value), then the fewest
  // terms. Value guards are picked first, so literal guards only add lookups
  // for rules that would otherwise run for every event.
  // With `flags`, a candidate must have a flag term (`F = true`), and it may
  // also have literal terms; without, it is a literal guard as above. Either
  // may add at most two lookups to those the guards chosen before it use.
  std::vector<const CCheck*> literal_choice(std::size_t r, bool flags) {
    std::vector<const CCheck*> g;
    std::tuple<std::size_t, std::size_t, std::size_t> best{SIZE_MAX, SIZE_MAX, SIZE_MAX};
    if (!roots_[r]) return g;
    for (const auto& cand : guard_candidates(*roots_[r], true)) {
      bool usable = true, wanted = false;
      std::size_t searches = 0;
      for (const CCheck* c : cand) {
        if (is_literal_term(*c)) {
          wanted = wanted || !flags;
          LitMode m;
          literal_guard(*c, m);
          if (m == LitMode::kContains) ++searches;
        } else if (flags && is_flag_term(*c)) {
          wanted = true;
        } else if (c->op != Op::kExists && (c->ltype == FieldType::kBool || !strong(c))) {
          usable = false;
        }
      }
      // Each field (and way of comparing it) is one lookup per event: more
      // than two new ones for one rule cost more than running the rule; one
      // that other guards already need costs nothing more.
      std::set<LookupKey> lookups;
      for (const CCheck* c : cand) {
        LookupKey l = lookup_of(c);
        if (!in_use_.count(l)) lookups.insert(std::move(l));
      }
      std::tuple<std::size_t, std::size_t, std::size_t> cost{searches, lookups.size(), cand.size()};
      if (!flags) std::get<1>(cost) = 0;  // literal guards: as before, fewest searches, then terms
      if (usable && wanted && lookups.size() <= 2 && cost < best) {
        g = cand;
        best = cost;
      }
    }
    for (const CCheck* c : g) in_use_.insert(lookup_of(c));
    return g;
  }

  const std::vector<const CNode*>& roots_;
  std::vector<std::vector<std::vector<const CCheck*>>> cands_;  // guard_candidates of each rule
  std::map<FieldKey, FieldStats> stats_;
  std::set<LookupKey> in_use_;  // the lookups of the guards chosen so far
};

}  // namespace

void GuardIndex::build(const std::vector<const Expr*>& exprs, event::Type t) {
  fields_.clear();
  lit_fields_.clear();
  active_ = false;
  const std::size_t n = exprs.size();
  words_ = (n + 63) / 64;
  always_.assign(words_, 0);
  if (n > kMaxRules) return;
  auto ti = static_cast<std::size_t>(t);
  std::vector<const CNode*> roots(n);
  for (std::size_t r = 0; r < n; ++r) {
    const Expr* e = exprs[r];
    roots[r] = e && ti < e->by_type_.size() ? e->by_type_[ti].get() : nullptr;
  }
  std::size_t guarded = 0;
  add_guards(GuardChooser(roots).choose(guarded));
  index_values();
  add_exclusions(roots);
  lay_out_lookups();
  active_ = guarded >= 2;
}

// Files each rule under its guard's terms: a literal term under its field and
// mode, a value term under its field by value (or as needing only a value,
// for `exists`); a rule without a guard is always a candidate.
void GuardIndex::add_guards(const std::vector<std::vector<const CCheck*>>& chosen) {
  auto set_bit = [&](std::vector<std::uint64_t>& m, std::size_t r) {
    if (m.empty()) m.assign(words_, 0);
    m[r / 64] |= std::uint64_t{1} << (r % 64);
  };
  for (std::size_t r = 0; r < chosen.size(); ++r) {
    const std::vector<const CCheck*>& g = chosen[r];
    if (g.empty()) {
      always_[r / 64] |= std::uint64_t{1} << (r % 64);
      continue;
    }
    for (const CCheck* c : g) {
      if (LitMode mode; is_literal_term(*c) && literal_guard(*c, mode)) {
        LitField* lf = nullptr;
        for (auto& have : lit_fields_) {
          if (have.mode == mode && same_field(have.inst, c->lhs)) lf = &have;
        }
        if (!lf) {
          lit_fields_.emplace_back();
          lf = &lit_fields_.back();
          lf->inst = c->lhs;
          lf->mode = mode;
        }
        std::vector<std::string> lits;
        literal_guard(*c, mode, &lits);
        for (auto& l : lits) lf->pending_rules.emplace_back(std::move(l), static_cast<std::uint32_t>(r));
        continue;
      }
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
        set_bit(f->exists, r);
      } else {
        for (auto& k : guard_keys(*c)) f->pending_rules.emplace_back(std::move(k), rr);
      }
    }
  }
}

// Turns the rules filed under each field's values into a value set and a
// rule mask per value.
void GuardIndex::index_values() {
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
    f.true_id = f.values.find(bool_key(true));
    f.false_id = f.values.find(bool_key(false));
  }
  for (auto& f : lit_fields_) f.build(words_);
}

// Exceptions on addresses (exclusion_check), per distinct check.
void GuardIndex::add_exclusions(const std::vector<const CNode*>& roots) {
  exclusions_.clear();
  for (std::size_t r = 0; r < roots.size(); ++r) {
    const CNode* root = roots[r];
    if (!root || root->kind != CNode::Kind::kAnd) continue;
    for (const auto& k : root->kids) {
      if (k.kind != CNode::Kind::kNot || k.kids.size() != 1 || k.kids[0].kind != CNode::Kind::kCheck) continue;
      const CCheck* c = k.kids[0].check.get();
      if (!c || !exclusion_check(*c)) continue;
      Exclusion* x = nullptr;
      for (auto& have : exclusions_) {
        if (have.check == c) x = &have;
      }
      if (!x) {
        exclusions_.push_back(Exclusion{c, std::vector<std::uint64_t>(words_, 0)});
        x = &exclusions_.back();
      }
      x->rules[r / 64] |= std::uint64_t{1} << (r % 64);
    }
  }
}

// What candidates() reads of each value field, laid out flat.
void GuardIndex::lay_out_lookups() {
  lookups_.clear();
  for (const auto& f : fields_) {
    Lookup l;
    l.fn = f.inst.def->fn;
    l.inst = &f.inst;
    l.slot = f.inst.slot;
    if (l.slot >= 0) {
      l.slot_word = static_cast<std::uint32_t>(l.slot) / 64;
      l.slot_bit = std::uint64_t{1} << (static_cast<unsigned>(l.slot) % 64);
    }
    l.type = f.inst.def->type;
    l.true_id = f.true_id;
    l.false_id = f.false_id;
    l.exists = f.exists.empty() ? nullptr : f.exists.data();
    l.masks = f.masks.empty() ? nullptr : f.masks.data();
    l.values = &f.values;
    lookups_.push_back(l);
  }
}

namespace {

inline void or_row(const std::uint64_t* m, std::size_t words, std::uint64_t* out) noexcept {
  if (words == 1) {
    out[0] |= m[0];
    return;
  }
  for (std::size_t w = 0; w < words; ++w) out[w] |= m[w];
}

}  // namespace

void GuardIndex::candidates(const ExtractCtx& x, std::uint64_t* out) const noexcept {
  const std::size_t words = words_;
  for (std::size_t w = 0; w < words; ++w) out[w] = always_[w];
  Extracted e;
  FieldCache* cache = x.cache;  // evaluate() always has one
  for (const Lookup& f : lookups_) {
    // extract_cached, with the lookup's own copies of what it reads.
    e.n = 0;
    if (f.slot >= 0) {
      if (cache->done[f.slot_word] & f.slot_bit) {
        e.n = cache->count[f.slot];
        if (e.n) e.v[0] = cache->val[f.slot];
      } else {
        f.fn(x, *f.inst, e);
        if (e.n <= 1) {
          cache->done[f.slot_word] |= f.slot_bit;
          cache->count[f.slot] = static_cast<std::uint8_t>(e.n);
          if (e.n) store_val(cache->val[f.slot], e.v[0], f.type);
        }
      }
    } else {
      f.fn(x, *f.inst, e);
    }
    if (e.n == 0) continue;
    if (f.exists) or_row(f.exists, words, out);
    if (!f.masks) continue;
    for (std::size_t i = 0; i < e.n; ++i) {
      std::int32_t id = -1;
      switch (f.type) {
        case FieldType::kString: id = f.values->find(e.v[i].s); break;
        case FieldType::kInt:
        case FieldType::kUint: {
          char k[8];
          std::memcpy(k, &e.v[i].i, 8);
          id = f.values->find(std::string_view(k, 8));
          break;
        }
        case FieldType::kBool: id = e.v[i].b ? f.true_id : f.false_id; break;
        case FieldType::kIp: {
          char k[17];
          id = f.values->find(std::string_view(k, ip_key(*e.v[i].ip, k)));
          break;
        }
        default: break;
      }
      if (id < 0) continue;
      or_row(f.masks + static_cast<std::size_t>(id) * words, words, out);
    }
  }
  for (const auto& f : lit_fields_) {
    extract_cached(x, f.inst, e);
    for (std::size_t i = 0; i < e.n; ++i) f.lookup(e.v[i].s, words, out);
  }
  // Exceptions that hold keep their rules out (only rules let through so far
  // need the check).
  for (const auto& ex : exclusions_) {
    bool any = false;
    for (std::size_t w = 0; w < words; ++w) any = any || (out[w] & ex.rules[w]) != 0;
    if (!any || !eval_check(*ex.check, x)) continue;
    for (std::size_t w = 0; w < words; ++w) out[w] &= ~ex.rules[w];
  }
}

std::vector<std::string> GuardIndex::fields() const {
  std::vector<std::string> v;
  auto name = [](const FieldInst& inst) {
    std::string n(inst.def->name);
    if (inst.has_arg) n += "[" + inst.arg + "]";
    return n;
  };
  for (const auto& f : fields_) v.push_back(name(f.inst));
  static const char* const kModes[] = {" startswith", " endswith", " contains", " pmatch"};
  for (const auto& f : lit_fields_) v.push_back(name(f.inst) + kModes[static_cast<int>(f.mode)]);
  return v;
}

}  // namespace vigil::rules
