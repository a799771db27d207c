// The agent's metrics: what `vigil run` exposes on /metrics, gathered at
// scrape time from the parts that own the numbers (the runner and its
// sources, the outputs, the rules, the pod watcher, the parts registry, the
// pipeline tap). Each view is a function so that tests can give fixed values
// and the CLI can wire the real objects; a view left empty is skipped.
//
// docs/metrics.md lists every family, its labels and their worst-case count.
//
// Thread-safety: collect() runs on the webserver's threads; every view must
// be callable from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/metrics/event_counters.h"
#include "engine/metrics/exposition.h"
#include "engine/metrics/health.h"
#include "engine/runtime/parts.h"
#include "engine/runtime/runner.h"
#include "outputs/sink.h"

namespace vigil::metrics {

struct RulesInfo {
  std::uint64_t loaded = 0;   // enabled rules in force
  std::uint64_t skipped = 0;  // left out of the set in force (unknown fields or sources)
  std::vector<std::pair<std::string, std::string>> skipped_rules;  // (name, why)
};

// The rules in force as the metrics see them: written at start and by each
// reload that succeeds, read by scrapes. Thread-safe.
class RulesInForce {
 public:
  void set(RulesInfo r) {
    std::lock_guard<std::mutex> l(mu_);
    info_ = std::move(r);
  }
  RulesInfo get() const {
    std::lock_guard<std::mutex> l(mu_);
    return info_;
  }

