#include "engine/event/event.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "engine/event/alert.h"
#include "engine/event/schema.h"

namespace vigil::event {
namespace {

TEST(EventType, NamesRoundTrip) {
  for (int i = 1; i < static_cast<int>(Type::kCount); ++i) {
    auto t = static_cast<Type>(i);
    EXPECT_EQ(type_from_name(type_name(t)), t) << type_name(t);
  }
  EXPECT_EQ(type_from_name("no_such_event"), Type::kUnknown);
}

TEST(EventType, AliasesNameTheFamilyType) {
  EXPECT_EQ(type_from_name("execveat"), Type::kExec);
  EXPECT_EQ(type_from_name("openat2"), Type::kOpen);
  EXPECT_EQ(type_from_name("creat"), Type::kOpen);
  EXPECT_EQ(type_from_name("sendmsg"), Type::kConnect);
  EXPECT_EQ(type_from_name("vfork"), Type::kFork);
  EXPECT_EQ(type_from_name(""), Type::kUnknown);
  EXPECT_EQ(type_from_name("open "), Type::kUnknown);
}

TEST(Schema, EveryTypeHasItsRowAndPayload) {
  for (std::size_t i = 1; i < kTypeCount; ++i) {
    const TypeInfo& ti = info(static_cast<Type>(i));
    EXPECT_EQ(static_cast<std::size_t>(ti.type), i);
    EXPECT_FALSE(ti.name.empty());
    EXPECT_FALSE(ti.category.empty()) << ti.name;
    Payload p = make_payload(ti.type);
    EXPECT_EQ(p.index(), ti.payload_kind) << ti.name;
    EXPECT_FALSE(std::holds_alternative<std::monostate>(p)) << ti.name;
  }
  EXPECT_TRUE(std::holds_alternative<std::monostate>(make_payload(Type::kUnknown)));
  Payload p;
  EXPECT_FALSE(make_payload_kind(kPayloadKinds, p));
}

TEST(Schema, NoUnreportedSyscallIsAnEventType) {
  // A syscall that becomes an event type must leave the "accepted, never
  // matches" list, or rules naming it would be told it never fires.
  for (std::string_view name : unreported_syscalls()) {
    EXPECT_EQ(type_from_name(name), Type::kUnknown) << name;
  }
  EXPECT_TRUE(is_unreported_syscall("mmap"));
  EXPECT_FALSE(is_unreported_syscall("execve"));
}

TEST(TypeMask, SetsTestsAndCombines) {
  constexpr TypeMask exec_open = types("execve, openat");
  static_assert(exec_open.test(Type::kExec) && exec_open.test(Type::kOpen));
  static_assert(types("creat") == TypeMask(Type::kOpen));
  EXPECT_EQ(exec_open.count(), 2u);
  EXPECT_FALSE(exec_open.test(Type::kConnect));
  TypeMask all = TypeMask::all();
  EXPECT_EQ(all.count(), kTypeCount - 1);
  EXPECT_FALSE(all.test(Type::kUnknown));
  EXPECT_EQ(~all, TypeMask());
  EXPECT_EQ((~exec_open).count(), kTypeCount - 3);
  EXPECT_EQ(exec_open & TypeMask(Type::kOpen), TypeMask(Type::kOpen));
  EXPECT_EQ(exec_open | TypeMask(Type::kBpf), types("execve openat bpf"));
  std::vector<Type> seen;
  exec_open.for_each([&](Type t) { seen.push_back(t); });
  EXPECT_EQ(seen, (std::vector<Type>{Type::kExec, Type::kOpen}));
  // Room for every one-byte id, beyond a 32- or 64-bit word.
  TypeMask high;
  high.set(static_cast<Type>(200));
  EXPECT_TRUE(high.test(static_cast<Type>(200)));
  EXPECT_FALSE(high.test(static_cast<Type>(72)));
  EXPECT_TRUE(high.any());
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
