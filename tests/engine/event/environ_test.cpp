#include "engine/event/environ.h"

#include <gtest/gtest.h>

namespace vigil::event {
namespace {

using V = std::vector<std::string>;

TEST(ParseEnviron, NamesAndValuesInOrder) {
  EXPECT_EQ(parse_environ(std::string("A=1\0B=x=y\0", 10), false), (V{"A=1", "B=x=y"}));
  EXPECT_EQ(parse_environ(std::string("A=1\0B=2", 7), false), (V{"A=1", "B=2"})) << "a last string without its NUL";
  EXPECT_EQ(parse_environ("", false), V{});
}

TEST(ParseEnviron, ACutAreaLosesItsPartialLastVariable) {
  EXPECT_EQ(parse_environ(std::string("A=1\0LD_PRELOAD=/tm", 18), true), (V{"A=1"}));
  EXPECT_EQ(parse_environ("LD_PRELOAD=/tmp/x", true), V{}) << "one cut string is nothing";
}

TEST(ParseEnviron, WhatIsNotAVariableIsDropped) {
  // A program may scribble over its own envp area.
  EXPECT_EQ(parse_environ(std::string("junk\0=nameless\0\0A=\0", 20), false), (V{"A="}));
}

}  // namespace
}  // namespace vigil::event
