// The agent's families that come from views, with fixed values: issue 16's
// losses (output drops by sink and reason, skipped rules by name, TLS
// verification off), the sequence rules' evictions. The live values are
// covered end to end by tests/e2e/metrics_test.cpp.
#include "engine/metrics/agent.h"

#include <gtest/gtest.h>

#include <limits>

namespace vigil::metrics {
namespace {

TEST(AgentMetrics, SequenceEvictionsByReason) {
  AgentView v;
  v.version = "test";
  v.sequences = [] { return std::vector<SequenceEvictions>{{"Shell then egress", 3, 0}, {"Drop then run", 0, 7}}; };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("# TYPE vigil_sequence_evictions_total counter"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Shell then egress\",reason=\"expired\"} 3"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Shell then egress\",reason=\"capacity\"} 0"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_sequence_evictions_total{sequence=\"Drop then run\",reason=\"capacity\"} 7"),
            std::string::npos)
      << t;
  EXPECT_EQ(out.errors(), 0u);
}

TEST(AgentMetrics, LossesSkippedRulesAndTlsOffAreExposed) {
  AgentView v;
  v.version = "test";
  v.sinks = [] {
    outputs::SinkStats s;
    s.name = "siem";
    s.type = "webhook";
    s.sent = 27;
    s.failed = 25;
    s.drops[static_cast<std::size_t>(outputs::DropReason::kQueueFull)] = 149;
    s.drops[static_cast<std::size_t>(outputs::DropReason::kRetriesExhausted)] = 25;
    return std::vector<outputs::SinkStats>{s};
  };
  v.rules = [] {
    RulesInfo r;
    r.loaded = 28;
    r.skipped = 1;
    r.skipped_rules = {{"Typo rule", "unknown_field"}};
    return r;
  };
  v.k8s = []() -> std::optional<K8sInfo> {
    K8sInfo k;
    k.synced = true;
    k.pods = 12;
    k.tls_verified = false;
    return k;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_sink_dropped_total{sink=\"siem\",type=\"webhook\",reason=\"queue_full\"} 149\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_sink_dropped_total{sink=\"siem\",type=\"webhook\",reason=\"retries_exhausted\"} 25\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_sink_failed_total{sink=\"siem\",type=\"webhook\"} 25\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_rules_skipped 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_rule_skipped{rule=\"Typo rule\",reason=\"unknown_field\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_k8s_tls_verified 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_k8s_pods 12\n"), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

// The container runtime's lookups: what it named, what failed, what never
// got asked (part cri off: no family at all).
TEST(AgentMetrics, CriLookupsAreExposed) {
  AgentView v;
  v.cri = [] { return CriInfo{.found = 41, .not_found = 2, .errors = 3, .gave_up = 1, .dropped = 5, .pending = 7}; };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_cri_lookups_total{result=\"found\"} 41\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_cri_lookups_total{result=\"gave_up\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_cri_lookups_total{result=\"dropped\"} 5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_cri_errors_total 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_cri_pending 7\n"), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

// The GPU posture: versions as labels (unknown when not found), one series
// per CVE, settings as 1/0/-1; before the first read, no family.
TEST(AgentMetrics, GpuPostureIsExposed) {
  AgentView v;
  v.posture = []() -> std::optional<PostureInfo> {
    PostureInfo p;
    p.driver = "580.95.05";
    p.runtime = "runc";
    p.vulnerable = {{"CVE-2025-23266", "toolkit"}, {"CVE-2021-1056", "driver"}};
    p.profiling_admin_only = 0;
    p.accept_envvar = 1;
    p.ecc = 0;
    p.ecc_gpus = {{"0", "GPU-aa", "on", "on"}, {"1", "", "off", "on"}};
    return p;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_gpu_posture_info{driver=\"580.95.05\",toolkit=\"unknown\",runtime=\"runc\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_gpu_posture_vulnerabilities 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_gpu_posture_vulnerable{cve=\"CVE-2021-1056\",component=\"driver\"} 1\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_gpu_posture_setting{setting=\"profiling_admin_only\"} 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_gpu_posture_setting{setting=\"cuda_compat_hook\"} -1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_gpu_posture_setting{setting=\"ecc\"} 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_gpu_posture_ecc{gpu=\"0\",uuid=\"GPU-aa\",current=\"on\",pending=\"on\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("vigil_gpu_posture_ecc{gpu=\"1\",uuid=\"unknown\",current=\"off\",pending=\"on\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(out.errors(), 0u);
  AgentView none;
  none.posture = []() -> std::optional<PostureInfo> { return std::nullopt; };
  Exposition empty;
  collect_agent(none, empty);
  EXPECT_EQ(empty.text().find("vigil_gpu_posture"), std::string::npos);
  // Without the nvml plugin: the ecc setting is -1 and no per-GPU family.
  AgentView no_ecc;
  no_ecc.posture = []() -> std::optional<PostureInfo> { return PostureInfo{}; };
  Exposition plain;
  collect_agent(no_ecc, plain);
  EXPECT_NE(plain.text().find("vigil_gpu_posture_setting{setting=\"ecc\"} -1\n"), std::string::npos) << plain.text();
  EXPECT_EQ(plain.text().find("vigil_gpu_posture_ecc"), std::string::npos) << plain.text();
}

TEST(AgentMetrics, NoSequenceViewNoFamily) {
  AgentView v;
  Exposition out;
  collect_agent(v, out);
  EXPECT_EQ(out.text().find("vigil_cri_"), std::string::npos);
  EXPECT_EQ(out.text().find("vigil_sequence_evictions_total"), std::string::npos);
  EXPECT_EQ(out.text().find("vigil_baseline_"), std::string::npos);  // baselines off: no family
}

// Baselines: what did not fit is counted where an operator looks.
TEST(AgentMetrics, BaselineCountsAreExposed) {
  AgentView v;
  v.baselines = [] {
    BaselineInfo b;
    b.learning = 2;
    b.locked = 5;
    b.workloads_refused = 1;
    b.not_learnt = {{"exes", 0}, {"destinations", 9}};
    b.files_refused = 3;
    return b;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_baseline_workloads{state=\"locked\"} 5"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_baseline_workloads{state=\"learning\"} 2"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_baseline_workloads_refused_total 1"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_baseline_not_learnt_total{set=\"destinations\"} 9"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_baseline_files_refused_total 3"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_baseline_save_failures_total 0"), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

// Issue 28: alerts by how complete their metadata was, and the wait for
// their pod as a Prometheus histogram.
TEST(AgentMetrics, MetadataCountsAndTheWaitHistogramAreExposed) {
  AgentView v;
  v.metadata = [] {
    MetadataInfo m;
    m.complete = 7;
    m.incomplete = 2;
    m.host = 40;
    m.resolved = 6;
    m.timed_out = 1;
    m.evicted = 1;
    m.parked = 3;
    m.delay_buckets = {{0.1, 4}, {0.5, 8}, {std::numeric_limits<double>::infinity(), 8}};
    m.delay_sum_s = 1.5;
    m.delay_count = 8;
    return m;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_alerts_metadata_total{metadata=\"complete\"} 7"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alerts_metadata_total{metadata=\"incomplete\"} 2"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alerts_metadata_total{metadata=\"host\"} 40"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_metadata_waits_total{end=\"timeout\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_metadata_waits_total{end=\"evicted\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_metadata_waiting 3"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE vigil_alert_metadata_wait_seconds histogram\n"
                   "vigil_alert_metadata_wait_seconds_bucket{le=\"0.1\"} 4\n"
                   "vigil_alert_metadata_wait_seconds_bucket{le=\"0.5\"} 8\n"
                   "vigil_alert_metadata_wait_seconds_bucket{le=\"+Inf\"} 8\n"
                   "vigil_alert_metadata_wait_seconds_sum 1.5\n"
                   "vigil_alert_metadata_wait_seconds_count 8\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(out.errors(), 0u);
}

// docs/outputs.md, "Aggregation": what the aggregation counted, summarised
// and evicted, by rule, and the keys open now.
TEST(AgentMetrics, AggregationCountsAreExposedByRule) {
  AgentView v;
  v.aggregation = [] {
    AggregationInfo g;
    RuleAggregation r;
    r.rule = "Crypto miner binary executed";
    r.counted = 3599;
    r.summaries_window = 6;
    r.summaries_evicted = 1;
    r.summaries_end = 2;
    r.evicted = 4;
    g.rules.push_back(r);
    g.open = 12;
    return g;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  const std::string rule = "rule=\"Crypto miner binary executed\"";
  EXPECT_NE(t.find("vigil_alerts_aggregated_total{" + rule + "} 3599"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_summaries_total{" + rule + ",reason=\"window\"} 6"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_summaries_total{" + rule + ",reason=\"evicted\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_alert_summaries_total{" + rule + ",reason=\"end\"} 2"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_aggregation_evictions_total{" + rule + "} 4"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_aggregation_open_keys 12"), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

}  // namespace
}  // namespace vigil::metrics

namespace vigil::metrics {
namespace {

// Responses carried out by rule and response; those that were not, by reason.
TEST(AgentMetrics, ResponsesAndTheirFailuresAreExposedByRule) {
  AgentView v;
  v.version = "test";
  v.prevention = [] {
    PreventionInfo p;
    p.mode = "enforce";
    p.responses = {{"Miner", "freeze", "done", 2}, {"Miner", "label", "error", 1}, {"Miner", "label", "done", 3}};
    return p;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("vigil_prevention_responses_total{rule=\"Miner\",response=\"freeze\"} 2"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_prevention_responses_total{rule=\"Miner\",response=\"label\"} 3"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_prevention_response_failures_total{rule=\"Miner\",response=\"label\",reason=\"error\"} 1"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("response_failures_total{rule=\"Miner\",response=\"freeze\""), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);
}

// Whether kill and freeze can be carried out (checked at start): one sample
// each, 1 or 0; no family at all when nothing was checked.
TEST(AgentMetrics, ResponseCapabilityIsExposedWhenChecked) {
  AgentView v;
  v.version = "test";
  v.prevention = [] {
    PreventionInfo p;
    p.mode = "monitor";
    p.capable = {{"kill", true}, {"freeze", false}};
    return p;
  };
  Exposition out;
  collect_agent(v, out);
  const std::string t = out.text();
  EXPECT_NE(t.find("# TYPE vigil_prevention_response_capable gauge"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_prevention_response_capable{response=\"kill\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("vigil_prevention_response_capable{response=\"freeze\"} 0\n"), std::string::npos) << t;
  EXPECT_EQ(out.errors(), 0u);

  v.prevention = [] {
    PreventionInfo p;
    p.mode = "off";
    return p;
  };
  Exposition none;
  collect_agent(v, none);
  EXPECT_EQ(none.text().find("vigil_prevention_response_capable"), std::string::npos);
}

}  // namespace
}  // namespace vigil::metrics
