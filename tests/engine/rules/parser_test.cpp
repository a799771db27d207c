// The condition parser: grammar, precedence, operators, values, field
// arguments, transformers, and syntax errors with their offsets.
#include <gtest/gtest.h>

#include "engine/rules/ast.h"

namespace vigil::rules {
namespace {

std::string canon(const std::string& cond) {
  auto r = parse_condition(cond);
  EXPECT_TRUE(r.ok()) << cond << ": " << r.error.message;
  return r.ok() ? r.root->to_string() : "";
}

ParseError err(const std::string& cond) {
  auto r = parse_condition(cond);
  EXPECT_FALSE(r.ok()) << cond;
  return r.error;
}

TEST(Parser, AndBindsTighterThanOr) {
  EXPECT_EQ(canon("a or b and c"), "(a or (b and c))");
  EXPECT_EQ(canon("a and b or c"), "((a and b) or c)");
  EXPECT_EQ(canon("a or b or c"), "(a or b or c)");
}

TEST(Parser, NotBindsTighterThanAnd) {
  EXPECT_EQ(canon("not a and b"), "(not a and b)");
  EXPECT_EQ(canon("not not a"), "not not a");
  EXPECT_EQ(canon("not (a and b)"), "not (a and b)");
  EXPECT_EQ(canon("a and not b or c"), "((a and not b) or c)");
}

TEST(Parser, ParenthesesGroup) {
  EXPECT_EQ(canon("(a or b) and c"), "((a or b) and c)");
  EXPECT_EQ(canon("((a))"), "a");
}

TEST(Parser, EveryComparisonOperator) {
  EXPECT_EQ(canon("proc.name = bash"), "proc.name = bash");
  EXPECT_EQ(canon("proc.name == bash"), "proc.name = bash");
  EXPECT_EQ(canon("proc.name != bash"), "proc.name != bash");
  EXPECT_EQ(canon("proc.pid < 5"), "proc.pid < 5");
  EXPECT_EQ(canon("proc.pid <= 5"), "proc.pid <= 5");
  EXPECT_EQ(canon("proc.pid > 5"), "proc.pid > 5");
  EXPECT_EQ(canon("proc.pid >= 5"), "proc.pid >= 5");
  for (const char* op :
       {"contains", "icontains", "bcontains", "startswith", "bstartswith", "endswith", "glob", "iglob", "regex"}) {
    EXPECT_EQ(canon(std::string("proc.name ") + op + " x"), std::string("proc.name ") + op + " x");
  }
  EXPECT_EQ(canon("proc.name in (a, b)"), "proc.name in (a, b)");
  EXPECT_EQ(canon("proc.name intersects (a)"), "proc.name intersects (a)");
  EXPECT_EQ(canon("fd.name pmatch (/etc, /usr)"), "fd.name pmatch (/etc, /usr)");
  EXPECT_EQ(canon("proc.name exists"), "proc.name exists");
}

TEST(Parser, OperatorsNeedNoSpaces) {
  EXPECT_EQ(canon("proc.pid>=5 and proc.name=bash"), "(proc.pid >= 5 and proc.name = bash)");
  EXPECT_EQ(canon("fd.name!=/etc"), "fd.name != /etc");
}

TEST(Parser, WordOperatorsAreWholeWords) {
  // "inside" is a bare value, not the operator "in" followed by "side".
  EXPECT_EQ(err("proc.name inside").message, "expected an operator after 'proc.name'");
}

TEST(Parser, QuotedValuesAndEscapes) {
  EXPECT_EQ(canon("proc.cmdline contains \"a b\""), "proc.cmdline contains \"a b\"");
  // Two adjacent quoted strings are not one value.
  EXPECT_EQ(err("proc.name = 'it''s'").message, "unexpected ''s''");
}

TEST(Parser, EscapesInsideQuotes) {
  auto r = parse_condition(R"(proc.cmdline = "a\"b\\c")");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.root->value.text, "a\"b\\c");
}

// The value a condition's single check compares with.
std::string value_of(const std::string& cond) {
  auto r = parse_condition(cond);
  EXPECT_TRUE(r.ok()) << cond << ": " << r.error.message;
  return r.ok() ? r.root->value.text : "";
}

TEST(Parser, HexEscapesAreBytes) {
  // Falco 0.45: \xHH is one byte, two hex digits of either case.
  EXPECT_EQ(value_of(R"(proc.name = "\x41\x62c")"), "Abc");
  EXPECT_EQ(value_of(R"(proc.name = '\xff\xFE')"), "\xff\xfe");
  EXPECT_EQ(value_of(R"(proc.name = "\x413")"), "A3");
  EXPECT_EQ(value_of(R"(proc.name = "a\x00b")"), std::string("a\0b", 3));  // the compiler refuses it
  EXPECT_EQ(value_of(R"(proc.name = "a\/b")"), "a/b");                     // Falco's \/
  // Escapes Falco does not know stay as written (for a regex), and a bare
  // word has no escapes.
  EXPECT_EQ(value_of(R"(proc.name = "\d+\.")"), "\\d+\\.");
  EXPECT_EQ(value_of(R"(proc.name = \x41)"), "\\x41");
}

TEST(Parser, BadHexEscapeNamesItsOffset) {
  auto e = err(R"(proc.name = "ab\xg1")");
  EXPECT_EQ(e.offset, 15u);
  EXPECT_EQ(e.message, "bad escape '\\xg1': \\x takes two hex digits (\\x00 to \\xff)");
  EXPECT_EQ(err(R"(proc.name = "\x")").message, "bad escape '\\x': \\x takes two hex digits (\\x00 to \\xff)");
  EXPECT_EQ(err(R"(proc.name in ("ok", '\x4'))").offset, 21u);
  EXPECT_EQ(err(R"(proc.aname["\xZ"] = x)").offset, 12u);
}

TEST(Parser, CanonicalTextWritesBytesAsEscapes) {
  // Control characters and invalid UTF-8 print as \xHH; the text parses back
  // to the same bytes. Valid UTF-8 stays as it is.
  const std::string c = canon(R"(fd.name = "/p\xff\x01\t")");
  EXPECT_EQ(c, R"(fd.name = "/p\xff\x01\x09")");
  EXPECT_EQ(value_of(c), "/p\xff\x01\t");
  EXPECT_EQ(canon("fd.name = /caf\xC3\xA9"), "fd.name = /caf\xC3\xA9");
}

TEST(Parser, ListsWithQuotedAndBareItems) {
  auto r = parse_condition("proc.name in (bash, \"my shell\", 'x', 42)");
  ASSERT_TRUE(r.ok());
  const auto& items = r.root->value.items;
  ASSERT_EQ(items.size(), 4u);
  EXPECT_TRUE(items[0].bare);
  EXPECT_EQ(items[1].text, "my shell");
  EXPECT_FALSE(items[1].bare);
  EXPECT_EQ(items[3].text, "42");
}

TEST(Parser, EmptyListAndEmptyElements) {
  EXPECT_EQ(canon("proc.name in ()"), "proc.name in ()");
  EXPECT_EQ(canon("proc.name in (a, , b,)"), "proc.name in (a, b)");
}

TEST(Parser, FieldArguments) {
  EXPECT_EQ(canon("proc.aname[2] = bash"), "proc.aname[2] = bash");
  EXPECT_EQ(canon("k8s.pod.label[app] = web"), "k8s.pod.label[app] = web");
  EXPECT_EQ(canon("k8s.pod.label.app = web"), "k8s.pod.label.app = web");
  auto r = parse_condition("k8s.pod.label[\"app.kubernetes.io/name\"] = web");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.root->field.arg, "app.kubernetes.io/name");
}

