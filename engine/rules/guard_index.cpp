// The guard index (GuardIndex, compiler.h): per event type, a map from the
// values of guard fields to the rules whose conditions need them.
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
  // Per guard field: how many distinct values the rules compare it with (a
  // field with few, fd.typechar = f in every open rule, lets nearly every
  // event through; one with many, fd.name, sorts events well), whether one
  // of them is a string longer than 3 bytes, and how many rules could be
  // guarded by it. Summarised once per field, so weighing a candidate costs
  // a lookup and not a walk over the field's values (a rule of n terms on
  // one field would otherwise cost n^2).
  using FieldKey = std::tuple<const FieldDef*, std::string, std::int64_t>;
  struct FieldStats {
    std::set<std::string> values;  // while counting
    std::size_t distinct = 0;
    bool long_string = false;
    std::size_t popular = 0;
  };
  std::map<FieldKey, FieldStats> stats;
  for (const auto& rc : cands) {
    std::set<FieldKey> mine;
    for (const auto& g : rc) {
      for (const CCheck* c : g) {
        FieldKey key{c->lhs.def, c->lhs.arg, c->lhs.index};
        auto& st = stats[key];
        if (mine.insert(key).second) ++st.popular;
        if (c->op == Op::kExists) continue;
        for (auto& k : guard_keys(*c)) {
          if (k.size() > 3) st.long_string = true;
          st.values.insert(std::move(k));
        }
      }
    }
  }
  for (auto& [key, st] : stats) {
    st.distinct = st.values.size();
    std::set<std::string>().swap(st.values);
  }
  // A guard's worth, compared as (strong, cardinality): a term is strong
  // when its field is compared with several numbers or with some string
  // longer than 3 bytes (fd.typechar = f, fd.l4proto = tcp, gpu.limit = 0,
  // booleans and `exists` are weak: many events have such values). Over the
  // terms of an `or`, the weakest.
  // Ties go to fields more rules can be guarded by (one extraction serves
  // them all).
  auto worth = [&](const std::vector<const CCheck*>& g) {
    std::tuple<int, std::size_t, std::size_t> w{2, SIZE_MAX, SIZE_MAX};
    for (const CCheck* c : g) {
      const FieldStats& st = stats.at(FieldKey{c->lhs.def, c->lhs.arg, c->lhs.index});
      // A boolean is weakest of all (evt.failed = false holds for most events).
      std::tuple<int, std::size_t, std::size_t> k{c->ltype == FieldType::kBool && c->op != Op::kExists ? 0 : 1, 1,
                                                  st.popular};
      if (c->op != Op::kExists && c->ltype != FieldType::kBool) {
        bool strong = c->ltype == FieldType::kString ? st.long_string : st.distinct >= 2;
        k = {strong ? 2 : 1, st.distinct, st.popular};
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

}  // namespace vigil::rules
