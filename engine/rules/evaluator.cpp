// Evaluation: a compiled check against an event, the flat programs built from
// specialised conditions (with the per-event CheckCache), and what Expr tells
// about a condition: its type masks, path prefixes and per-type plan.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/rules/compiled.h"
#include "engine/util/utf8.h"

namespace vigil::rules {

namespace {

// `regex` as Falco 0.45 runs it: on the value with each ill-formed UTF-8
// sequence replaced by U+FFFD (RE2 reads text as UTF-8 and matches nothing at
// an invalid byte, so `.*` would miss "a\xffb"); every other operator
// compares the bytes. A value that is valid UTF-8, nearly every one, is
// matched in place; the copy lives in a per-thread buffer as long as three
// times the longest value matched so far. Without memory for it, no match.
bool regex_full_match(const RE2& re, std::string_view v) noexcept {
  if (util::utf8_valid(v)) return RE2::FullMatch(re2::StringPiece(v.data(), v.size()), re);
  thread_local std::string replaced;
  try {
    replaced.clear();
    util::append_utf8_replacing(replaced, v);
  } catch (...) {
    return false;
  }
  return RE2::FullMatch(re2::StringPiece(replaced.data(), replaced.size()), re);
}

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
      return regex_full_match(*c.res[idx], v);
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
    case FieldType::kList: return cmp_str(c, op, v.s, c.str, 0);
    case FieldType::kInt:
    case FieldType::kUint:
      if (op == Op::kIn || op == Op::kIntersects) {
        return std::binary_search(c.numset.begin(), c.numset.end(), v.i);
      }
      return cmp_num(op, v.i, c.nums.empty() ? 0 : c.nums[0]);
    case FieldType::kBool:
      if (op == Op::kIn || op == Op::kIntersects) {
        for (auto n : c.nums)
          if ((n != 0) == v.b) return true;
        return false;
      }
      return op == Op::kEq ? v.b == c.boolean : v.b != c.boolean;
    case FieldType::kIp: {
      bool any = false;
      for (const auto& n : c.nets) {
        if (n.contains(*v.ip)) {
          any = true;
          break;
        }
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
        case Op::kEq:
        case Op::kIn:
        case Op::kIntersects: return a.s == b.s;
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
// `tolower(F) regex ...` with a prefilter: the prefilter's literals are
// matched ASCII-case-insensitively, and tolower changes only ASCII case, so
// it gives the same answer on F as on tolower(F). It runs on F first, and F
// is lower-cased (a copy of the whole value) only when it passes. True for
// other checks.
[[gnu::noinline]] bool lowered_prefilter_passes(const CCheck& c, const ExtractCtx& x) noexcept {
  if (c.ltr.size() != 1 || c.ltr[0] != Transformer::kToLower || c.mod != Modifier::kNone || c.rhs_field ||
      c.res.size() != 1 || c.re_pre.size() != 1 || !c.re_pre[0])
    return true;
  static const std::vector<Transformer> kNone;
  Extracted raw;
  extract_field(x, c.lhs, kNone, raw);
  for (std::size_t i = 0; i < raw.n; ++i)
    if (c.re_pre[0]->match(raw.v[i].s)) return true;
  return false;
}

// `tolower(F) in (...)` and `tolower(basename(F)) in (...)` (the bundled
// miner rule, on every exec): looked up with the list's find_lower, which
// lower-cases as it hashes and compares, instead of lower-casing a copy of
// each value in the arena. -1: not such a check; else its result.
int lowered_in(const CCheck& c, const ExtractCtx& x) noexcept {
  if (c.op != Op::kIn || c.ltype != FieldType::kString || c.mod != Modifier::kNone || c.rhs_field || c.multi_all_in ||
      c.ltr.empty() || c.ltr.back() != Transformer::kToLower)
    return -1;
  for (std::size_t i = 0; i + 1 < c.ltr.size(); ++i)
    if (c.ltr[i] != Transformer::kBasename) return -1;
  if (c.lhs.def->type != FieldType::kString) return -1;
  const bool base = c.ltr.size() > 1;
  Extracted l;
  extract_cached(x, c.lhs, l);
  for (std::size_t i = 0; i < l.n; ++i) {
    std::string_view v = l.v[i].s;
    if (base && !v.empty()) {
      if (const void* p = ::memrchr(v.data(), '/', v.size()))
        v.remove_prefix(static_cast<std::size_t>(static_cast<const char*>(p) - v.data()) + 1);
    }
    if (c.set.find_lower(v) >= 0) return 1;
  }
  return 0;
}

// A group of contains/icontains checks and prefiltered regexes on one field
// (CCheck::scan), given the field's values `l`: one scan of each value finds
// which of them may hold; a contains or icontains set found decides it, a
// regex whose prefilter found something runs as its own check.
[[gnu::noinline]] bool eval_scan(const CCheck& c, const Extracted& l, const ExtractCtx& x) noexcept {
  std::uint32_t found = 0;
  for (std::size_t i = 0; i < l.n; ++i) found |= c.scan->scan(l.v[i].s, c.scan_stop);
  if (found & c.scan_stop) return true;
  for (std::size_t k = 0; found != 0 && k < c.scan_parts.size(); ++k) {
    if ((found >> k & 1u) && eval_check(*c.scan_parts[k], x)) return true;
  }
  return false;
}

}  // namespace

bool eval_check(const CCheck& c, const ExtractCtx& x) noexcept {
  Extracted l;
  if (c.ltr.empty()) {
    extract_cached(x, c.lhs, l);
  } else {
    if (c.op == Op::kRegex && !lowered_prefilter_passes(c, x)) return false;
    if (c.op == Op::kIn) {
      if (int r = lowered_in(c, x); r >= 0) return r != 0;
    }
    extract_field(x, c.lhs, c.ltr, l);
  }
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
    if (c.scan) return eval_scan(c, l, x);  // a scan group (its mod is anyof, its field has no transformers)
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
namespace {

// A check through the event's CheckCache: identical checks of several rules
// are evaluated once per event.
inline bool cached(const CCheck& c, std::int32_t check_id, const ExtractCtx& x) noexcept {
  CheckCache* cc = x.checks;
  if (!cc || check_id < 0) return eval_check(c, x);
  auto id = static_cast<unsigned>(check_id);
  std::uint64_t bit = std::uint64_t{1} << (id % 64);
  if (cc->done[id / 64] & bit) return (cc->value[id / 64] & bit) != 0;
  bool v = eval_check(c, x);
  cc->done[id / 64] |= bit;
  if (v) cc->value[id / 64] |= bit;
  else cc->value[id / 64] &= ~bit;
  return v;
}

bool eval_flat(const FNode* n, const ExtractCtx& x) noexcept;

// A child of an and/or: most are checks or negated checks (exceptions),
// evaluated here without a call of their own.
inline bool eval_kid(const FNode* k, const ExtractCtx& x) noexcept {
  const auto kind = static_cast<CNode::Kind>(k->kind);
  if (kind == CNode::Kind::kCheck) return cached(*k->check, k->id, x);
  if (kind == CNode::Kind::kNot && static_cast<CNode::Kind>(k[1].kind) == CNode::Kind::kCheck) {
    return !cached(*k[1].check, k[1].id, x);
  }
  return eval_flat(k, x);
}

bool eval_flat(const FNode* n, const ExtractCtx& x) noexcept {
  switch (static_cast<CNode::Kind>(n->kind)) {
    case CNode::Kind::kAnd: {
      const FNode* end = n + n->size;
      for (const FNode* k = n + 1; k < end; k += k->size) {
        if (!eval_kid(k, x)) return false;
      }
      return true;
    }
    case CNode::Kind::kOr: {
      const FNode* end = n + n->size;
      for (const FNode* k = n + 1; k < end; k += k->size) {
        if (eval_kid(k, x)) return true;
      }
      return false;
    }
    case CNode::Kind::kNot: return !eval_flat(n + 1, x);
    case CNode::Kind::kBool:
    case CNode::Kind::kTypeMask: return n->value;
    case CNode::Kind::kCheck: return cached(*n->check, n->id, x);
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

bool is_device_field(std::string_view name) {
  return name == "gpu.device" || name == "gpu.major" || name == "gpu.minor" || name == "gpu.index" ||
         name == "gpu.allowed";
}

// Can the node hold only for an open for writing (evt.is_open_write = true)?
bool needs_open_write(const CNode& n) {
  switch (n.kind) {
    case CNode::Kind::kCheck: {
      const CCheck* c = n.check.get();
      return c && c->lhs.def && c->lhs.def->name == "evt.is_open_write" && c->op == Op::kEq && !c->rhs_field &&
             c->mod == Modifier::kNone && c->ltr.empty() && c->nums.size() == 1 && c->nums[0] == 1;
    }
    case CNode::Kind::kAnd:
      return std::any_of(n.kids.begin(), n.kids.end(), [](const CNode& k) { return needs_open_write(k); });
    case CNode::Kind::kOr:
      return !n.kids.empty() &&
             std::all_of(n.kids.begin(), n.kids.end(), [](const CNode& k) { return needs_open_write(k); });
    default: return false;
  }
}

// Every way to satisfy the node needs one of the returned path prefixes.
bool prefixes_of(const CNode& n, std::vector<PathLiteral>& out) {
  switch (n.kind) {
    case CNode::Kind::kCheck:
      // A field only NVIDIA device opens fill: the sensor sends every device
      // open, whatever the paths.
      if (n.check && n.check->lhs.def && is_device_field(n.check->lhs.def->name)) return true;
      // vigil's own files: the sensor sends opens under them whatever the
      // rules ask (sensor::Config::own_paths).
      if (n.check && n.check->lhs.def && n.check->lhs.def->name == "vigil.file") return true;
      if (!n.check || !n.check->path_check) return false;
      out.insert(out.end(), n.check->path_literals.begin(), n.check->path_literals.end());
      return true;
    case CNode::Kind::kBool: return !n.value;  // false needs nothing to be true... never true
    case CNode::Kind::kAnd: {
      // Any branch's literals will do. Beside a "../" traversal check, a
      // branch judged by the opened file alone (resolved prefixes, whole
      // paths, name fragments) is taken with each literal marked as
      // holding only where the given path holds "../": the sensor reads
      // the given path only for the opens that branch passes. Otherwise a
      // branch whose literals are all of the resolved path is preferred to
      // one judged by the path as given; a branch with name fragments
      // cannot be used without a traversal.
      // An "and" that needs an open for writing makes its literals write-only.
      const bool write = needs_open_write(n);
      std::vector<std::vector<PathLiteral>> usable;
      for (const auto& k : n.kids) {
        std::vector<PathLiteral> tmp;
        if (prefixes_of(k, tmp)) usable.push_back(std::move(tmp));
      }
      auto is_marker = [](const std::vector<PathLiteral>& v) {
        return !v.empty() &&
               std::all_of(v.begin(), v.end(), [](const PathLiteral& l) { return l.given && l.traversal; });
      };
      auto of_file = [](const std::vector<PathLiteral>& v) {
        return std::none_of(v.begin(), v.end(), [](const PathLiteral& l) { return l.given; });
      };
      auto has_fragment = [](const std::vector<PathLiteral>& v) {
        return std::any_of(v.begin(), v.end(), [](const PathLiteral& l) { return l.contains && !l.traversal; });
      };
      const std::vector<PathLiteral>* pick = nullptr;
      if (std::any_of(usable.begin(), usable.end(), is_marker)) {
        for (auto& u : usable) {
          if (is_marker(u) || !of_file(u) || u.empty()) continue;
          for (auto& l : u) l.traversal = true;
          pick = &u;
          break;
        }
      }
      for (const auto& u : usable) {
        if (pick) break;
        if (!has_fragment(u) && of_file(u)) pick = &u;
      }
      for (const auto& u : usable) {
        if (pick) break;
        if (!has_fragment(u)) pick = &u;
      }
      if (!pick) return false;
      std::vector<PathLiteral> first = *pick;
      for (auto& l : first) l.write = l.write || write;
      out.insert(out.end(), first.begin(), first.end());
      return true;
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
      out += c.text.empty()
                 ? "anyof(" + std::string(op_name(c.op)) + ") on " + std::string(c.lhs.def ? c.lhs.def->name : "?")
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
  std::vector<PathLiteral> mine;
  if (!root_ || !prefixes_of(*root_, mine)) return false;
  // A name fragment outside a traversal is no filter the kernel can apply.
  if (std::any_of(mine.begin(), mine.end(), [](const PathLiteral& l) { return l.contains && !l.traversal; }))
    return false;
  out.insert(out.end(), mine.begin(), mine.end());
  return true;
}

OpenPaths open_paths_of(std::vector<PathLiteral> literals) {
  OpenPaths out;
  // Literals that hold only beside "../" in the given path: prefixes of the
  // resolved path (a whole path is its own prefix, a directory the prefix
  // "dir/") and name fragments. The "../" check alone stays the given prefix
  // "../".
  std::vector<std::string> trav;
  for (auto& l : literals) {
    if (l.given) l.traversal = false;
    if (!l.traversal) continue;
    if (l.contains) out.traversal_fragments.push_back(l.path);
    else trav.push_back(l.dir ? l.path + "/" : l.path);
  }
  std::erase_if(literals, [](const PathLiteral& l) { return l.traversal; });
  // Only resolved prefixes are judged apart for writes: whole paths cost a
  // name test and given prefixes a read of the path either way.
  for (auto& l : literals)
    if (l.whole || l.given || l.dir) l.write = false;
  std::sort(literals.begin(), literals.end());
  literals.erase(std::unique(literals.begin(), literals.end()), literals.end());
  // q covers p when every open p lets through, q does: q is a prefix of p's
  // kind (a whole path is never given) that starts p — shorter, or the same
  // path for any open where p is for writes only.
  auto covered = [&](const PathLiteral& p) {
    // A directory's files are the paths under "dir/".
    const std::string path = p.dir ? p.path + "/" : p.path;
    for (const auto& q : literals) {
      if (&q == &p || q.whole || q.dir || q.given != p.given || (q.write && !p.write)) continue;
      const bool shorter =
          q.path.size() < path.size() || (q.path.size() == path.size() && (p.whole || p.write || p.dir));
      if (shorter && path.compare(0, q.path.size(), q.path) == 0) return true;
    }
    return false;
  };
  for (const auto& p : literals) {
    if (covered(p)) continue;
    (p.whole   ? out.whole
     : p.dir   ? out.directories
     : p.given ? out.given
     : p.write ? out.write_prefixes
               : out.prefixes)
        .push_back(p.path);
  }
  // A traversal prefix another starts (a prefix for any open, or a shorter
  // traversal one) adds nothing.
  std::sort(trav.begin(), trav.end());
  trav.erase(std::unique(trav.begin(), trav.end()), trav.end());
  for (const auto& p : trav) {
    auto starts = [&](const std::string& q) { return &q != &p && q.size() <= p.size() && p.starts_with(q); };
    if (std::any_of(out.prefixes.begin(), out.prefixes.end(), starts) || std::any_of(trav.begin(), trav.end(), starts))
      continue;
    out.traversal_prefixes.push_back(p);
  }
  std::sort(out.traversal_fragments.begin(), out.traversal_fragments.end());
  out.traversal_fragments.erase(std::unique(out.traversal_fragments.begin(), out.traversal_fragments.end()),
                                out.traversal_fragments.end());
  return out;
}

namespace {
bool node_reads(const CNode& n, std::span<const std::string_view> fields) {
  if (n.kind == CNode::Kind::kCheck && n.check) {
    for (auto f : fields) {
      if ((n.check->lhs.def && n.check->lhs.def->name == f) || (n.check->rf.def && n.check->rf.def->name == f))
        return true;
    }
    return false;
  }
  for (const auto& k : n.kids)
    if (node_reads(k, fields)) return true;
  return false;
}
}  // namespace

bool Expr::reads_any(std::span<const std::string_view> fields) const { return root_ && node_reads(*root_, fields); }

}  // namespace vigil::rules
