// The string matchers compiled checks hold (engine/rules/matchers.h), against
// plain comparisons: LiteralSet (`in` lists and guard values), whose hash
// reads a value's tail with whole-word loads rather than byte by byte, and
// LiteralMatcher (anyof contains/icontains/startswith/endswith), whose
// `contains` scans run as an Aho-Corasick automaton when it is small enough
// and walk the literal trie otherwise; and LiteralScan, several contains
// and icontains sets found in one scan.
#include "engine/rules/matchers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vigil::rules {
namespace {

// Members of every length from 0 to 40 are found, and a value that differs
// from one in a single byte (at any position, the tail included) or in its
// length is not.
TEST(LiteralSet, FindsMembersOfEveryLengthAndNothingElse) {
  std::vector<std::string> members;
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string m;
    for (std::size_t i = 0; i < n; ++i) m += static_cast<char>('a' + (i * 7 + n) % 26);
    members.push_back(m);
  }
  LiteralSet set;
  set.build(members);
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::string& m = members[k];
    EXPECT_EQ(set.find(m), static_cast<std::int32_t>(k)) << m;
    for (std::size_t i = 0; i < m.size(); ++i) {
      std::string near = m;
      near[i] = static_cast<char>(near[i] == 'Z' ? 'Y' : 'Z');
      EXPECT_FALSE(set.contains(near)) << near;
    }
    EXPECT_FALSE(set.contains(m + "!")) << m;
  }
  // Views into a larger buffer: only the view's bytes count.
  std::string buf = members[13] + "tail";
  EXPECT_TRUE(set.contains(std::string_view(buf).substr(0, 13)));
}

// Random members and random probes, against std::set semantics.
TEST(LiteralSet, AgreesWithAPlainSetOnRandomStrings) {
  std::mt19937 rng(7);
  auto word = [&] {
    std::string s(rng() % 20, 'x');
    for (auto& c : s) c = static_cast<char>('a' + rng() % 3);
    return s;
  };
  std::vector<std::string> members;
  for (int i = 0; i < 300; ++i) members.push_back(word());
  LiteralSet set;
  set.build(members);
  for (int i = 0; i < 20000; ++i) {
    std::string w = word();
    bool in = std::find(members.begin(), members.end(), w) != members.end();
    EXPECT_EQ(set.contains(w), in) << w;
  }
}

// find_lower(s) is find(tolower(s)) for random mixed-case values of every
// length, with members in lower case, and never finds a member with an
// upper-case letter.
TEST(LiteralSet, FindLowerIsFindOfTheLowerCasedValue) {
  std::mt19937 rng(3);
  auto word = [&](const char* alphabet) {
    std::string s(rng() % 20, 'x');
    const std::size_t k = std::strlen(alphabet);
    for (auto& c : s) c = alphabet[rng() % k];
    return s;
  };
  std::vector<std::string> members;
  for (int i = 0; i < 200; ++i) members.push_back(word("ab-z@["));
  members.push_back("Upper");
  LiteralSet set;
  set.build(members);
  for (int i = 0; i < 20000; ++i) {
    std::string v = word("abAB-zZ@[");
    std::string low = v;
    for (auto& c : low) c = lower(c);
    EXPECT_EQ(set.find_lower(v), set.find(low)) << v;
  }
  EXPECT_EQ(set.find_lower("Upper"), -1);
  EXPECT_EQ(set.find_lower("UPPER"), -1);
}

bool naive(const std::vector<std::string>& lits, Op op, std::string_view v) {
  std::string low(v);
  for (auto& c : low) c = lower(c);
  for (const auto& l : lits) {
    switch (op) {
      case Op::kContains:
        if (v.find(l) != std::string_view::npos) return true;
        break;
      case Op::kIContains:
        if (std::string_view(low).find(l) != std::string_view::npos) return true;
        break;
      case Op::kStartsWith:
        if (starts_with(v, l)) return true;
        break;
      case Op::kEndsWith:
        if (ends_with(v, l)) return true;
        break;
      default: break;
    }
  }
  return false;
}

