// UTF-8 checks: where the first ill-formed sequence is, and how ill-formed
// sequences are replaced (one U+FFFD per maximal subpart, Unicode §3.9), as
// the rule engine prepares a value for `regex`.
#include "engine/util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil::util {
namespace {

std::string replaced(std::string_view s) {
  std::string out;
  append_utf8_replacing(out, s);
  return out;
}

constexpr const char* R = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8, WellFormedTextIsUntouched) {
  for (std::string_view s : {"", "plain ascii", "h\xC3\xA9llo", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}) {
    EXPECT_TRUE(utf8_valid(s)) << s;
    EXPECT_EQ(replaced(s), s);
  }
}

TEST(Utf8, ControlCharactersAndNoncharactersAreWellFormed) {
  // Only ill-formed sequences are replaced: C0 controls, DEL, C1 controls
  // (U+0085 is C2 85) and noncharacters (U+FDD0, U+FFFF, U+1FFFE) stay.
  for (std::string_view s : {"a\x01\x1F\x7F"
                             "b",
                             "\xC2\x85", "\xEF\xB7\x90", "\xEF\xBF\xBF", "\xF0\x9F\xBF\xBE", "tab\tnew\nline"}) {
    EXPECT_TRUE(utf8_valid(s));
    EXPECT_EQ(replaced(s), s);
  }
}

TEST(Utf8, FirstInvalidIsTheOffsetOfTheBadSequence) {
  EXPECT_EQ(utf8_first_invalid("hello\xFFworld"), 5u);
  // Past the eight-byte ASCII steps, and right after a multibyte character.
  EXPECT_EQ(utf8_first_invalid("0123456789abcdefghij\xFF"), 20u);
  EXPECT_EQ(utf8_first_invalid("\xC3\xA9\x80"), 2u);
  EXPECT_EQ(utf8_first_invalid("ends cut short \xE2\x82"), 15u);
}

TEST(Utf8, EachBadByteThatStartsNothingIsOneReplacement) {
  EXPECT_EQ(replaced("/p\xFF/q\xFF"), std::string("/p") + R + "/q" + R);
  EXPECT_EQ(replaced("\xFF\xFE"), std::string(R) + R);
  EXPECT_EQ(replaced("\x80\xBF"), std::string(R) + R);  // lone continuation bytes
}

TEST(Utf8, ACutShortSequenceIsOneReplacement) {
  EXPECT_EQ(replaced("x\xE1\x80y"), std::string("x") + R + "y");
  EXPECT_EQ(replaced("x\xE1y"), std::string("x") + R + "y");
  EXPECT_EQ(replaced("ab\xF0\x9F\x98"), std::string("ab") + R);  // at the end
}

TEST(Utf8, OverlongsSurrogatesAndOutOfRangeAreReplacedBytewise) {
  // No well-formed sequence starts with C0, or continues E0 with 80-9F, ED
  // with A0-BF or F4 with 90-BF: each byte is its own maximal subpart.
  EXPECT_EQ(replaced("\xC0\xAF"), std::string(R) + R);
  EXPECT_EQ(replaced("\xE0\x80\xAF"), std::string(R) + R + R);
  EXPECT_EQ(replaced("\xED\xA0\x80"), std::string(R) + R + R);
  EXPECT_EQ(replaced("\xF4\x90\x80\x80"), std::string(R) + R + R + R);
  EXPECT_EQ(replaced("\xF5"), std::string(R));
}

TEST(Utf8, UnicodeStandardExample) {
  // The example of Unicode §3.9 (table 3-8): six replacements.
  EXPECT_EQ(replaced("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            std::string("a") + R + R + R + "b" + R + "c" + R + R + "d");
}

}  // namespace
}  // namespace vigil::util
