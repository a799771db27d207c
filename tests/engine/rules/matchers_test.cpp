// The string matchers compiled checks hold (engine/rules/matchers.h), against
// plain comparisons: LiteralSet (`in` lists and guard values), whose hash
// reads a value's tail with whole-word loads rather than byte by byte.
#include "engine/rules/matchers.h"

#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace vigil::rules
