// Falco 0.45's rule-language semantics (falcosecurity/falco#3942, which
// takes falcosecurity/libs#3051), case by case as Falco's change and its
// tests describe them:
//   - a quoted string takes \xHH, one byte (libs filter/escaping.cpp); a \x
//     without two hex digits fails the load;
//   - conditions compare the field's raw bytes, so a path holding byte 0xff
//     is matched by "\xff" (libs test/filterchecks/invalid_utf8.cpp);
//   - `regex` runs on the value with each ill-formed UTF-8 sequence replaced
//     by U+FFFD, which `.` matches; control characters stay as they are;
//   - \x00 is no string field's value;
// and a rule written for Falco 0.44 (engine 0.62.0) means what it meant.
#include <gtest/gtest.h>

#include "engine/rules/ruleset.h"
#include "engine/runtime/rule_test.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::fires;
using testing::World;

// The errors of a load, one per line.
std::string errors(const std::string& yaml) {
  auto r = testing::load_one(yaml);
  EXPECT_FALSE(r.ruleset);
  std::string s;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::kError) s += d.to_string() + "\n";
  }
  return s;
}

World exec_of(const std::string& comm, std::vector<std::string> args = {}) {
  World w;
  w.proc.comm = comm;
  w.proc.exe = comm;
  w.proc.exepath = "/usr/bin/" + comm;
  w.proc.args = std::move(args);
  w.exec();
  return w;
}

TEST(Falco045, HexEscapeIsOneByte) {
  EXPECT_TRUE(fires(exec_of("A"), R"(proc.name = "\x41")"));
  EXPECT_TRUE(fires(exec_of("A"), R"(proc.name = '\x41')"));
  const World py = exec_of("python3");
  EXPECT_TRUE(fires(py, R"(proc.name = "py\x74hon3")"));
  EXPECT_TRUE(fires(py, R"(proc.name = "pytho\x6E3")"));  // either case
  EXPECT_TRUE(fires(py, R"(proc.name = "pytho\x6e3")"));
  EXPECT_FALSE(fires(py, R"(proc.name = "\x50ython3")"));  // P
  // Exactly two digits: "\x413" is "A3".
  EXPECT_TRUE(fires(exec_of("A3"), R"(proc.name = "\x413")"));
  EXPECT_TRUE(fires(exec_of("A3"), R"(proc.name in ("x", "\x413"))"));
}

TEST(Falco045, ConditionsCompareTheRawBytes) {
  World w;
  w.open("/p\xff/q\xff");
  EXPECT_TRUE(fires(w, R"(fd.name = "/p\xff/q\xff")"));
  EXPECT_TRUE(fires(w, R"(fd.name contains "\xff")"));
  EXPECT_FALSE(fires(w, R"(fd.name contains "\xfe")"));
  EXPECT_TRUE(fires(w, R"(fd.name in ("/p\xff/q\xff"))"));
  EXPECT_TRUE(fires(w, R"(fd.directory contains "\xff")"));
  EXPECT_TRUE(fires(w, R"(fd.filename endswith "\xff")"));
  EXPECT_TRUE(fires(w, R"(fd.name glob "/p?/q?")"));  // `?` is one byte, even an invalid one
  EXPECT_TRUE(fires(w, R"(fd.name pmatch ("/p\xff"))"));
  // Only `regex` sees U+FFFD: the bytes themselves are not replaced.
  EXPECT_FALSE(fires(w, R"(fd.name contains "\xef\xbf\xbd")"));

  World bad = exec_of("bad\xff");
  EXPECT_TRUE(fires(bad, R"(proc.name contains "\xff")"));
  EXPECT_TRUE(fires(bad, R"(proc.name glob "bad?")"));
  EXPECT_TRUE(fires(bad, R"(proc.exepath endswith "\xff")"));
  EXPECT_FALSE(fires(bad, R"(proc.name contains "\xfe")"));

  // A control character is a byte like any other (Falco 0.44 compared a
  // copy where it was U+FFFD).
  World ctl = exec_of("tool", {"a\x01"
                               "b",
                               "tab\there"});
  EXPECT_TRUE(fires(ctl, R"(proc.cmdline = "tool a\x01b tab\there")"));
  EXPECT_TRUE(fires(ctl, R"(proc.args contains "\x09")"));
}

