// The or-chain rewrites of a compiled condition (compile_condition runs them
// when optimising): or-chains of string checks on one field become one check
// with a literal set (merge_contains), or one check that scans the field once
// for all of their literals (group_scans).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/rules/compiled.h"
#include "engine/rules/compiler_parts.h"

namespace vigil::rules {

// One matcher for any of the literals: as a prefix, a suffix or anywhere.
// Null for fewer than two (the plain comparison is as fast).
std::unique_ptr<LiteralMatcher> literal_set(const std::vector<std::string>& lits, Op op) {
  if (lits.size() < 2) return nullptr;
  return std::make_unique<LiteralMatcher>(lits, op);
}

namespace {

bool mergeable_contains(const CNode& n) {
  if (n.kind != CNode::Kind::kCheck || !n.check) return false;
  const CCheck& c = *n.check;
  return (c.op == Op::kContains || c.op == Op::kIContains || c.op == Op::kStartsWith || c.op == Op::kEndsWith) &&
         c.mod == Modifier::kNone && !c.rhs_field && c.ltr.empty() && c.ltype == FieldType::kString && !c.multi &&
         !c.str.empty();
}

}  // namespace

// Or-chains of `f contains a or f contains b ...` (or of startswith, or of
// endswith: Falco's `fd.name startswith /dev/sd or fd.name startswith
// /dev/nvme ...`) on one field become one check with a literal set: the
// field is scanned once instead of once per literal.
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
    // The sensor's open filter reads path literals from the checks: the
    // merged check needs one when every check it replaces had some.
    merged->path_check = true;
    for (auto g : group) {
      const CCheck& k = *n.kids[g].check;
      merged->path_check = merged->path_check && k.path_check;
      merged->path_literals.insert(merged->path_literals.end(), k.path_literals.begin(), k.path_literals.end());
    }
    if (!merged->path_check) merged->path_literals.clear();
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

namespace {

// A check one LiteralScan set can stand for: `contains` or `icontains` of
// one literal or of several (anyof, a merged or-chain) on a string field
// without transformers, or a `regex` on F or tolower(F) with a prefilter
// (a necessary condition, matched case-insensitively, so the same on F as
// on tolower(F)). `regex` tells which.
bool scan_part(const CCheck& c, LiteralScan::Set& set, bool& regex) {
  if (c.rhs_field || !c.lhs.def || c.ltype != FieldType::kString || c.scan || c.multi_all_in) return false;
  if (c.op == Op::kRegex) {
    const bool lowered = c.ltr.size() == 1 && c.ltr[0] == Transformer::kToLower;
    if (!(c.ltr.empty() || lowered) || c.mod != Modifier::kNone || c.res.size() != 1 || c.re_pre.size() != 1 ||
        !c.re_pre[0] || !c.re_pre[0]->anywhere())
      return false;
    set.lits = c.re_pre[0]->literals();
    set.icase = c.re_pre[0]->icase();
    regex = true;
    return true;
  }
  if (!c.ltr.empty() || (c.op != Op::kContains && c.op != Op::kIContains)) return false;
  set.icase = c.op == Op::kIContains;
  regex = false;
  if (c.mod == Modifier::kNone) {
    set.lits = {c.str};
  } else if (c.mod == Modifier::kAnyOf) {
    set.lits = c.strs;
  } else {
    return false;
  }
  return !set.lits.empty() && std::none_of(set.lits.begin(), set.lits.end(), [](const auto& l) { return l.empty(); });
}

std::string check_text(const CCheck& c) {
  if (!c.text.empty()) return c.text;
  return "anyof(" + std::string(op_name(c.op)) + ") on " + std::string(c.lhs.def ? c.lhs.def->name : "?");
}

}  // namespace

// In an `or`, the contains/icontains checks and prefiltered regexes on one
// field (scan_part) become one check that scans the field once for all of
// their literals (LiteralScan), where each scanned it again: the bundled
// miner rule's pool URLs (icontains), flags (contains) and algorithm regex
// on proc.cmdline, on every exec. A hit of a contains or icontains set
// decides the or; a hit of a regex's prefilter runs that regex. Only groups
// with an icontains or a regex: an or of plain `contains` checks stays as
// it is, as the guard index may guard a rule by it.
void group_scans(CNode& n) {
  for (auto& k : n.kids) group_scans(k);
  if (n.kind != CNode::Kind::kOr) return;
  struct Part {
    std::size_t kid;
    LiteralScan::Set set;
    bool regex;
  };
  std::vector<Part> parts;
  for (std::size_t i = 0; i < n.kids.size(); ++i) {
    const CNode& k = n.kids[i];
    if (k.kind != CNode::Kind::kCheck || !k.check) continue;
    Part p{i, {}, false};
    if (scan_part(*k.check, p.set, p.regex)) parts.push_back(std::move(p));
  }
  std::vector<bool> used(n.kids.size(), false);
  std::vector<std::pair<std::size_t, CNode>> grouped;  // (first kid, group)
  for (std::size_t a = 0; a < parts.size(); ++a) {
    const FieldInst& f = n.kids[parts[a].kid].check->lhs;
    if (used[parts[a].kid]) continue;
    std::vector<const Part*> g;
    bool worth = false;
    for (std::size_t b = a; b < parts.size() && g.size() < LiteralScan::kMaxSets; ++b) {
      const FieldInst& h = n.kids[parts[b].kid].check->lhs;
      if (used[parts[b].kid] || h.def != f.def || h.arg != f.arg || h.has_arg != f.has_arg || h.index != f.index)
        continue;
      g.push_back(&parts[b]);
      worth = worth || parts[b].regex || parts[b].set.icase;
    }
    if (g.size() < 2 || !worth) continue;
    std::vector<LiteralScan::Set> sets;
    for (const Part* p : g) sets.push_back(p->set);
    auto scan = std::make_unique<LiteralScan>(sets);
    if (!scan->ok()) continue;
    auto merged = std::make_shared<CCheck>();
    merged->lhs = f;
    merged->ltype = FieldType::kString;
    merged->op = Op::kIContains;  // a scan for literals (never a guard by value)
    merged->mod = Modifier::kAnyOf;
    std::string text;
    for (std::size_t k = 0; k < g.size(); ++k) {
      const CCheck& c = *n.kids[g[k]->kid].check;
      merged->multi = merged->multi || c.multi;
      if (!g[k]->regex) merged->scan_stop |= 1u << k;
      merged->scan_parts.push_back(n.kids[g[k]->kid].check);
      text += (k ? " or " : "(") + check_text(c);
      used[g[k]->kid] = true;
    }
    merged->text = text + ") [one scan]";
    merged->scan = std::move(scan);
    CNode m;
    m.kind = CNode::Kind::kCheck;
    m.check = std::move(merged);
    grouped.emplace_back(g[0]->kid, std::move(m));
  }
  if (grouped.empty()) return;
  std::vector<CNode> out;
  for (std::size_t i = 0; i < n.kids.size(); ++i) {
    bool placed = false;
    for (auto& [first, m] : grouped) {
      if (first == i) {
        out.push_back(std::move(m));
        placed = true;
      }
    }
    if (!placed && !used[i]) out.push_back(std::move(n.kids[i]));
  }
  n.kids = std::move(out);
  if (n.kids.size() == 1) {
    CNode only = std::move(n.kids[0]);
    n = std::move(only);
  }
}

}  // namespace vigil::rules
