// Capabilities as vigil reads and names them (engine/util/caps.h).
#include "engine/util/caps.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace vigil::util {
namespace {

constexpr const char* kStatus =
    "Name:\tvigil\nUmask:\t0022\nState:\tS (sleeping)\nCapInh:\t0000000000000000\n"
    "CapPrm:\t000000c000001000\nCapEff:\t000000c000001000\nCapBnd:\t000001ffffffffff\n";

TEST(Caps, CapEffIsParsedFromProcStatus) {
  auto caps = parse_cap_eff(kStatus);
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->bits(), 0xc000001000ull);
  EXPECT_TRUE(caps->has(Cap::kBpf));
  EXPECT_TRUE(caps->has(Cap::kPerfmon));
  EXPECT_TRUE(caps->has(Cap::kNetAdmin));
  EXPECT_FALSE(caps->has(Cap::kSysAdmin));
  EXPECT_FALSE(caps->has(Cap::kSyslog));
}

TEST(Caps, AMissingOrMalformedCapEffIsNotGuessed) {
  EXPECT_FALSE(parse_cap_eff("Name:\tx\nCapPrm:\t0000000000000000\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\t00000zz000000000\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\t\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\t10000000000000000\n"));  // 17 digits
  auto last = parse_cap_eff("CapEff:\t0000000000200000");       // no newline at the end
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->has(Cap::kSysAdmin));
}

TEST(Caps, OwnCapEffIsReadable) {
  auto caps = effective_caps();
  ASSERT_TRUE(caps);
}

TEST(Caps, MissingCapsAreNamedAndSysAdminStandsIn) {
  const CapSet bpf_only = CapSet::of({Cap::kBpf});
  EXPECT_EQ(missing_caps(bpf_only, {Cap::kBpf, Cap::kPerfmon}), "CAP_PERFMON");
  EXPECT_EQ(missing_caps(CapSet(), {Cap::kBpf, Cap::kPerfmon}, Cap::kSysAdmin),
            "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)");
  EXPECT_EQ(missing_caps(CapSet::of({Cap::kSysAdmin}), {Cap::kBpf, Cap::kPerfmon}, Cap::kSysAdmin), "");
  EXPECT_EQ(missing_caps(CapSet::of({Cap::kBpf, Cap::kPerfmon}), {Cap::kBpf, Cap::kPerfmon}, Cap::kSysAdmin), "");
  EXPECT_EQ(missing_caps(CapSet(), {}), "");
}

TEST(Caps, NamesAreTheKernelsSpelling) {
  EXPECT_EQ(cap_name(Cap::kDacReadSearch), "CAP_DAC_READ_SEARCH");
  EXPECT_EQ(cap_name(Cap::kSyslog), "CAP_SYSLOG");
  EXPECT_EQ(CapSet::of({Cap::kBpf}).bits(), 1ull << 39);
  EXPECT_EQ(errno_name(ENOENT), "ENOENT");
  EXPECT_EQ(errno_name(EPERM), "EPERM");
  EXPECT_EQ(errno_name(99999), "errno 99999");
}

}  // namespace
}  // namespace vigil::util
