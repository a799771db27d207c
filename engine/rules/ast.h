// The condition language: Falco's filter grammar, parsed into a plain AST.
//
// Grammar (EBNF; keywords are case-sensitive, as in Falco):
//
//   Expr        ::= OrExpr
//   OrExpr      ::= AndExpr ('or' AndExpr)*
//   AndExpr     ::= NotExpr ('and' NotExpr)*
//   NotExpr     ::= 'not' NotExpr | Primary
//   Primary     ::= '(' Expr ')' | Check | MacroName
//   Check       ::= FieldExpr 'exists'
//                 | FieldExpr CmpOp [Modifier] Value
//                 | FieldExpr ListOp ListValue
//   FieldExpr   ::= FieldName ['[' Arg ']'] | Transformer '(' FieldExpr ')'
//   Transformer ::= 'tolower' | 'toupper' | 'b64' | 'basename' | 'len'
//   CmpOp       ::= '=' | '==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'icontains'
//                 | 'bcontains' | 'startswith' | 'bstartswith' | 'endswith' | 'glob'
//                 | 'iglob' | 'regex'
//   ListOp      ::= 'in' | 'intersects' | 'pmatch'
//   Modifier    ::= 'anyof' | 'allof' | 'oneof'          (followed by a ListValue)
//   Value       ::= BareString | QuotedString | ListValue | 'val' '(' FieldExpr ')'
//                 | Transformer '(' FieldExpr ')'
//   ListValue   ::= '(' [ Value (',' Value)* ] ')'
//   QuotedString ::= '"' ... '"' | "'" ... "'"  with the escapes \" \' \\ \/ \b \f \n
//                 \r \t and \xHH (one byte, two hex digits: Falco 0.45); any other
//                 backslash stays as written
//   FieldName   ::= [a-zA-Z][a-zA-Z0-9_]* ('.' [a-zA-Z0-9_]+)+
//   MacroName   ::= [a-zA-Z_][a-zA-Z0-9_]*
//   BareString  ::= [^()"'\s=,]+  (a bare identifier inside a list may name a list)
//
// Precedence, lowest first: or, and, not. Nesting is limited (kMaxDepth) so
// hostile input cannot exhaust the stack.
//
// Thread-safety: values; parse() is pure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/util/result.h"

namespace vigil::rules {

enum class Op : std::uint8_t {
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kContains,
  kIContains,
  kBContains,
  kStartsWith,
  kBStartsWith,
  kEndsWith,
  kGlob,
  kIGlob,
  kRegex,
  kIn,
  kIntersects,
  kPMatch,
  kExists,
};
std::string_view op_name(Op op);
bool op_takes_list(Op op);  // in, intersects, pmatch
// The binary operators spelled as words (contains ... pmatch; not exists), as
// conditions and exceptions' comps write them.
bool op_from_word(std::string_view word, Op& op);

enum class Modifier : std::uint8_t { kNone, kAnyOf, kAllOf, kOneOf };

enum class Transformer : std::uint8_t { kToLower, kToUpper, kB64, kBasename, kLen };
std::string_view transformer_name(Transformer t);

// A field reference with optional argument and transformers (innermost first: toupper(tolower(f)) is {tolower, toupper}).
struct FieldExpr {
  std::string name;
  std::string arg;  // "" when none
  bool has_arg = false;
  std::vector<Transformer> transformers;  // innermost first
  std::string to_string() const;
};

struct Value {
  enum class Kind : std::uint8_t { kString, kList, kField };
  Kind kind = Kind::kString;
  std::string text;          // kString
  bool bare = false;         // kString: unquoted (may name a list inside a list value)
  std::vector<Value> items;  // kList
  FieldExpr field;           // kField (val(...) or a transformer)
  std::string to_string() const;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  enum class Kind : std::uint8_t { kAnd, kOr, kNot, kCheck, kMacro, kBool };
  Kind kind = Kind::kCheck;
  std::vector<NodePtr> children;  // and/or: 2+, not: 1
  // kCheck
  FieldExpr field;
  Op op = Op::kEq;
  Modifier modifier = Modifier::kNone;
  Value value;
  // kMacro
  std::string macro;
  // kBool (produced by the compiler, e.g. an empty exception list)
  bool bool_value = false;
  std::size_t offset = 0;  // byte offset in the condition text

  NodePtr clone() const;
  // Canonical text: fully parenthesised, used by golden tests.
  std::string to_string() const;
};

inline constexpr int kMaxDepth = 500;

struct ParseError {
  std::size_t offset = 0;
  std::string message;
};

// Parses a condition. On failure the error names the offset of the problem.
struct ParseResult {
  NodePtr root;  // null on error
  ParseError error;
  bool ok() const { return root != nullptr; }
};
ParseResult parse_condition(std::string_view text);

// A list item or an exception value as its YAML gives it: when the whole
// text is quoted ('"sh -c x"'), the text between the quotes with its escapes
// decoded as in a condition; otherwise the text as written (a bare word keeps
// its backslashes, as in Falco). False, with `error` (its offset into text),
// for a \x that two hex digits do not follow.
bool literal_item(std::string_view text, std::string& out, ParseError& error);

// Text for a diagnostic: s with control characters and the bytes of
// ill-formed UTF-8 written as \xHH.
std::string printable_text(std::string_view s);

// Parses a single field expression (for output tokens and exception fields):
// "proc.name", "proc.aname[2]", "toupper(proc.name)". Rejects trailing text.
bool parse_field_expr(std::string_view text, FieldExpr& out, std::string& error);

}  // namespace vigil::rules