 private:
  mutable std::mutex mu_;
  RulesInfo info_;
};

// At most this many vigil_rule_skipped series (the count is always whole).
inline constexpr std::size_t kMaxSkippedRuleSeries = 500;

struct K8sInfo {
  bool synced = false;     // a LIST succeeded at least once
  bool watching = false;   // a WATCH is open now
  std::uint64_t pods = 0;  // pods of this node the state knows
  std::uint64_t watch_events = 0;
  std::uint64_t errors = 0;
  std::uint64_t relists = 0;
  bool tls_verified = true;  // false: the API server's certificate is not checked
};

// The container runtime asked for new containers' pods (state::CriResolver).
struct CriInfo {
  std::uint64_t found = 0;      // containers it named
  std::uint64_t not_found = 0;  // not known to it, or not Kubernetes containers
  std::uint64_t errors = 0;     // failed calls
  std::uint64_t gave_up = 0;    // containers given up after the retries
  std::uint64_t dropped = 0;    // not asked: the queue was full
  std::uint64_t pending = 0;    // waiting to be asked
};

// Evictions of one sequence rule's partial matches (rules::SequenceStats).
struct SequenceEvictions {
  std::string sequence;
  std::uint64_t expired = 0;   // the window passed before the last step
  std::uint64_t capacity = 0;  // the table was full
};

// The aggregation of repeated alerts (pipeline::Aggregator), by rule: the
// rules aggregated at least once.
struct RuleAggregation {
  std::string rule;
  std::uint64_t counted = 0;  // repeats counted into a summary instead of sent
  std::uint64_t summaries_window = 0, summaries_evicted = 0, summaries_end = 0;
  std::uint64_t evicted = 0;  // keys closed early by aggregation.max_keys(_per_rule)
};
struct AggregationInfo {
  std::vector<RuleAggregation> rules;
  std::uint64_t open = 0;  // keys with an open window now
};

// Per-workload baselines (baseline::Stats), when they are on.
struct BaselineInfo {
  std::uint64_t learning = 0, locked = 0;
  std::uint64_t workloads_refused = 0;                            // containers without a profile: max_workloads
  std::vector<std::pair<std::string, std::uint64_t>> not_learnt;  // (set, facts not learnt: it was full)
  std::uint64_t files_refused = 0;
  std::uint64_t save_failures = 0;
};

// Alerts by how complete their metadata was, and the wait of those whose pod
// was not known yet (pipeline::MetadataWait).
struct MetadataInfo {
  std::uint64_t host = 0, container = 0, complete = 0, incomplete = 0;  // alerts published, by k8s.meta
  std::uint64_t resolved = 0, timed_out = 0, evicted = 0, flushed = 0;  // waits, by how they ended
  std::uint64_t parked = 0;                                             // waiting now
  // The wait's delay: (upper bound in seconds, alerts at most that long,
  // cumulative), the last bound +Inf.
  std::vector<std::pair<double, std::uint64_t>> delay_buckets;
  double delay_sum_s = 0;
  std::uint64_t delay_count = 0;
};

// The node's GPU security posture in force (engine/posture).
struct PostureInfo {
  std::string driver, toolkit, runtime;                         // "" not known
  std::vector<std::pair<std::string, std::string>> vulnerable;  // (cve, component)
  // 1 yes, 0 no, -1 not known.
  int profiling_admin_only = -1, accept_envvar = -1, cuda_compat_hook = -1;
  // ECC: 1 on on every GPU with ECC memory, 0 off on one or more, -1 not
  // known (no nvml plugin) or no GPU has ECC memory.
  int ecc = -1;
  // Each GPU's ECC as the nvml plugin read it (engine/posture/ecc.h); modes
  // "on", "off", "unsupported", "unknown".
  struct EccGpu {
    std::string gpu, uuid, current, pending;
  };
  std::vector<EccGpu> ecc_gpus;
};

// Exited processes the state keeps for late events (state::StateStats).
struct ProcessTableInfo {
  std::uint64_t exited_kept = 0;     // known now, in their grace period
  std::uint64_t exited_expired = 0;  // forgotten when their grace period ended
  std::uint64_t exited_evicted = 0;  // forgotten early: state.max_exited_processes were kept
  std::uint64_t late_events = 0;     // events about an exited process that still named it
};

// Prevention (docs/prevention.md): the pipeline's decisions by rule and
// outcome, the kernel's refusals by rule, and the containers' entries.
struct PreventionInfo {
  std::string mode;                                                            // the configuration's prevention.mode
  std::vector<std::tuple<std::string, std::string, std::uint64_t>> decisions;  // (rule, outcome, count)
  std::vector<std::pair<std::string, std::uint64_t>> refusals;                 // (rule, kernel refusals)
  std::uint64_t entries = 0, unknown = 0, map_errors = 0, learnt_dests = 0, kills = 0;
  std::uint64_t denied_files = 0, denied_file_errors = 0;  // program files denied by identity, in the kernel's map
  // Responses by (rule, response, result): "done" or why not (refused, error, dropped, no_api).
  std::vector<std::tuple<std::string, std::string, std::string, std::uint64_t>> responses;
  // Whether each node response (kill, freeze) can be carried out; empty: not checked.
  std::vector<std::pair<std::string, bool>> capable;
};

struct AgentView {
  std::string version;
  std::function<runtime::LoopStatus()> loop;
  std::function<runtime::ReloadStats()> reloads;
  std::function<std::vector<outputs::SinkStats>()> sinks;
  std::function<std::vector<runtime::PartState>()> parts;
  std::function<RulesInfo()> rules;
  std::function<std::vector<SequenceEvictions>()> sequences;
  std::function<PreventionInfo()> prevention;           // empty: no rule with an action
  std::function<std::optional<K8sInfo>()> k8s;          // nullopt: no Kubernetes API
  std::function<CriInfo()> cri;                         // empty: part cri off
  std::function<BaselineInfo()> baselines;              // empty: baselines off
  std::function<MetadataInfo()> metadata;               // empty: no alerts (no rules)
  std::function<AggregationInfo()> aggregation;         // empty: no alerts (no rules)
  std::function<std::optional<PostureInfo>()> posture;  // empty: posture off
  std::function<ProcessTableInfo()> process_table;      // empty: no state (replay, tests)
  std::function<Verdict()> health;
  std::function<Verdict()> ready;
  const EventCounters* counters = nullptr;
};

void collect_agent(const AgentView& v, Exposition& out);

// The whole scrape: collect_agent, then the process_* families.
std::string scrape(const AgentView& v);

}  // namespace vigil::metrics
