#include "engine/baseline/profile.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

namespace vigil::baseline {
namespace {

event::IpAddr v4(const char* s) {
  event::IpAddr a;
  a.family = AF_INET;
  inet_pton(AF_INET, s, a.bytes.data());
  return a;
}
event::IpAddr v6(const char* s) {
  event::IpAddr a;
  a.family = AF_INET6;
  inet_pton(AF_INET6, s, a.bytes.data());
  return a;
}
constexpr auto kTcp = static_cast<std::uint8_t>(event::L4::kTcp);
constexpr auto kUdp = static_cast<std::uint8_t>(event::L4::kUdp);

Destination dest(event::IpAddr a, int prefix, std::uint16_t port, std::uint8_t proto) {
  Destination d;
  d.prefix = static_cast<std::uint8_t>(prefix);
  d.net = mask(a, prefix);
  d.port = port;
  d.proto = proto;
  return d;
}

TEST(BaselineProfile, ASwappedProgramAtAKnownPathIsNotInTheBaseline) {
  Profile p("k");
  Caps caps;
  const std::string a(64, 'a'), b(64, 'b');
  p.add_exe("/usr/bin/python3", a, caps, 1);
  EXPECT_TRUE(p.has_exe("/usr/bin/python3", a));
  EXPECT_FALSE(p.has_exe("/usr/bin/python3", b));
  EXPECT_TRUE(p.has_exe("/usr/bin/python3", ""));  // the event's hash unknown: by path
  EXPECT_FALSE(p.has_exe("/bin/sh", ""));
  // Learnt with no hash: any program at that path is in.
  p.add_exe("/app/server", "", caps, 1);
  EXPECT_TRUE(p.has_exe("/app/server", b));
}

TEST(BaselineProfile, DestinationsMatchWithinTheLearntNetworkPortAndProtocol) {
  Profile p("k");
  Caps caps;
  p.add_destination(dest(v4("10.96.0.10"), 24, 53, kUdp), caps, 1);
  p.add_destination(dest(v6("fd00:1:2:3::9"), 64, 443, kTcp), caps, 1);
  EXPECT_TRUE(p.has_destination(v4("10.96.0.77"), 53, kUdp));
  EXPECT_FALSE(p.has_destination(v4("10.96.1.10"), 53, kUdp));    // another /24
  EXPECT_FALSE(p.has_destination(v4("10.96.0.10"), 53, kTcp));    // another protocol
  EXPECT_FALSE(p.has_destination(v4("10.96.0.10"), 5353, kUdp));  // another port
  EXPECT_TRUE(p.has_destination(v6("fd00:1:2:3:ffff::1"), 443, kTcp));
  EXPECT_FALSE(p.has_destination(v6("fd00:1:2:4::9"), 443, kTcp));
  // An exact (/32) entry beside the /24 one.
  p.add_destination(dest(v4("203.0.113.9"), 32, 443, kTcp), caps, 1);
  EXPECT_TRUE(p.has_destination(v4("203.0.113.9"), 443, kTcp));
  EXPECT_FALSE(p.has_destination(v4("203.0.113.10"), 443, kTcp));
}

TEST(BaselineProfile, AFullSetTakesNothingMoreAndCountsWhatItRefused) {
  Profile p("k");
  Caps caps;
  caps.files = 2;
  caps.gpu_classes = 1;
  EXPECT_TRUE(p.add_file("/etc/a", caps, 1));
  EXPECT_TRUE(p.add_file("/etc/b", caps, 1));
  EXPECT_FALSE(p.add_file("/etc/a", caps, 1));  // known: no change
  EXPECT_TRUE(p.add_file("/etc/c", caps, 1));   // refused, counted
  EXPECT_TRUE(p.add_file("/etc/d", caps, 1));
  EXPECT_EQ(p.file_count(), 2u);
  EXPECT_FALSE(p.has_file("/etc/c"));
  EXPECT_EQ(p.full()[static_cast<std::size_t>(Set::kFiles)], 2u);
  p.add_gpu_class(0xc7c0, caps, 1);
  p.add_gpu_class(0xc6c0, caps, 1);
  EXPECT_TRUE(p.has_gpu_class(0xc7c0));
  EXPECT_FALSE(p.has_gpu_class(0xc6c0));
  EXPECT_EQ(p.full()[static_cast<std::size_t>(Set::kGpuClasses)], 1u);
}

TEST(BaselineProfile, ExeCapCountsEachPathAndHash) {
  Profile p("k");
  Caps caps;
  caps.exes = 2;
  p.add_exe("/a", std::string(64, '1'), caps, 1);
  p.add_exe("/a", std::string(64, '2'), caps, 1);
  EXPECT_EQ(p.exe_count(), 2u);
  p.add_exe("/b", "", caps, 1);
  p.add_exe("/a", std::string(64, '3'), caps, 1);
  EXPECT_FALSE(p.has_exe("/b", ""));
  EXPECT_FALSE(p.has_exe("/a", std::string(64, '3')));
  EXPECT_EQ(p.full()[static_cast<std::size_t>(Set::kExes)], 2u);
}

TEST(BaselineProfile, LockIsOnceAndKeepsTheFirstCause) {
  Profile p("k");
  p.lock(5, "command");
  p.lock(9, "time");
  EXPECT_EQ(p.phase(), Phase::kLocked);
  EXPECT_EQ(p.locked_at_ns(), 5u);
  EXPECT_EQ(p.lock_cause(), "command");
}

TEST(BaselineProfile, DestinationStringsRoundTrip) {
  for (const char* s : {"10.0.0.0/24:443/tcp", "fd00::/64:53/udp", "203.0.113.9/32:ephemeral/ip"}) {
    Destination d;
    ASSERT_TRUE(parse_destination(s, d)) << s;
    EXPECT_EQ(to_string(d), s);
  }
  Destination d;
  for (const char* s : {"10.0.0.0/33:443/tcp", "10.0.0.0/24:70000/tcp", "10.0.0.0/24:443/sctp", "x/24:1/tcp",
                        "10.0.0.0:443/tcp", "10.0.0.0/24:0/tcp", "", "/:/"}) {
    EXPECT_FALSE(parse_destination(s, d)) << s;
  }
  ASSERT_TRUE(parse_destination("10.0.0.77/24:443/tcp", d));  // host bits are masked
  EXPECT_EQ(to_string(d), "10.0.0.0/24:443/tcp");
}

}  // namespace
}  // namespace vigil::baseline