// Random literal sets over a small alphabet (so literals overlap, nest and
// share prefixes and suffixes) against one comparison per literal, for
// every mode; icontains literals are lower case, as the compiler makes them.
TEST(LiteralMatcher, AgreesWithOneComparisonPerLiteral) {
  std::mt19937 rng(11);
  const std::string alphabet = "abAB -/";
  auto word = [&](std::size_t max) {
    std::string s(rng() % (max + 1), 'x');
    for (auto& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (Op op : {Op::kContains, Op::kIContains, Op::kStartsWith, Op::kEndsWith}) {
    for (int set = 0; set < 200; ++set) {
      std::vector<std::string> lits;
      const int k = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < k; ++i) {
        std::string l = word(5);
        if (l.empty()) l = "a";  // an empty literal matches everything; tested below
        if (op == Op::kIContains)
          for (auto& c : l) c = lower(c);
        lits.push_back(l);
      }
      LiteralMatcher m(lits, op);
      for (int i = 0; i < 200; ++i) {
        std::string v = word(24);
        ASSERT_EQ(m.match(v), naive(lits, op, v)) << "op " << static_cast<int>(op) << " value '" << v
                                                  << "' first literal '" << lits[0] << "' of " << lits.size();
      }
    }
  }
}

// A literal set too large for the automaton (the scan walks the trie) gives
// the same answers.
TEST(LiteralMatcher, LargeSetsWithoutTheAutomatonAgreeToo) {
  std::mt19937 rng(5);
  auto word = [&](std::size_t len) {
    std::string s(len, 'x');
    for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
    return s;
  };
  std::vector<std::string> lits;
  for (int i = 0; i < 3000; ++i) lits.push_back(word(4 + rng() % 6));
  for (Op op : {Op::kContains, Op::kIContains}) {
    LiteralMatcher m(lits, op);
    for (int i = 0; i < 3000; ++i) {
      std::string v = word(rng() % 40);
      if (i % 3 == 0) v += lits[rng() % lits.size()] + word(3);
      ASSERT_EQ(m.match(v), naive(lits, op, v)) << v;
    }
  }
}

// `contains` scans: a literal inside another, a match that starts inside an
// unfinished longer literal, case folding of the input, a match at the very
// end, and an empty literal.
TEST(LiteralMatcher, ContainsScanEdgeCases) {
  LiteralMatcher m({"abcd", "bc", "xbcy"}, Op::kContains);
  EXPECT_TRUE(m.match("xxabcx"));  // "bc" inside an unfinished "abcd"
  EXPECT_TRUE(m.match("xbc"));     // "bc" at the end, inside an unfinished "xbcy"
  EXPECT_FALSE(m.match("abxcd b c"));
  LiteralMatcher i({"stratum+tcp://", "xmr"}, Op::kIContains);
  EXPECT_TRUE(i.match("run --url STRATUM+TCP://pool"));
  EXPECT_TRUE(i.match("sstratum+tcp://"));
  EXPECT_TRUE(i.match("XmR"));
  EXPECT_FALSE(i.match("stratum+tcp:/ xm r"));
  LiteralMatcher e({"", "zz"}, Op::kContains);
  EXPECT_TRUE(e.match(""));
  EXPECT_TRUE(e.match("abc"));
}

// ---------------------------------------------------------------- LiteralScan

// What LiteralScan::scan must give with no early stop: the sets with a
// literal in v, each as its own LiteralMatcher finds it.
std::uint32_t separate(const std::vector<LiteralScan::Set>& sets, std::string_view v) {
  std::uint32_t m = 0;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    LiteralMatcher one(sets[k].lits, sets[k].icase ? Op::kIContains : Op::kContains);
    if (one.match(v)) m |= 1u << k;
  }
  return m;
}

