#include "engine/rules/ast.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "engine/util/utf8.h"

namespace vigil::rules {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kEq: return "=";
    case Op::kNe: return "!=";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
    case Op::kContains: return "contains";
    case Op::kIContains: return "icontains";
    case Op::kBContains: return "bcontains";
    case Op::kStartsWith: return "startswith";
    case Op::kBStartsWith: return "bstartswith";
    case Op::kEndsWith: return "endswith";
    case Op::kGlob: return "glob";
    case Op::kIGlob: return "iglob";
    case Op::kRegex: return "regex";
    case Op::kIn: return "in";
    case Op::kIntersects: return "intersects";
    case Op::kPMatch: return "pmatch";
    case Op::kExists: return "exists";
  }
  return "?";
}

bool op_takes_list(Op op) { return op == Op::kIn || op == Op::kIntersects || op == Op::kPMatch; }

bool op_from_word(std::string_view word, Op& op) {
  // The word operators are kContains..kPMatch in the enum; op_name spells them.
  for (auto o = static_cast<int>(Op::kContains); o <= static_cast<int>(Op::kPMatch); ++o) {
    if (op_name(static_cast<Op>(o)) == word) {
      op = static_cast<Op>(o);
      return true;
    }
  }
  return false;
}

std::string_view transformer_name(Transformer t) {
  switch (t) {
    case Transformer::kToLower: return "tolower";
    case Transformer::kToUpper: return "toupper";
    case Transformer::kB64: return "b64";
    case Transformer::kBasename: return "basename";
    case Transformer::kLen: return "len";
  }
  return "?";
}

namespace {

bool transformer_from_name(std::string_view s, Transformer& t) {
  if (s == "tolower") t = Transformer::kToLower;
  else if (s == "toupper") t = Transformer::kToUpper;
  else if (s == "b64") t = Transformer::kB64;
  else if (s == "basename") t = Transformer::kBasename;
  else if (s == "len") t = Transformer::kLen;
  else return false;
  return true;
}

void append_hex_escape(std::string& out, unsigned char b) {
  constexpr char kHexDigits[] = "0123456789abcdef";
  out += "\\x";
  out += kHexDigits[b >> 4];
  out += kHexDigits[b & 0xF];
}

// s with the bytes a terminal or a reader would not see as text (control
// characters, ill-formed UTF-8) as \xHH, and with `escape_quoting` also '"'
// and '\\' escaped, so that the result read back as a quoted string is s.
std::string escaped_text(std::string_view s, bool escape_quoting) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = util::utf8_sequence(s, i);
    if (n < 0 || b < 0x20 || b == 0x7F) {
      const std::size_t bad = n < 0 ? static_cast<std::size_t>(-n) : 1;
      for (std::size_t k = 0; k < bad; ++k) append_hex_escape(out, static_cast<unsigned char>(s[i + k]));
      i += bad;
      continue;
    }
    if (escape_quoting && (b == '"' || b == '\\')) out += '\\';
    out.append(s.substr(i, static_cast<std::size_t>(n)));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

std::string quote(const std::string& s) {
  // Quoted when a bare word would read differently: special characters, or a
  // modifier keyword at the start ("anyof/x" after an operator), or bytes
  // that are written as escapes.
  bool needs = s.empty() || s.rfind("anyof", 0) == 0 || s.rfind("allof", 0) == 0 || s.rfind("oneof", 0) == 0 ||
               !util::utf8_valid(s);
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (std::isspace(b) || b < 0x20 || b == 0x7F || c == '(' || c == ')' || c == '"' || c == '\'' || c == ',' ||
        c == '=') {
      needs = true;
    }
  }
  if (!needs) return s;
  return "\"" + escaped_text(s, true) + "\"";
}

