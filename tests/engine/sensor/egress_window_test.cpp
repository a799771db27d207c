// The egress window's sums: what net.egress.window_bytes reports.
#include "engine/sensor/egress_window.h"

#include <gtest/gtest.h>

namespace vigil::sensor {
namespace {

constexpr std::uint64_t kSec = 1'000'000'000ULL;

EgressWindow::Key key(std::uint8_t last) {
  EgressWindow::Key k{};
  k[8] = 203;
  k[9] = 0;
  k[10] = 113;
  k[11] = last;
  return k;
}

TEST(EgressWindow, SumsTheReportsWithinTheWindowPerDestination) {
  EgressWindow w(300 * kSec, 16);
  EXPECT_EQ(w.add(key(50), 10 * kSec, 10 << 20), 10u << 20);
  EXPECT_EQ(w.add(key(50), 20 * kSec, 10 << 20), 20u << 20) << "two pushes of 10 MiB, 10 s apart";
  EXPECT_EQ(w.add(key(51), 20 * kSec, 1000), 1000u) << "another destination has its own sum";
  // 300 s after the first report, it is out of the window.
  EXPECT_EQ(w.add(key(50), 310 * kSec, 1), (10u << 20) + 1);
  EXPECT_EQ(w.add(key(50), 321 * kSec, 1), 2u);
}

TEST(EgressWindow, QuietDestinationsAreForgottenAndTheMapIsBounded) {
  EgressWindow w(60 * kSec, 2);
  w.add(key(1), 1 * kSec, 100);
  w.add(key(2), 2 * kSec, 100);
  EXPECT_EQ(w.size(), 2u);
  // A third destination: the one reported longest ago gives way.
  EXPECT_EQ(w.add(key(3), 3 * kSec, 100), 100u);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.evicted(), 1u);
  EXPECT_EQ(w.add(key(1), 4 * kSec, 100), 100u) << "key 1 was evicted: its sum starts again";
  EXPECT_EQ(w.add(key(3), 5 * kSec, 50), 150u) << "key 3 was kept";
  w.expire(200 * kSec);
  EXPECT_EQ(w.size(), 0u);
}

TEST(EgressWindow, ManyReportsWithinTheWindowKeepTheirSum) {
  EgressWindow w(3600 * kSec, 4);
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < 3 * EgressWindow::kMaxSlots; ++i) sum = w.add(key(9), i * kSec, 10);
  EXPECT_EQ(sum, 3 * EgressWindow::kMaxSlots * 10) << "older counts merge; none is lost inside the window";
}

}  // namespace
}  // namespace vigil::sensor