// Random sets over a small alphabet (literals overlap, nest, share prefixes
// and suffixes, and one set's literal is another's in another case),
// case-sensitive and icase sets mixed (icase literals lower case, as the
// compiler makes them, and now and then one with an upper-case letter,
// which neither finds), against one LiteralMatcher per set; with an early
// stop, a set found is found by its matcher too, and the scan gives every
// set unless it found one in `stop`.
TEST(LiteralScan, FindsEachSetAsItsOwnMatcherDoes) {
  std::mt19937 rng(23);
  const std::string alphabet = "abAB -+/";
  auto word = [&](std::size_t max) {
    std::string s(rng() % (max + 1), 'x');
    for (auto& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int round = 0; round < 400; ++round) {
    std::vector<LiteralScan::Set> sets(1 + rng() % 5);
    for (auto& set : sets) {
      set.icase = rng() % 2;
      const int k = 1 + static_cast<int>(rng() % 5);
      for (int i = 0; i < k; ++i) {
        std::string l = word(5);
        if (l.empty()) l = "a";
        if (set.icase && rng() % 8 != 0)
          for (auto& c : l) c = lower(c);
        set.lits.push_back(l);
      }
    }
    LiteralScan scan(sets);
    ASSERT_TRUE(scan.ok());
    const auto all = static_cast<std::uint32_t>((std::uint64_t{1} << sets.size()) - 1);
    for (int i = 0; i < 100; ++i) {
      std::string v = word(i % 10 == 0 ? 300 : 30);
      const std::uint32_t want = separate(sets, v);
      ASSERT_EQ(scan.scan(v, 0), want) << "value '" << v << "' round " << round;
      const std::uint32_t stop = static_cast<std::uint32_t>(rng()) & all;
      const std::uint32_t got = scan.scan(v, stop);
      ASSERT_EQ(got & ~want, 0u) << v;
      if ((got & stop) == 0) {
        ASSERT_EQ(got, want) << v;
      }
    }
  }
}

// Overlapping literals of different sets ending at one place, a
// case-sensitive literal found only in its own case (also where the folded
// automaton sees it), literals without letters (no check needed), matches
// at the very start and end, and empty and very long values.
TEST(LiteralScan, EdgeCases) {
  LiteralScan s({{{"stratum+tcp://", "xmr"}, true},  // 0: icontains
                 {{" --Donate", " -a "}, false},     // 1: contains
                 {{"tcp://", "--donate"}, true},     // 2: icontains (as a prefilter is)
                 {{"+tcp", "://"}, false}});         // 3: contains; "://" has no letter to check
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.scan("", 0), 0u);
  EXPECT_EQ(s.scan("x", 0), 0u);
  EXPECT_EQ(s.scan("STRATUM+TCP://pool", 0), 0b1101u);  // set 3 by "://", not by "+TCP"
  EXPECT_EQ(s.scan("STRATUM+TCP:/pool", 0), 0u);
  EXPECT_EQ(s.scan("Stratum+tcp:pool", 0), 0b1000u);  // "+tcp" as written
  EXPECT_EQ(s.scan("miner --Donate 1", 0), 0b0110u);
  EXPECT_EQ(s.scan("miner --donate 1", 0), 0b0100u);  // set 1 wants "--Donate" as written
  EXPECT_EQ(s.scan("miner --DONATE", 0), 0b0100u);
  EXPECT_EQ(s.scan("x -a y", 0), 0b0010u);
  EXPECT_EQ(s.scan("x -A y", 0), 0u);
  EXPECT_EQ(s.scan(" -a x", 0), 0b0010u);  // at the very start
  EXPECT_EQ(s.scan("x -a", 0), 0u);        // " -a " needs its space
  EXPECT_EQ(s.scan("XMR", 0), 0b0001u);
  // A long value with the literal only at its end, and one without any.
  std::string lng(100000, 'q');
  EXPECT_EQ(s.scan(lng, 0), 0u);
  EXPECT_EQ(s.scan(lng + "xMr", 0), 0b0001u);
  EXPECT_EQ(s.scan("xmr" + lng, 0), 0b0001u);
  // An early stop: set 0 found first ends the scan.
  EXPECT_EQ(s.scan("xmr --Donate", 0b0001u), 0b0001u);
  EXPECT_EQ(s.scan("xmr --Donate", 0), 0b0111u);
}

// No sets, a set without literals or with an empty one (which every value
// holds), more than kMaxSets sets, or an automaton over kMaxDfa entries: not
// built (the checks stay separate).
TEST(LiteralScan, RefusesWhatItCannotStandFor) {
  EXPECT_FALSE(LiteralScan({}).ok());
  EXPECT_FALSE(LiteralScan({{{"a"}, false}, {{}, true}}).ok());
  EXPECT_FALSE(LiteralScan({{{"a", ""}, false}, {{"b"}, true}}).ok());
  std::vector<LiteralScan::Set> many(LiteralScan::kMaxSets + 1, LiteralScan::Set{{"a"}, false});
  EXPECT_FALSE(LiteralScan(many).ok());
  many.pop_back();
  EXPECT_TRUE(LiteralScan(many).ok());
  std::mt19937 rng(3);
  LiteralScan::Set big;
  for (int i = 0; i < 2000; ++i) {
    std::string l(12, 'x');
    for (auto& c : l) c = static_cast<char>('a' + rng() % 26);
    big.lits.push_back(l);
  }
  EXPECT_FALSE(LiteralScan({big, {{"b"}, true}}).ok());
}

}  // namespace
}  // namespace vigil::rules