TEST(Parser, Transformers) {
  EXPECT_EQ(canon("tolower(proc.name) = bash"), "tolower(proc.name) = bash");
  EXPECT_EQ(canon("toupper(tolower(proc.name)) = BASH"), "toupper(tolower(proc.name)) = BASH");
  EXPECT_EQ(canon("len(proc.args) > 3"), "len(proc.args) > 3");
  EXPECT_EQ(canon("b64(proc.args) contains x"), "b64(proc.args) contains x");
  EXPECT_EQ(canon("basename(proc.exepath) = sh"), "basename(proc.exepath) = sh");
  auto r = parse_condition("toupper(tolower(proc.name)) = x");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.root->field.transformers.size(), 2u);
  EXPECT_EQ(r.root->field.transformers[0], Transformer::kToLower);  // innermost first
}

TEST(Parser, FieldToFieldComparisons) {
  EXPECT_EQ(canon("proc.name = val(proc.pname)"), "proc.name = val(proc.pname)");
  EXPECT_EQ(canon("proc.name = toupper(proc.pname)"), "proc.name = toupper(proc.pname)");
}

TEST(Parser, Modifiers) {
  EXPECT_EQ(canon("proc.name startswith anyof (x, y)"), "proc.name startswith anyof (x, y)");
  EXPECT_EQ(canon("proc.name contains allof (x, y)"), "proc.name contains allof (x, y)");
  EXPECT_EQ(canon("proc.name endswith oneof (x, y)"), "proc.name endswith oneof (x, y)");
}

TEST(Parser, MacroReferences) {
  auto r = parse_condition("spawned_process and not user_known_thing");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.root->children[0]->kind, Node::Kind::kMacro);
  EXPECT_EQ(r.root->children[0]->macro, "spawned_process");
}

TEST(Parser, SyntaxErrorsNameTheOffset) {
  EXPECT_EQ(err("proc.name = ").message, "expected a value");
  auto e = err("proc.name = bash and");
  EXPECT_EQ(e.message, "unexpected end of condition");
  EXPECT_EQ(e.offset, 20u);
  EXPECT_EQ(err("(proc.name = bash").message, "expected ')'");
  EXPECT_EQ(err("proc.name in bash").message, "expected '(' after 'in'");
  EXPECT_EQ(err("proc.name in (a, (b))").message, "nested lists are not allowed");
  EXPECT_EQ(err("proc.name = \"open").message, "unterminated quoted string");
  EXPECT_EQ(err("proc.name = a b").message, "unexpected 'b'");
  EXPECT_EQ(err("and").message, "unexpected 'and'");
  EXPECT_EQ(err("proc.aname[2 = x").message, "expected ']' after field argument");
  EXPECT_EQ(err("").message, "unexpected end of condition");
}

TEST(Parser, DeepNestingIsRejectedNotACrash) {
  std::string deep(100000, '(');
  EXPECT_EQ(err(deep + "a").message, "expression nested too deeply");
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_EQ(err(nots + "a").message, "expression nested too deeply");
}

TEST(Parser, FieldExprOnItsOwn) {
  FieldExpr f;
  std::string e;
  ASSERT_TRUE(parse_field_expr("proc.aname[3]", f, e));
  EXPECT_EQ(f.name, "proc.aname");
  EXPECT_EQ(f.arg, "3");
  EXPECT_FALSE(parse_field_expr("proc.name x", f, e));
  EXPECT_FALSE(parse_field_expr("noname", f, e));
}

}  // namespace
}  // namespace vigil::rules
