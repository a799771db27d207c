#include "engine/sensor/kmsg.h"
#include "engine/sensor/klog.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace vigil::sensor {
namespace {

TEST(KmsgRecord, ParsesHeaderAndMessage) {
  auto r = parse_kmsg_record("4,123456,987654321,-;NVRM: Xid (PCI:0000:38:00): 13, pid=1, name=x, y\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 0u);
  EXPECT_EQ(r->level, 4u);
  EXPECT_EQ(r->seq, 123456u);
  EXPECT_EQ(r->ts_us, 987654321u);
  EXPECT_FALSE(r->continuation);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:38:00): 13, pid=1, name=x, y");
}

TEST(KmsgRecord, UserFacilityExtraFieldsContinuationAndEscapes) {
  auto r = parse_kmsg_record("12,7,100,c,extra;a\\x0ab\\\\x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 1u);  // LOG_USER, what a userspace write gets by default
  EXPECT_EQ(r->level, 4u);
  EXPECT_TRUE(r->continuation);
  EXPECT_EQ(r->message, "a\nb\\\\x");
}

TEST(KmsgRecord, RejectsMalformed) {
  EXPECT_FALSE(parse_kmsg_record(" SUBSYSTEM=pci"));
  EXPECT_FALSE(parse_kmsg_record("4,1,2;no flags"));
  EXPECT_FALSE(parse_kmsg_record("x,1,2,-;bad pri"));
  EXPECT_FALSE(parse_kmsg_record("4,1,2,-"));
  EXPECT_FALSE(parse_kmsg_record(""));
  EXPECT_FALSE(parse_kmsg_record("99999999999999999999,1,2,-;overflow"));
}

// Every format of nvidia.md §5.1.
TEST(Xid, OpenModulesWithPidAndName) {
  auto x = parse_xid(
      "NVRM: Xid (PCI:0000:38:00): 13, pid=2924364, name=pt_main_thread, Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, "0000:38:00");
  EXPECT_EQ(x->code, 13u);
  EXPECT_EQ(x->xid_pid, 2924364u);
  EXPECT_EQ(x->xid_comm, "pt_main_thread");
  EXPECT_EQ(x->text, "Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address");
}

TEST(Xid, UnknownPidAndNameDefaults) {
  auto x = parse_xid(
      "NVRM: Xid (PCI:0000:01:00): 31, pid='<unknown>', name=<unknown>, Ch 00000008, intr 10000000. MMU Fault");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->code, 31u);
  EXPECT_EQ(x->xid_pid, 0u);
  EXPECT_EQ(x->xid_comm, "");
  EXPECT_EQ(x->text, "Ch 00000008, intr 10000000. MMU Fault");
}

TEST(Xid, Driver570WithoutProcess) {
  auto x = parse_xid("NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, "0000:03:00");
  EXPECT_EQ(x->code, 79u);
  EXPECT_EQ(x->xid_pid, 0u);
  EXPECT_EQ(x->text, "GPU has fallen off the bus.");
}

TEST(Xid, CausedByPreviousSuffix) {
  auto x = parse_xid("NVRM: Xid (PCI:0000:3b:00): 45, pid=77, name=python3, Ch 00000010 caused by previous Xid 79");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->code, 45u);
  EXPECT_EQ(x->xid_pid, 77u);
  EXPECT_EQ(x->text, "Ch 00000010 caused by previous Xid 79");
}

TEST(Xid, MigAttribution) {
  auto x = parse_xid("NVRM: Xid (PCI:0000:87:00 GPU-I:01 GPU-CI:00): 43, pid=5, name=a.out, Ch 0000000a");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, "0000:87:00");
  EXPECT_EQ(x->code, 43u);
  auto y = parse_xid("NVRM: Xid (PCI:0000:87:00 GPU-I:02): 94, pid=7194, Contained: SM (0x1). RST: No, D-RST: No");
  ASSERT_TRUE(y);
  EXPECT_EQ(y->code, 94u);
  EXPECT_EQ(y->xid_pid, 7194u);  // documented form without name=
  EXPECT_EQ(y->xid_comm, "");
  EXPECT_EQ(y->text, "Contained: SM (0x1). RST: No, D-RST: No");
}

TEST(Xid, VeryOldFormWithoutPciPrefix) {
  auto x = parse_xid("NVRM: Xid (0000:01:00): 3, something");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->pci, "0000:01:00");
  EXPECT_EQ(x->code, 3u);
}

TEST(Xid, FoundAnywhereInAMergedLine) {
  auto x = parse_xid("previous unterminated textNVRM: Xid (PCI:0000:3b:00): 119, Timeout after 6s");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->code, 119u);
}

TEST(Xid, RejectsLookAlikes) {
  EXPECT_FALSE(parse_xid("NVRM: GPU at PCI:0000:3b:00: GPU-12345"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:zzzz:3b:00): 79, x"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:3b:00): seventy, x"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:3b:00) 79"));
  EXPECT_FALSE(parse_xid("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, x"));
}