// The escape whose backslash is s[i] (s[i + 1] exists): appends what it
// stands for to out and returns the bytes it spans; 0, with `why`, for a \x
// that two hex digits do not follow. The escapes are Falco's; \xHH came with
// Falco 0.45. Another character after the backslash is kept with it (Falco
// rejects those: \d stays \d, for a regex).
std::size_t decode_escape(std::string_view s, std::size_t i, std::string& out, std::string& why) {
  switch (s[i + 1]) {
    case 'n': out += '\n'; return 2;
    case 't': out += '\t'; return 2;
    case 'r': out += '\r'; return 2;
    case 'b': out += '\b'; return 2;
    case 'f': out += '\f'; return 2;
    case '\\': out += '\\'; return 2;
    case '"': out += '"'; return 2;
    case '\'': out += '\''; return 2;
    case '/': out += '/'; return 2;
    case 'x': {
      unsigned char byte = 0;
      if (i + 4 <= s.size()) {
        const char* digits = s.data() + i + 2;
        auto [end, ec] = std::from_chars(digits, digits + 2, byte, 16);
        if (ec == std::errc() && end == digits + 2) {
          out += static_cast<char>(byte);
          return 4;
        }
      }
      std::string_view seen = s.substr(i, 4);  // up to the closing quote
      seen = seen.substr(0, std::min(seen.size(), seen.find_first_of("\"'", 2)));
      why = "bad escape '" + escaped_text(seen, false) + "': \\x takes two hex digits (\\x00 to \\xff)";
      return 0;
    }
    default:
      out += '\\';
      out += s[i + 1];
      return 2;
  }
}

}  // namespace

std::string FieldExpr::to_string() const {
  std::string s = name;
  if (has_arg) {
    bool needs = arg.find(']') != std::string::npos || (!arg.empty() && (arg.front() == '"' || arg.front() == '\''));
    if (needs) {
      std::string q = "\"";
      for (char c : arg) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
      }
      s += "[" + q + "\"]";
    } else {
      s += "[" + arg + "]";
    }
  }
  for (auto it = transformers.begin(); it != transformers.end(); ++it) {
    s = std::string(transformer_name(*it)) + "(" + s + ")";
  }
  return s;
}

std::string Value::to_string() const {
  switch (kind) {
    case Kind::kString: return quote(text);
    case Kind::kField: return field.transformers.empty() ? "val(" + field.to_string() + ")" : field.to_string();
    case Kind::kList: {
      std::string s = "(";
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) s += ", ";
        s += items[i].to_string();
      }
      return s + ")";
    }
  }
  return "";
}

NodePtr Node::clone() const {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->field = field;
  n->op = op;
  n->modifier = modifier;
  n->value = value;
  n->macro = macro;
  n->bool_value = bool_value;
  n->offset = offset;
  n->children.reserve(children.size());
  for (const auto& c : children) n->children.push_back(c->clone());
  return n;
}