TEST(Falco045, ListItemsAndExceptionValuesTakeTheEscape) {
  World w;
  w.open("/p\xff/q\xff");
  // A quoted list item is a quoted string (Falco pastes it into the condition).
  const std::string list = "- list: odd_paths\n  items: ['\"/p\\xff/q\\xff\"', /etc/shadow]\n";
  EXPECT_TRUE(fires(w, "fd.name in (odd_paths)", list));
  // An exception's quoted value too: the rule is excepted for that path.
  const std::string excepted =
      "- rule: R\n  desc: d\n  priority: WARNING\n  output: o\n  condition: fd.name startswith /p\n"
      "  exceptions:\n    - name: odd\n      fields: [fd.name]\n      values: [['\"/p\\xff/q\\xff\"']]\n";
  auto r = testing::load_one(excepted);
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  EXPECT_TRUE(out.empty());
  w.open("/p/other");
  r.ruleset->evaluate(w.ctx(), out);
  EXPECT_EQ(out.size(), 1u);
}

TEST(Falco045, ABadEscapeFailsTheLoadAndSaysWhere) {
  EXPECT_EQ(errors(testing::rule_yaml(R"(proc.name = "\xZZ")")),
            "test.yaml:4:14: error E004: rule 'R': bad escape '\\xZZ': \\x takes two hex digits (\\x00 to \\xff)"
            " (at offset 13: 'proc.name = \"\\xZZ\"')\n");
  EXPECT_EQ(errors(testing::rule_yaml(R"(fd.name contains "/tmp/\x4")")),
            "test.yaml:4:14: error E004: rule 'R': bad escape '\\x4': \\x takes two hex digits (\\x00 to \\xff)"
            " (at offset 23: 'fd.name contains \"/tmp/\\x4\"')\n");
  EXPECT_EQ(errors(testing::rule_yaml(R"(proc.name in ('\x'))")),
            "test.yaml:4:14: error E004: rule 'R': bad escape '\\x': \\x takes two hex digits (\\x00 to \\xff)"
            " (at offset 15: 'proc.name in ('\\x')')\n");
  // In a list item, at the list; in an exception value, at the exception.
  EXPECT_EQ(errors(testing::rule_yaml("proc.name in (l)", "o", "- list: l\n  items: [ok, '\"\\xq1\"']\n")),
            "test.yaml:1:3: error E004: list 'l': item '\"\\xq1\"': bad escape '\\xq1': \\x takes two hex digits "
            "(\\x00 to \\xff)\n");
  EXPECT_EQ(errors("- rule: R\n  desc: d\n  priority: WARNING\n  output: o\n  condition: proc.name = x\n"
                   "  exceptions:\n    - name: e\n      fields: [proc.name]\n      values: [['\"\\x-1\"']]\n"),
            "test.yaml:7:7: error E004: rule 'R': exception 'e': item '\"\\x-1\"': bad escape '\\x-1': \\x takes "
            "two hex digits (\\x00 to \\xff)\n");
  // A bare word keeps its backslashes, as in Falco: no escape, no error.
  EXPECT_TRUE(fires(exec_of("tool", {"\\xZZ"}), R"(proc.cmdline contains \xZZ)"));
}

TEST(Falco045, RegexRunsOnTheTextWithInvalidBytesReplaced) {
  World w;
  w.open("/p\xff/q\xff");
  // Each invalid byte reads as U+FFFD, one character, which `.` matches.
  EXPECT_TRUE(fires(w, R"(fd.name regex "/p./q.")"));
  EXPECT_FALSE(fires(w, R"(fd.name regex "/p./q")"));
  EXPECT_TRUE(fires(w, R"(fd.name regex ".*")"));
  EXPECT_TRUE(fires(w, R"(fd.name regex "/p\xef\xbf\xbd/q\xef\xbf\xbd")"));  // U+FFFD's bytes
  EXPECT_TRUE(fires(w, R"(fd.name regex "/p\\x{FFFD}/q\\x{FFFD}")"));        // RE2's spelling
  EXPECT_TRUE(fires(w, "fd.name regex \"/p\xEF\xBF\xBD/q\xEF\xBF\xBD\""));   // the character itself
  // One U+FFFD per maximal subpart: a three-byte sequence cut short is one.
  w.open("/x\xE1\x80y");
  EXPECT_TRUE(fires(w, R"(fd.name regex "/x.y")"));
  EXPECT_FALSE(fires(w, R"(fd.name regex "/x..y")"));
  // Valid UTF-8 is left alone, control characters included.
  World ctl = exec_of(
      "a\x01"
      "b");
  EXPECT_TRUE(fires(ctl, R"(proc.name regex "a.b")"));
  EXPECT_TRUE(fires(ctl, R"(proc.name regex "a\x01b")"));
  World e = exec_of("caf\xC3\xA9");
  EXPECT_TRUE(fires(e, R"(proc.name regex "caf.")"));
}

