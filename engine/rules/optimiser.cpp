// The optimiser: Expr's constructor specialises a compiled condition for
// each event type (evt.type tests and constant checks folded, nested and/or
// flattened, their children ordered by cost and by how often they decide the
// result) and flattens each copy into the program the evaluator runs.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "engine/rules/compiled.h"

namespace vigil::rules {

Expr::Expr() { flat_start_.fill(kNoProgram); }

namespace {

// One part of a scan group as a node of its own, to cost it or weigh it as
// the or the group stands for did.
CNode part_node(const std::shared_ptr<const CCheck>& p) {
  CNode part;
  part.kind = CNode::Kind::kCheck;
  part.check = p;
  return part;
}

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
      // A scan group costs what the or it stands for did.
      if (k.scan) {
        int c = 0;
        for (const auto& p : k.scan_parts) c += cost(part_node(p));
        return c;
      }
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
          f == "proc.pname" || f == "proc.pexe" || f == "proc.pexepath" || f == "fd.name" ||
          f.find("sip.name") != f.npos || f == "evt.arg.flags" || f.rfind("gpu.all", 0) == 0 ||
          f.rfind("container.image", 0) == 0) {
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
      // A scan group: as likely as the or it stands for.
      if (k.scan) {
        double q = 1.0;
        for (const auto& p : k.scan_parts) q *= 1.0 - true_share(part_node(p));
        return 1.0 - q;
      }
      // A field only some events of a type fill (gpu.device: opens of NVIDIA
      // device nodes; fd.sip.name: servers a DNS answer named) is rarely there.
      const bool narrow = k.lhs.def && !k.lhs.def->events.all();
      switch (k.op) {
        case Op::kNe: return 0.9;
        case Op::kExists: return narrow ? 0.3 : 0.9;
        case Op::kLt:
        case Op::kLe:
        case Op::kGt:
        case Op::kGe: return 0.5;
        default: break;
      }
      if (k.ltype == FieldType::kBool) return 0.5;
      // Fields with a handful of values (fd.typechar = f holds for nearly
      // every open, fd.l4proto = tcp for most connections): an equality
      // decides little, so the rule's selective tests should run first.
      if (k.lhs.def && (k.op == Op::kEq || k.op == Op::kIn)) {
        std::string_view f = k.lhs.def->name;
        if (f == "fd.typechar" || f == "fd.type" || f == "fd.l4proto" || f == "fd.sockfamily" || f == "evt.dir" ||
            f == "evt.category") {
          return 0.5;
        }
      }
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
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
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

}  // namespace vigil::rules
