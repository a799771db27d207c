// The compiler: expands macros and lists, resolves fields, type-checks and
// prepares values (sets, tries, regexes and their prefilters), shares
// identical checks between rules, and builds the Expr (compiler.h); its
// or-chains are then rewritten by or_chains.cpp.
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

#include "engine/rules/compiled.h"
#include "engine/rules/compiler_parts.h"
#include "engine/rules/diagnostic.h"
#include "engine/util/utf8.h"

namespace vigil::rules {

namespace {

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
  if (t == "true") {
    out = true;
    return true;
  }
  if (t == "false") {
    out = false;
    return true;
  }
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
  Compiler(const MacroMap& macros, const ListMap& lists, const FieldCatalog& cat, CompileResult& r, FieldSlots* slots,
           bool optimise, std::size_t max_nodes)
      : macros_(macros),
        lists_(lists),
        cat_(cat),
        r_(r),
        slots_(slots),
        optimise_(optimise),
        max_nodes_(max_nodes == 0 ? SIZE_MAX : max_nodes) {}

  // Counts the condition as written towards the size limit; false (with an
  // error) when it alone is over.
  bool count_root(const Node& root) {
    expanded_ = count_nodes(root);
    if (expanded_ <= max_nodes_) return true;
    too_large(SIZE_MAX, "");
    return false;
  }

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
      if (expanded_ > max_nodes_) {
        too_large(n->offset, " after macro expansion");
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
      if (expanded_ > max_nodes_) return false;
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
  static constexpr std::size_t kMaxListValues = 1000000;
  void too_large(std::size_t offset, const char* when) {
    error(code::kConditionTooLarge, offset,
          std::string("the condition is too large") + when + " (over " + std::to_string(max_nodes_) +
              " nodes, the limit; split it into several rules)");
  }
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
          error(code::kTypeError, off,
                "len() needs a string or list field, '" + f.name + "' is " + std::string(field_type_name(type)));
          return false;
        }
        type = FieldType::kInt;
      } else if (type != FieldType::kString) {
        error(code::kTypeError, off,
              std::string(transformer_name(*it)) + "() needs a string field, '" + f.name + "' is " +
                  std::string(field_type_name(type)));
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
      if (!too_many_)
        error(code::kTypeError, SIZE_MAX, "a list expands to more than " + std::to_string(kMaxListValues) + " values");
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

  // One comparison: evt.type tests become type masks; any other check is
  // resolved, its operator checked against its field's type, its right-hand
  // side prepared for its type, and shared with identical checks.
  CNode compile_check(const Node& n) {
    CNode c;
    c.kind = CNode::Kind::kBool;
    c.value = false;
    if (is_type_test(n)) return compile_type_test(n);
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
    const FieldType t = chk->ltype;
    const bool list_type = t == FieldType::kList;
    chk->multi = list_type || (chk->lhs.def->any_of && chk->lhs.index < 0);
    chk->multi_all_in = list_type && n.op == Op::kIn && chk->ltr.empty();
    if (!operator_fits(n, t)) return c;
    if (n.op == Op::kExists) return finish(c, key, std::move(chk));
    if (n.value.kind == Value::Kind::kField) {
      if (!compile_field_rhs(n, *chk)) return c;
      return finish(c, key, std::move(chk));
    }
    std::vector<std::string> vals;
    flatten(n.value, vals);
    bool is_list_op = op_takes_list(n.op) || n.modifier != Modifier::kNone;
    if (!is_list_op && vals.size() != 1) {
      error(code::kTypeError, n.offset, "operator '" + std::string(op_name(n.op)) + "' takes a single value");
      return c;
    }
    bool ok = true;
    switch (t) {
      case FieldType::kString:
      case FieldType::kList:
        ok = compile_strings(n, *chk, vals);
        if (ok) find_path_literals(n, *chk, vals);
        break;
      case FieldType::kInt:
      case FieldType::kUint: ok = compile_numbers(n, t, *chk, vals); break;
      case FieldType::kBool: ok = compile_bools(n, *chk, vals); break;
      case FieldType::kIp: ok = compile_networks(n, *chk, vals); break;
    }
    if (!ok) return c;
    return finish(c, key, std::move(chk));
  }

  // evt.type compares against event types: a bitmask test, no strings.
  static bool is_type_test(const Node& n) {
    return n.field.name == "evt.type" && n.field.transformers.empty() && !n.field.has_arg &&
           n.modifier == Modifier::kNone && (n.op == Op::kEq || n.op == Op::kNe || n.op == Op::kIn) &&
           n.value.kind != Value::Kind::kField;
  }
  CNode compile_type_test(const Node& n) {
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
    CNode c;
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

  // Which operators each field type takes; an error when `n`'s does not fit.
  bool operator_fits(const Node& n, FieldType t) {
    bool ok = true;
    switch (t) {
      case FieldType::kString:
      case FieldType::kList: ok = !(n.op == Op::kLt || n.op == Op::kLe || n.op == Op::kGt || n.op == Op::kGe); break;
      case FieldType::kInt:
      case FieldType::kUint:
      case FieldType::kBool:
      case FieldType::kIp: {
        ok = n.op == Op::kEq || n.op == Op::kNe || n.op == Op::kIn || n.op == Op::kIntersects || n.op == Op::kExists;
        if ((t == FieldType::kInt || t == FieldType::kUint) &&
            (n.op == Op::kLt || n.op == Op::kLe || n.op == Op::kGt || n.op == Op::kGe)) {
          ok = true;
        }
        if (n.modifier != Modifier::kNone) ok = false;
        break;
      }
    }
    if (!ok) {
      error(code::kTypeError, n.offset,
            "operator '" + std::string(op_name(n.op)) + "' cannot be used with " + std::string(field_type_name(t)) +
                " field '" + n.field.to_string() + "'");
    }
    return ok;
  }

  // A field on the right (val(), a transformer): a field-to-field comparison.
  bool compile_field_rhs(const Node& n, CCheck& chk) {
    const FieldType t = chk.ltype;
    FieldType rt;
    if (!resolve_field(n.value.field, n.offset, chk.rf, rt)) return false;
    bool compatible =
        rt == t || (rt == FieldType::kList && t == FieldType::kString) ||
        (t == FieldType::kList && rt == FieldType::kString) ||
        ((rt == FieldType::kInt || rt == FieldType::kUint) && (t == FieldType::kInt || t == FieldType::kUint));
    if (!compatible || n.op == Op::kRegex || n.op == Op::kPMatch || n.op == Op::kBContains ||
        n.op == Op::kBStartsWith) {
      error(code::kTypeError, n.offset,
            "cannot compare " + std::string(field_type_name(t)) + " field '" + n.field.to_string() + "' with '" +
                n.value.field.to_string() + "' using '" + std::string(op_name(n.op)) + "'");
      return false;
    }
    chk.rhs_field = true;
    chk.rtr = n.value.field.transformers;
    chk.rtype = rt;
    return true;
  }

  // A string (or list) field's values: lower-cased, hex-decoded or compiled
  // as the operator needs, then held as a set, a path trie, a literal set
  // or one string.
  bool compile_strings(const Node& n, CCheck& chk, std::vector<std::string>& vals) {
    const std::string op = std::string(op_name(n.op));
    for (auto& v : vals) {
      // As in Falco 0.45, where only byte buffers such as evt.buffer take a
      // NUL byte: no string field's value holds one (bcontains 00 finds it).
      if (v.find('\0') != std::string::npos) {
        error(code::kTypeError, n.offset,
              "'" + printable_text(v) + "' holds a NUL byte (\\x00), which no value of string field '" +
                  n.field.to_string() + "' can hold");
        return false;
      }
      if (n.op == Op::kIContains || n.op == Op::kIGlob) {
        std::transform(v.begin(), v.end(), v.begin(), lower);
      }
      if (n.op == Op::kBContains || n.op == Op::kBStartsWith) {
        std::string bytes;
        if (!hex_decode(v, bytes)) {
          error(code::kTypeError, n.offset, "'" + v + "' is not a hex byte string for '" + op + "'");
          return false;
        }
        v = bytes;
      }
      if (n.op == Op::kRegex) {
        RE2::Options o;
        o.set_log_errors(false);
        o.set_max_mem(8 << 20);
        auto re = std::make_unique<RE2>(v, o);
        if (!re->ok()) {
          // A \xHH escape of a byte 0x80-0xff puts a lone byte in the
          // expression; the text a regex runs on has U+FFFD in its place.
          const char* hint = util::utf8_valid(v) ? ""
                                                 : " (\\x80 to \\xff are bytes, not characters: the text a regex "
                                                   "runs on has U+FFFD for each invalid byte, which '.' matches)";
          error(code::kRegex, n.offset,
                "bad regular expression '" + printable_text(v) + "': " + printable_text(re->error()) + hint);
          return false;
        }
        chk.re_pre.push_back(optimise_ ? regex_prefilter(v, o) : nullptr);
        chk.res.push_back(std::move(re));
      }
    }
    if (n.op == Op::kIn || n.op == Op::kIntersects) {
      chk.set.build(vals);
    } else if (n.op == Op::kPMatch) {
      chk.trie = std::make_unique<PathTrie>();
      for (auto& v : vals) chk.trie->add(v);
    } else if (n.modifier != Modifier::kNone) {
      chk.strs = vals;
      if (n.modifier == Modifier::kAnyOf &&
          (n.op == Op::kContains || n.op == Op::kIContains || n.op == Op::kStartsWith || n.op == Op::kEndsWith)) {
        if (optimise_) chk.any_lit = literal_set(vals, n.op);
      }
    } else {
      chk.str = vals[0];
    }
    return true;
  }

  // The paths the sensor's open filter can judge this check by (CCheck::
  // path_check, path_literals): a file name, a "../" traversal, or literal
  // path prefixes; the last that applies wins.
  void find_path_literals(const Node& n, CCheck& chk, const std::vector<std::string>& vals) {
    const std::string& fname = n.field.name;
    // A file name (fd.filename = / in): the sensor judges a successful
    // open by the opened file's name, as it does the last component of a
    // whole path, so it is one ("/name"). So is fd.name endswith NAME
    // (no '/'; Falco's release_agent rule), for the file named exactly
    // NAME: a longer name that ends so is not sent.
    const bool name_suffix = fname == "fd.name" && n.op == Op::kEndsWith && vals.size() == 1 && !vals[0].empty() &&
                             vals[0].find('/') == std::string::npos;
    if ((fname == "fd.filename" || name_suffix) && chk.ltr.empty() && n.modifier == Modifier::kNone &&
        (n.op == Op::kEq || n.op == Op::kIn || name_suffix)) {
      std::vector<PathLiteral> leaves;
      for (const auto& v : vals) {
        if (v.empty() || v.find('/') != std::string::npos) break;
        leaves.push_back(PathLiteral{"/" + v, true});
      }
      if (leaves.size() == vals.size()) {  // every value a plain file name
        chk.path_check = true;
        chk.path_literals = std::move(leaves);
      }
    }
    // A path given with "../" (Falco's directory_traversal: fd.nameraw
    // contains "../"). Beside a check on the resolved path (an "and" of
    // both, as Falco's traversal rule has) the sensor judges that check,
    // then reads the path as given only for the opens it passes and sends
    // those holding "../"; alone, it sends the opens whose given path
    // starts with "../".
    if (fname == "fd.nameraw" && chk.ltr.empty() && n.modifier == Modifier::kNone &&
        ((n.op == Op::kContains && vals.size() == 1 && vals[0] == "../") ||
         (n.op == Op::kGlob && vals.size() == 1 && vals[0].starts_with("*../")))) {
      chk.path_check = true;
      chk.path_literals = {PathLiteral{.path = "../", .given = true, .traversal = true}};
    }
    // A fragment of a file name (fd.name contains "id_rsa": no '/', at most
    // 16 bytes): usable only beside a traversal, where the sensor scans the
    // opened file's name for it.
    if (fname == "fd.name" && chk.ltr.empty() && n.modifier == Modifier::kNone && n.op == Op::kContains &&
        vals.size() == 1 && !vals[0].empty() && vals[0].size() <= 16 && vals[0].find('/') == std::string::npos) {
      chk.path_check = true;
      chk.path_literals = {PathLiteral{.path = vals[0], .contains = true}};
    }
    if ((fname == "fd.name" || fname == "fd.directory" || fname == "evt.arg.path" || fname == "evt.arg.name" ||
         fname == "fd.nameraw") &&
        chk.ltr.empty() && n.modifier != Modifier::kAnyOf) {
      path_prefixes(n, chk, vals);
    }
  }

  // Literal path prefixes for the sensor's open filter.
  void path_prefixes(const Node& n, CCheck& chk, const std::vector<std::string>& vals) {
    const std::string& fname = n.field.name;
    bool usable = true;
    // fd.name holds the resolved path of a successful open: equality
    // with a literal is a whole-path match, a prefix one of the
    // resolved path (so is fd.directory's). The path arguments
    // (evt.arg.path, as Falco gives them) and fd.nameraw compare the
    // path as given: prefixes of the given string only.
    const bool whole_field = fname == "fd.name";
    const bool given = fname != "fd.name" && fname != "fd.directory";
    std::vector<PathLiteral> pre;
    for (const auto& v : vals) {
      PathLiteral p{v, false, given};
      if (n.op == Op::kGlob) p.path = p.path.substr(0, p.path.find_first_of("*?["));
      else if (n.op != Op::kEq && n.op != Op::kIn && n.op != Op::kStartsWith && n.op != Op::kPMatch) usable = false;
      if (n.op == Op::kPMatch) p.path = p.path.substr(0, p.path.find_first_of("*?["));
      if (p.path.empty() || p.path[0] != '/') usable = false;
      p.whole = whole_field && (n.op == Op::kEq || n.op == Op::kIn) && p.path.back() != '/';
      // fd.directory = / in: the whole directory, judged by the name of
      // the file's parent ("/" has none: a prefix of every path).
      if (fname == "fd.directory" && (n.op == Op::kEq || n.op == Op::kIn)) {
        while (p.path.size() > 1 && p.path.back() == '/') p.path.pop_back();
        p.dir = p.path != "/";
      }
      pre.push_back(std::move(p));
    }
    if (usable && n.modifier == Modifier::kNone) {
      chk.path_check = true;
      chk.path_literals = std::move(pre);
    }
  }

  bool compile_numbers(const Node& n, FieldType t, CCheck& chk, const std::vector<std::string>& vals) {
    for (const auto& v : vals) {
      std::int64_t x;
      if (!parse_int(v, x)) {
        error(code::kTypeError, n.offset,
              "'" + v + "' is not a number, but '" + n.field.to_string() + "' is an " +
                  std::string(field_type_name(t)) + " field");
        return false;
      }
      chk.nums.push_back(x);
      chk.numset.push_back(x);
    }
    std::sort(chk.numset.begin(), chk.numset.end());
    chk.numset.erase(std::unique(chk.numset.begin(), chk.numset.end()), chk.numset.end());
    return true;
  }

  bool compile_bools(const Node& n, CCheck& chk, const std::vector<std::string>& vals) {
    for (const auto& v : vals) {
      bool b;
      if (!parse_bool(v, b)) {
        error(code::kTypeError, n.offset,
              "'" + v + "' is not true or false, but '" + n.field.to_string() + "' is a bool field");
        return false;
      }
      chk.boolean = b;
      chk.nums.push_back(b ? 1 : 0);
    }
    return true;
  }

  bool compile_networks(const Node& n, CCheck& chk, const std::vector<std::string>& vals) {
    for (const auto& v : vals) {
      Cidr net;
      if (!parse_cidr(v, net)) {
        error(code::kTypeError, n.offset,
              "'" + v + "' is not an IP address or network, but '" + n.field.to_string() + "' is an ip field");
        return false;
      }
      chk.nets.push_back(net);
    }
    return true;
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
  std::size_t max_nodes_;
  std::size_t expanded_ = 0;  // nodes of the condition and of the macros expanded so far
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

CompileResult compile_condition(NodePtr root, const MacroMap& macros, const ListMap& lists, const FieldCatalog& catalog,
                                FieldSlots* slots, bool optimise, std::size_t max_nodes) {
  CompileResult r;
  Compiler comp(macros, lists, catalog, r, slots, optimise, max_nodes);
  if (!comp.count_root(*root)) return r;
  std::vector<std::string> stack;
  if (!comp.expand_macros(root, stack)) {
    if (r.errors.empty()) {
      r.errors.push_back({SIZE_MAX, "a macro used here did not compile"});
      r.error_codes.push_back(code::kUndefinedMacro);
    }
    return r;
  }
  CNode c = comp.compile(*root);
  if (optimise) {
    merge_contains(c);
    group_scans(c);
  }
  if (!r.errors.empty() || !r.unknown_fields.empty()) return r;
  r.expr = std::make_unique<Expr>(std::make_unique<CNode>(std::move(c)), optimise);
  return r;
}

}  // namespace vigil::rules