TEST(Falco045, ARegexCannotHoldAnInvalidByte) {
  // Falco: "this escape sequence cannot be used in regular expressions".
  EXPECT_EQ(errors(testing::rule_yaml(R"(fd.name regex "/p\xff")")),
            "test.yaml:4:14: error E011: rule 'R': bad regular expression '/p\\xff': invalid UTF-8 (\\x80 to \\xff "
            "are bytes, not characters: the text a regex runs on has U+FFFD for each invalid byte, which '.' "
            "matches)\n");
}

TEST(Falco045, NulIsNoStringValue) {
  EXPECT_EQ(errors(testing::rule_yaml(R"(proc.name contains "a\x00b")")),
            "test.yaml:4:14: error E006: rule 'R': 'a\\x00b' holds a NUL byte (\\x00), which no value of string "
            "field 'proc.name' can hold\n");
  // Bytes are found with bcontains, and Falco's own byte buffer field is one
  // vigil does not have: that rule is skipped, not an error.
  EXPECT_TRUE(testing::load_one(testing::rule_yaml("conn.payload bcontains 00")).ruleset);
  auto r = testing::load_one(testing::rule_yaml(R"(evt.type = read and evt.buffer = "a\x00b")"));
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
  EXPECT_EQ(r.skipped, 1u);
}

TEST(Falco045, RulesWrittenFor044KeepTheirMeaning) {
  // Falco 0.44 (engine 0.62.0) had every escape but \x, which failed its
  // load: a 0.44 rule spells a backslash \\, and a bare word keeps it.
  World w = exec_of("printf", {"\\x41\\n", "say \"hi\""});
  for (const char* version : {"0.62.0", "0.63.0"}) {
    const std::string head = std::string("- required_engine_version: ") + version + "\n";
    EXPECT_TRUE(fires(w, R"(proc.cmdline = "printf \\x41\\n say \"hi\"")", head)) << version;
    EXPECT_TRUE(fires(w, R"(proc.cmdline contains '\\x41')", head)) << version;
    EXPECT_TRUE(fires(w, R"(proc.cmdline contains \x41)", head)) << version;
    EXPECT_TRUE(fires(w, R"(proc.args contains "say \"hi\"")", head)) << version;
    EXPECT_TRUE(fires(w, R"(proc.name regex "pr[a-z]+f" and proc.cmdline regex ".*\\\\x41.*")", head)) << version;
    EXPECT_TRUE(fires(w, R"(proc.name in (printf, "sh -c"))", head)) << version;
    // What 0.45 added: "\x41" is the byte, so the text \x41 does not hold it.
    EXPECT_FALSE(fires(w, R"(proc.cmdline contains "\x41")", head)) << version;
  }
}

TEST(Falco045, RuleTestFilesSpellTheEscape) {
  // `vigil rules test` over rules that use \xHH (YAML holds text, so these
  // are printable and control characters; invalid bytes are tested above).
  auto rep = runtime::run_rule_tests({"tests/engine/rules/fixtures/falco045_test.yaml"});
  EXPECT_TRUE(rep.problems.empty()) << (rep.problems.empty() ? "" : rep.problems[0].to_string());
  for (const auto& f : rep.failures) ADD_FAILURE() << f.to_string();
  EXPECT_EQ(rep.passed, 4u);
  EXPECT_EQ(rep.exit_code(), 0);
}

}  // namespace
}  // namespace vigil::rules