TEST(KmsgReader, ReadsOnlyNewXidLinesFromAFile) {
  char tmpl[] = "/tmp/vigil-kmsg-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  std::string old = "4,1,100,-;NVRM: Xid (PCI:0000:01:00): 13, old line before open\n";
  ASSERT_EQ(write(fd, old.data(), old.size()), static_cast<ssize_t>(old.size()));
  auto r = KmsgReader::open(tmpl);
  ASSERT_TRUE(r) << r.error().message;
  std::string fresh =
      "6,2,200,-;eth0: link up\n"
      " SUBSYSTEM=net\n"
      "12,3,2000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
      "4,4,300,-;NVRM: Xid (PCI:00";  // incomplete: kept until the rest arrives
  ASSERT_EQ(write(fd, fresh.data(), fresh.size()), static_cast<ssize_t>(fresh.size()));
  std::vector<event::Event> got;
  TimeBase tb;
  tb.monotonic_to_wall_ns = 1'000'000'000'000'000'000LL;
  int n = r->read_available(tb, [&](event::Event&& e) { got.push_back(std::move(e)); });
  EXPECT_EQ(n, 1);
  ASSERT_EQ(got.size(), 1u);
  const auto* x = got[0].as<event::XidData>();
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->source, "kmsg");
  EXPECT_EQ(x->facility, 1);
  EXPECT_EQ(x->level, 4);
  EXPECT_EQ(x->code, 79u);
  EXPECT_EQ(x->pci, "0000:3b:00");
  EXPECT_EQ(x->xid_pid, 1234u);
  EXPECT_EQ(got[0].hdr.pid, 1234u);
  EXPECT_EQ(got[0].hdr.type, event::Type::kXid);
  EXPECT_EQ(got[0].hdr.ts_ns, 1'000'000'002'000'000'000ULL);
  std::string rest = ":00): 48, pid=9, name=a, DBE\n";
  ASSERT_EQ(write(fd, rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  got.clear();
  EXPECT_EQ(r->read_available(tb, [&](event::Event&& e) { got.push_back(std::move(e)); }), 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].as<event::XidData>()->code, 48u);
  close(fd);
  unlink(tmpl);
}

TEST(KmsgReader, MissingFileIsAClearError) {
  auto r = KmsgReader::open("/nonexistent/kmsg");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/nonexistent/kmsg"), std::string::npos);
}

TEST(KlogLine, ParsesPriorityTimestampAndMessage) {
  auto l = parse_klog_line("<3>[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->facility, 0u);
  EXPECT_EQ(l->level, 3u);
  EXPECT_EQ(l->ts_us, 1234567890u);
  EXPECT_EQ(l->message, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  auto user = parse_klog_line("<12>[    0.000001] x");
  ASSERT_TRUE(user);
  EXPECT_EQ(user->facility, 1u);
  EXPECT_EQ(user->level, 4u);
  EXPECT_EQ(user->ts_us, 1u);
}

TEST(KlogLine, RefusesLinesWithoutTheHead) {
  for (const char* bad :
       {"", "<3>no timestamp", "[ 1.000000] no priority", "<x>[ 1.000000] a", "<3>[ 1.5] short", "<3>[ 1.0000000] long",
        "<3>[1.000000 unclosed", " continuation line", "<3>[ 99999999999999999999.000000] overflow"}) {
    EXPECT_FALSE(parse_klog_line(bad)) << bad;
  }
}

TEST(KlogNews, TheFirstReadOnlySetsThePosition) {
  KlogCursor c;
  auto n = klog_news("<6>[ 1.000000] old\n<6>[ 2.000000] older news\n", c);
  EXPECT_TRUE(n.lines.empty());
  EXPECT_TRUE(c.primed);
  EXPECT_EQ(c.last_ts_us, 2000000u);
}

TEST(KlogNews, HandsOverOnlyNewLinesAndTellsEqualTimestampsApartByPosition) {
  KlogCursor c;
  klog_news("<6>[ 1.000000] a\n<6>[ 2.000000] b\n", c);
  // A second line at 2.000000 arrives, then one at 3.
  auto n = klog_news("<6>[ 1.000000] a\n<6>[ 2.000000] b\n<6>[ 2.000000] c\n<6>[ 3.000000] d\n", c);
  ASSERT_EQ(n.lines.size(), 2u);
  EXPECT_EQ(n.lines[0].message, "c");
  EXPECT_EQ(n.lines[1].message, "d");
  EXPECT_FALSE(n.gap);
  // Nothing new: nothing handed over again.
  EXPECT_TRUE(klog_news("<6>[ 2.000000] b\n<6>[ 2.000000] c\n<6>[ 3.000000] d\n", c).lines.empty());
  // The buffer wrapped past what was last seen: a gap, and the new lines.
  auto w = klog_news("<6>[ 5.000000] e\n<6>[ 6.000000] f\n", c);
  EXPECT_TRUE(w.gap);
  ASSERT_EQ(w.lines.size(), 2u);
  EXPECT_EQ(w.lines[0].message, "e");
}

}  // namespace
}  // namespace vigil::sensor
