#include "engine/metrics/process_stats.h"

#include <gtest/gtest.h>

namespace vigil::metrics {
namespace {

TEST(ProcessStats, ParsesProcStatEvenWithParenthesesAndSpacesInTheName) {
  // Fields 14/15 utime/stime (ticks), 22 starttime (ticks since boot), 23 vsize, 24 rss (pages).
  const std::string stat =
      "4242 (vi) gil) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  auto s = parse_proc_stat(stat, 100, 4096, 1700000000);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1700000010.0);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 104857600.0);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 2560.0 * 4096);
}

TEST(ProcessStats, RefusesTruncatedOrGarbledText) {
  EXPECT_FALSE(parse_proc_stat("", 100, 4096, 0));
  EXPECT_FALSE(parse_proc_stat("1 (x) S 1 2 3", 100, 4096, 0));
  EXPECT_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 50 0 0 20 0 3 0 1000 1 1", 100, 4096, 0));
}

TEST(ProcessStats, ReadsItsOwnProcess) {
  auto s = read_process_stats();
  ASSERT_TRUE(s);
  EXPECT_GT(s->resident_bytes, 0);
  EXPECT_GT(s->open_fds, 0);
  EXPECT_GT(s->start_time_seconds, 1600000000);
  Exposition out;
  collect_process(out);
  EXPECT_NE(out.text().find("\nprocess_cpu_seconds_total "), std::string::npos);
  EXPECT_NE(out.text().find("\nprocess_resident_memory_bytes "), std::string::npos);
}

}  // namespace
}  // namespace vigil::metrics
