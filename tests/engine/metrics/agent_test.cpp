// The agent's families that come from views: here, the sequence rules'
// evictions (the rest is covered end to end by tests/e2e/metrics_test.cpp).
#include "engine/metrics/agent.h"

#include <gtest/gtest.h>

namespace vigil::metrics {
namespace {

TEST(AgentMetrics, SequenceEvictionsByReason) {
  AgentView v;
  v.version = "test";
  v.sequences = [] {
    return std::vector<SequenceEvictions>{{"Shell then egress", 3, 0}, {"Drop then run", 0, 7}};
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("# TYPE vigil_sequence_evictions_total counter"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Shell then egress\",reason=\"expired\"} 3"),
            std::string::npos) << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Shell then egress\",reason=\"capacity\"} 0"),
            std::string::npos) << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Drop then run\",reason=\"capacity\"} 7"),
            std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

TEST(AgentMetrics, NoSequenceViewNoFamily) {
  AgentView v;
  Exposition out;
  collect_agent(v, out);
  EXPECT_EQ(out.text().find("vigil_sequence_evictions_total"), std::string::npos);
}

}  // namespace
}  // namespace vigil::metrics