std::string Node::to_string() const {
  switch (kind) {
    case Kind::kAnd:
    case Kind::kOr: {
      std::string s = "(";
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (i) s += kind == Kind::kAnd ? " and " : " or ";
        s += children[i]->to_string();
      }
      return s + ")";
    }
    case Kind::kNot: return "not " + children[0]->to_string();
    case Kind::kMacro: return macro;
    case Kind::kBool: return bool_value ? "true" : "false";
    case Kind::kCheck: {
      std::string s = field.to_string() + " " + std::string(op_name(op));
      if (op == Op::kExists) return s;
      if (modifier == Modifier::kAnyOf) s += " anyof";
      if (modifier == Modifier::kAllOf) s += " allof";
      if (modifier == Modifier::kOneOf) s += " oneof";
      return s + " " + value.to_string();
    }
  }
  return "";
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  ParseResult run() {
    ParseResult r;
    NodePtr n = parse_or(0);
    if (n && (skip_ws(), pos_ < s_.size())) {
      fail(pos_, "unexpected '" + std::string(s_.substr(pos_, 20)) + "'");
      n.reset();
    }
    if (!n) {
      r.error = err_;
      if (r.error.message.empty()) r.error.message = "syntax error";
      return r;
    }
    r.root = std::move(n);
    return r;
  }

  bool field_only(FieldExpr& out, std::string& error) {
    skip_ws();
    if (!parse_field_expr(out, 0)) {
      error = err_.message;
      return false;
    }
    skip_ws();
    if (pos_ != s_.size()) {
      error = "unexpected text after field";
      return false;
    }
    return true;
  }

 private:
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool fail(std::size_t at, std::string msg) {
    if (!failed_) {
      failed_ = true;
      err_.offset = at;
      err_.message = std::move(msg);
    }
    return false;
  }
  static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
  // A keyword at pos_ followed by a non-identifier character.
  bool keyword(std::string_view kw) {
    if (s_.substr(pos_, kw.size()) != kw) return false;
    std::size_t end = pos_ + kw.size();
    if (end < s_.size() && ident_char(s_[end])) return false;
    pos_ = end;
    return true;
  }
  std::string_view peek_ident() const {
    std::size_t e = pos_;
    while (e < s_.size() && ident_char(s_[e])) ++e;
    return s_.substr(pos_, e - pos_);
  }

  NodePtr parse_or(int depth) {
    if (depth > kMaxDepth) {
      fail(pos_, "expression nested too deeply");
      return nullptr;
    }
    std::size_t start = pos_;
    NodePtr first = parse_and(depth + 1);
    if (!first) return nullptr;
    std::vector<NodePtr> kids;
    kids.push_back(std::move(first));
    for (;;) {
      skip_ws();
      if (!keyword("or")) break;
      NodePtr n = parse_and(depth + 1);
      if (!n) return nullptr;
      kids.push_back(std::move(n));
    }
    if (kids.size() == 1) return std::move(kids[0]);
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kOr;
    n->children = std::move(kids);
    n->offset = start;
    return n;
  }

  NodePtr parse_and(int depth) {
    std::size_t start = pos_;
    NodePtr first = parse_not(depth + 1);
    if (!first) return nullptr;
    std::vector<NodePtr> kids;
    kids.push_back(std::move(first));
    for (;;) {
      skip_ws();
      if (!keyword("and")) break;
      NodePtr n = parse_not(depth + 1);
      if (!n) return nullptr;
      kids.push_back(std::move(n));
    }
    if (kids.size() == 1) return std::move(kids[0]);
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kAnd;
    n->children = std::move(kids);
    n->offset = start;
    return n;
  }

  NodePtr parse_not(int depth) {
    if (depth > kMaxDepth) {
      fail(pos_, "expression nested too deeply");
      return nullptr;
    }
    skip_ws();
    std::size_t start = pos_;
    if (keyword("not")) {
      NodePtr c = parse_not(depth + 1);
      if (!c) return nullptr;
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kNot;
      n->children.push_back(std::move(c));
      n->offset = start;
      return n;
    }
    return parse_primary(depth + 1);
  }

  NodePtr parse_primary(int depth) {
    skip_ws();
    std::size_t start = pos_;
    if (pos_ >= s_.size()) {
      fail(pos_, "unexpected end of condition");
      return nullptr;
    }
    if (s_[pos_] == '(') {
      ++pos_;
      NodePtr n = parse_or(depth + 1);
      if (!n) return nullptr;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ')') {
        fail(pos_, "expected ')'");
        return nullptr;
      }
      ++pos_;
      return n;
    }
    std::string_view id = peek_ident();
    if (id.empty()) {
      fail(pos_, "expected a field, a macro or '(' at '" + std::string(s_.substr(pos_, 20)) + "'");
      return nullptr;
    }
    Transformer t;
    bool is_transformer = false;
    {
      std::size_t e = pos_ + id.size();
      while (e < s_.size() && s_[e] == ' ') ++e;
      is_transformer = transformer_from_name(id, t) && e < s_.size() && s_[e] == '(';
    }
    if (id.find('.') == std::string_view::npos && !is_transformer) {
      if (id == "and" || id == "or") {
        fail(pos_, "unexpected '" + std::string(id) + "'");
        return nullptr;
      }
      pos_ += id.size();
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kMacro;
      n->macro = std::string(id);
      n->offset = start;
      return n;
    }
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kCheck;
    n->offset = start;
    if (!parse_field_expr(n->field, depth + 1)) return nullptr;
    skip_ws();
    if (!parse_op(n->op)) {
      fail(pos_, "expected an operator after '" + n->field.to_string() + "'");
      return nullptr;
    }
    if (n->op == Op::kExists) return n;
    skip_ws();
    if (!op_takes_list(n->op)) {
      if (keyword("anyof")) n->modifier = Modifier::kAnyOf;
      else if (keyword("allof")) n->modifier = Modifier::kAllOf;
      else if (keyword("oneof")) n->modifier = Modifier::kOneOf;
    }
    skip_ws();
    if (op_takes_list(n->op) || n->modifier != Modifier::kNone) {
      if (pos_ >= s_.size() || s_[pos_] != '(') {
        // Falco accepts a single value after `in` only in parentheses.
        fail(pos_, "expected '(' after '" + std::string(op_name(n->op)) + "'");
        return nullptr;
      }
      if (!parse_list(n->value, depth + 1)) return nullptr;
      return n;
    }
    if (!parse_value(n->value, depth + 1, false)) return nullptr;
    return n;
  }

  bool parse_op(Op& op) {
    if (pos_ >= s_.size()) return false;
    auto two = s_.substr(pos_, 2);
    if (two == "==") {
      pos_ += 2;
      op = Op::kEq;
      return true;
    }
    if (two == "!=") {
      pos_ += 2;
      op = Op::kNe;
      return true;
    }
    if (two == "<=") {
      pos_ += 2;
      op = Op::kLe;
      return true;
    }
    if (two == ">=") {
      pos_ += 2;
      op = Op::kGe;
      return true;
    }
    char c = s_[pos_];
    if (c == '=') {
      ++pos_;
      op = Op::kEq;
      return true;
    }
    if (c == '<') {
      ++pos_;
      op = Op::kLt;
      return true;
    }
    if (c == '>') {
      ++pos_;
      op = Op::kGt;
      return true;
    }
    std::string_view word = peek_ident();
    if (op_from_word(word, op)) {
      pos_ += word.size();
      return true;
    }
    if (keyword("exists")) {
      op = Op::kExists;
      return true;
    }
    return false;
  }

  bool parse_field_expr(FieldExpr& f, int depth) {
    if (depth > kMaxDepth) return fail(pos_, "expression nested too deeply");
    std::size_t start = pos_;
    std::string_view id = peek_ident();
    Transformer t;
    if (!id.empty() && transformer_from_name(id, t)) {
      std::size_t save = pos_;
      pos_ += id.size();
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        ++pos_;
        skip_ws();
        if (!parse_field_expr(f, depth + 1)) return false;
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != ')') return fail(pos_, "expected ')' after transformer argument");
        ++pos_;
        f.transformers.push_back(t);
        return true;
      }
      pos_ = save;
    }
    if (id.empty() || !std::isalpha(static_cast<unsigned char>(id[0])) || id.find('.') == std::string_view::npos ||
        id.back() == '.') {
      return fail(start, "expected a field name at '" + std::string(s_.substr(start, 20)) + "'");
    }
    f.name = std::string(id);
    pos_ += id.size();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      ++pos_;
      std::size_t a = pos_;
      if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
        std::string q;
        if (!parse_quoted(q)) return false;
        f.arg = q;
      } else {
        while (pos_ < s_.size() && s_[pos_] != ']') ++pos_;
        f.arg = std::string(s_.substr(a, pos_ - a));
      }
      if (pos_ >= s_.size() || s_[pos_] != ']') return fail(pos_, "expected ']' after field argument");
      ++pos_;
      f.has_arg = true;
    }
    return true;
  }

  bool parse_quoted(std::string& out) {
    char q = s_[pos_];
    std::size_t start = pos_;
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_];
      if (c == '\\' && pos_ + 1 < s_.size()) {
        std::string why;
        const std::size_t n = decode_escape(s_, pos_, out, why);
        if (n == 0) return fail(pos_, why);
        pos_ += n;
        continue;
      }
      out += c;
      ++pos_;
    }
    if (pos_ >= s_.size()) return fail(start, "unterminated quoted string");
    ++pos_;
    return true;
  }

  bool parse_list(Value& v, int depth) {
    if (depth > kMaxDepth) return fail(pos_, "expression nested too deeply");
    v.kind = Value::Kind::kList;
    ++pos_;  // '('
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ')') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_ws();
      // Falco tolerates empty elements left by an empty list's substitution.
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ')') {
        ++pos_;
        return true;
      }
      Value item;
      if (!parse_value(item, depth + 1, true)) return false;
      v.items.push_back(std::move(item));
      skip_ws();
      if (pos_ >= s_.size()) return fail(pos_, "unterminated list: expected ')'");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ')') {
        ++pos_;
        return true;
      }
      return fail(pos_, "expected ',' or ')' in list");
    }
  }

  bool parse_value(Value& v, int depth, bool in_list) {
    skip_ws();
    if (pos_ >= s_.size()) return fail(pos_, "expected a value");
    char c = s_[pos_];
    if (c == '(') {
      if (in_list) return fail(pos_, "nested lists are not allowed");
      return parse_list(v, depth);
    }
    if (c == '"' || c == '\'') {
      v.kind = Value::Kind::kString;
      return parse_quoted(v.text);
    }
    // val(field) and transformer(field) on the right-hand side.
    std::string_view id = peek_ident();
    if (!id.empty()) {
      std::size_t e = pos_ + id.size();
      Transformer t;
      if (e < s_.size() && s_[e] == '(' && (id == "val" || transformer_from_name(id, t))) {
        v.kind = Value::Kind::kField;
        if (id == "val") {
          pos_ = e + 1;
          skip_ws();
          if (!parse_field_expr(v.field, depth + 1)) return false;
          skip_ws();
          if (pos_ >= s_.size() || s_[pos_] != ')') return fail(pos_, "expected ')' after val(");
          ++pos_;
          return true;
        }
        return parse_field_expr(v.field, depth + 1);
      }
    }
    std::size_t start = pos_;
    while (pos_ < s_.size()) {
      char d = s_[pos_];
      if (std::isspace(static_cast<unsigned char>(d)) || d == '(' || d == ')' || d == ',' || d == '"' || d == '\'' ||
          d == '=') {
        break;
      }
      ++pos_;
    }
    if (pos_ == start) return fail(pos_, "expected a value at '" + std::string(s_.substr(pos_, 20)) + "'");
    v.kind = Value::Kind::kString;
    v.bare = true;
    v.text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  bool failed_ = false;
  ParseError err_;
};

}  // namespace

ParseResult parse_condition(std::string_view text) { return Parser(text).run(); }

bool parse_field_expr(std::string_view text, FieldExpr& out, std::string& error) {
  return Parser(text).field_only(out, error);
}

bool literal_item(std::string_view text, std::string& out, ParseError& error) {
  out.clear();
  const bool quoted = text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front();
  if (!quoted) {
    out = std::string(text);
    return true;
  }
  const std::string_view body = text.substr(1, text.size() - 2);
  std::size_t i = 0;
  while (i < body.size()) {
    if (body[i] == '\\' && i + 1 < body.size()) {
      const std::size_t n = decode_escape(body, i, out, error.message);
      if (n == 0) {
        error.offset = i + 1;
        return false;
      }
      i += n;
      continue;
    }
    out += body[i++];
  }
  return true;
}

std::string printable_text(std::string_view s) { return escaped_text(s, false); }

}  // namespace vigil::rules
