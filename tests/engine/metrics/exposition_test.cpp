#include "engine/metrics/exposition.h"

#include <gtest/gtest.h>

namespace vigil::metrics {
namespace {

TEST(Exposition, WritesHelpTypeThenSamplesPerFamily) {
  Exposition out;
  out.family("vigil_events_total", "counter", "Events.");
  out.family("vigil_ringbuf_fill_ratio", "gauge", "Fill.");
  out.sample("vigil_events_total", {{"type", "execve"}}, 12);
  out.sample("vigil_ringbuf_fill_ratio", 0.25);
  out.sample("vigil_events_total", {{"type", "open"}}, 3);
  EXPECT_EQ(out.text(),
            "# HELP vigil_events_total Events.\n# TYPE vigil_events_total counter\n"
            "vigil_events_total{type=\"execve\"} 12\nvigil_events_total{type=\"open\"} 3\n"
            "# HELP vigil_ringbuf_fill_ratio Fill.\n# TYPE vigil_ringbuf_fill_ratio gauge\n"
            "vigil_ringbuf_fill_ratio 0.25\n");
  EXPECT_EQ(out.errors(), 0u);
}

TEST(Exposition, LabelValuesFromRulesAndPodsAreEscaped) {
  // A rule name is the rule author's text; a pod name comes from the API server.
  Exposition out;
  out.family("vigil_alerts_total", "counter", "Alerts.\nback\\slash");
  out.sample("vigil_alerts_total", {{"rule", "say \"hi\"\\\n} 1\nfake_metric 9"}}, 1);
  const std::string t = out.text();
  EXPECT_NE(t.find("# HELP vigil_alerts_total Alerts.\\nback\\\\slash\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alerts_total{rule=\"say \\\"hi\\\"\\\\\\n} 1\\nfake_metric 9\"} 1\n"), std::string::npos)
      << t;
  // No injected line: every line is a comment or a sample of the family.
  EXPECT_EQ(t.find("\nfake_metric"), std::string::npos);
}

TEST(Exposition, UndeclaredFamiliesAndBadNamesAreRefusedAndCounted) {
  Exposition out;
  out.family("bad name", "gauge", "x");
  out.family("ok_total", "counter", "x");
  out.family("ok_total", "gauge", "declared twice: the first wins");
  out.sample("missing", 1);
  out.sample("ok_total", {{"bad-label", "v"}}, 1);
  out.sample("ok_total", {{"__reserved", "v"}}, 1);
  out.sample("ok_total", 2);
  EXPECT_EQ(out.errors(), 3u);
  EXPECT_EQ(out.text(), "# HELP ok_total x\n# TYPE ok_total counter\nok_total 2\n");
}

TEST(Exposition, FamiliesWithoutSamplesAreLeftOut) {
  Exposition out;
  out.family("vigil_empty", "gauge", "x");
  EXPECT_EQ(out.text(), "");
}

TEST(Exposition, LargeCountersStayExact) {
  Exposition out;
  out.family("c_total", "counter", "x");
  out.sample("c_total", 1234567890123.0);
  EXPECT_EQ(out.text(), "# HELP c_total x\n# TYPE c_total counter\nc_total 1234567890123\n");
}

TEST(Exposition, AHistogramTakesItsBucketSumAndCountSamples) {
  Exposition out;
  out.family("vigil_wait_seconds", "histogram", "Waits.");
  out.family("vigil_events", "counter", "Events.");
  out.sample("vigil_wait_seconds_bucket", {{"le", "+Inf"}}, 2);
  out.sample("vigil_wait_seconds_sum", 0.5);
  out.sample("vigil_wait_seconds_count", 2);
  out.sample("vigil_events_sum", 1);  // not a histogram: refused
  EXPECT_EQ(out.text(),
            "# HELP vigil_wait_seconds Waits.\n# TYPE vigil_wait_seconds histogram\n"
            "vigil_wait_seconds_bucket{le=\"+Inf\"} 2\nvigil_wait_seconds_sum 0.5\nvigil_wait_seconds_count 2\n");
  EXPECT_EQ(out.errors(), 1u);
}

}  // namespace
}  // namespace vigil::metrics
