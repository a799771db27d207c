#include "engine/event/event.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "engine/event/alert.h"

namespace vigil::event {
namespace {

TEST(EventType, NamesRoundTrip) {
  for (int i = 1; i < static_cast<int>(Type::kCount); ++i) {
    auto t = static_cast<Type>(i);
    EXPECT_EQ(type_from_name(type_name(t)), t) << type_name(t);
  }
  EXPECT_EQ(type_from_name("no_such_event"), Type::kUnknown);
}

TEST(IpAddr, FormatsBothFamilies) {
  IpAddr v4;
  v4.family = AF_INET;
  inet_pton(AF_INET, "169.254.169.254", v4.bytes.data());
  EXPECT_EQ(to_string(v4), "169.254.169.254");
  IpAddr v6;
  v6.family = AF_INET6;
  inet_pton(AF_INET6, "fd00:ec2::254", v6.bytes.data());
  EXPECT_EQ(to_string(v6), "fd00:ec2::254");
  EXPECT_EQ(to_string(IpAddr{}), "");
}

TEST(Priority, AcceptsFalcoSpellings) {
  EXPECT_EQ(priority_from_name("CRITICAL"), Priority::kCritical);
  EXPECT_EQ(priority_from_name("informational"), Priority::kInformational);
  EXPECT_EQ(priority_from_name("INFO"), Priority::kInformational);
  EXPECT_EQ(priority_from_name("Notice"), Priority::kNotice);
  EXPECT_FALSE(priority_from_name("severe").has_value());
  EXPECT_EQ(priority_name(Priority::kWarning), "Warning");
}

}  // namespace
}  // namespace vigil::event
