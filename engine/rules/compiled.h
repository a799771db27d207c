// The compiled form of a condition, shared by the passes that build it
// (compiler.cpp), specialise and order it (optimiser.cpp), evaluate it
// (evaluator.cpp) and index rules by it (guard_index.cpp): CCheck, one
// comparison with its right-hand side prepared, and CNode, the tree of
// and/or/not over checks and evt.type masks. Internal to engine/rules.
//
// Thread-safety: immutable once an Expr is built from it.
#pragma once

#include <re2/re2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/event/schema.h"
#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"
#include "engine/rules/matchers.h"

namespace vigil::rules {

// Members the event path reads come first, so a check's evaluation touches
// few cache lines.
struct CCheck {
  int id = -1;  // CheckCache slot, -1: not cached
  // 0 or 1: the check gives this result for every event (its field does not
  // depend on the event: evt.source, evt.num, evt.dir); -1: it depends.
  std::int8_t constant = -1;
  FieldType ltype = FieldType::kString;
  bool multi_all_in = false;  // list field with `in`: every element must be in the set
  bool multi = false;         // several values: any must hold
  Op op = Op::kEq;
  Modifier mod = Modifier::kNone;
  bool rhs_field = false;
  bool boolean = false;
  FieldInst lhs;
  std::vector<Transformer> ltr;  // innermost first
  // Right-hand side, prepared by type.
  std::string str;  // single string (lower-cased for icontains/iglob)
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
  // An `or` of contains/icontains checks and prefiltered regexes on one
  // field, as one check that scans the field once (group_scans,
  // compiler.cpp): scan_parts[i] is the check scan's set i stands for;
  // scan_stop has the sets whose hit decides the or (all but the regexes',
  // whose prefilter hit only lets their expression run).
  std::unique_ptr<LiteralScan> scan;
  std::vector<std::shared_ptr<const CCheck>> scan_parts;
  std::uint32_t scan_stop = 0;
  std::vector<std::string> strs;  // modifier values
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
  bool value = false;    // kBool
  event::TypeMask mask;  // kTypeMask
  std::vector<CNode> kids;
  std::shared_ptr<const CCheck> check;  // shared by the per-event-type copies
};

// Copies the member of `v` that a field of type `t` fills into `d`, with
// loads of the widths the extractor stored (a whole-Val copy reads its
// string as one 16-byte load, which cannot be forwarded from the two 8-byte
// stores that wrote it a moment before, and waits for them to retire).
inline void store_val(Val& d, const Val& v, FieldType t) noexcept {
  switch (t) {
    case FieldType::kString:
    case FieldType::kList: {
      const char* p = v.s.data();
      std::size_t n = v.s.size();
      asm("" : "+r"(p), "+r"(n));  // two scalar loads, not one vector load
      d.s = std::string_view(p, n);
      return;
    }
    case FieldType::kInt:
    case FieldType::kUint: d.i = v.i; return;
    case FieldType::kBool: d.b = v.b; return;
    case FieldType::kIp: d.ip = v.ip; return;
  }
}

// A field's values through the event's FieldCache, without transformers:
// extract_field without its call and transformer loop, for the lookups and
// checks that have none (most).
inline void extract_cached(const ExtractCtx& x, const FieldInst& f, Extracted& out) noexcept {
  out.n = 0;
  FieldCache* c = x.cache;
  if (!c || f.slot < 0) {
    f.def->fn(x, f, out);
    return;
  }
  const auto s = static_cast<unsigned>(f.slot);
  const std::uint64_t bit = std::uint64_t{1} << (s % 64);
  if (c->done[s / 64] & bit) {
    out.n = c->count[s];
    if (out.n) out.v[0] = c->val[s];
    return;
  }
  f.def->fn(x, f, out);
  if (out.n <= 1) {
    c->done[s / 64] |= bit;
    c->count[s] = static_cast<std::uint8_t>(out.n);
    if (out.n) store_val(c->val[s], out.v[0], f.def->type);
  }
}

// One check against the current event (evaluator.cpp).
bool eval_check(const CCheck& c, const ExtractCtx& x) noexcept;
// Appends the subtree of `n` to `out` in evaluation order (evaluator.cpp).
void flatten_node(const CNode& n, std::vector<FNode>& out);

}  // namespace vigil::rules
