#include "engine/util/yaml_canonical.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(CanonicalYaml, KeyOrderQuotingAndLayoutDoNotCount) {
  EXPECT_EQ(canonical_yaml(YAML::Load("{b: 1, a: '2', c: [x, {d: e}]}")),
            canonical_yaml(YAML::Load("# a comment\na: \"2\"\nc:\n  - x\n  - d: e\nb: 1\n")));
}

TEST(CanonicalYaml, ValuesOrderOfListsAndNestingDo) {
  const auto c = [](const char* y) { return canonical_yaml(YAML::Load(y)); };
  EXPECT_NE(c("{a: 1}"), c("{a: 2}"));
  EXPECT_NE(c("[1, 2]"), c("[2, 1]"));
  EXPECT_NE(c("{a: [1]}"), c("{a: 1}"));
  // Length-prefixed scalars: no two different key/value splits read the same.
  EXPECT_NE(c("{'a=s1:b': c}"), c("{a: 'b=s1:c'}"));
  EXPECT_EQ(canonical_yaml(YAML::Node()), "~");
}

}  // namespace
}  // namespace vigil
