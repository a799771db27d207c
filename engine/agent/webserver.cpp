#include "engine/agent/webserver.h"

#include <limits>

#include "engine/agent/agent.h"
#include "engine/agent/prevention.h"
#include "engine/baseline/store.h"
#include "engine/config/config.h"
#include "engine/pipeline/aggregate.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/pipeline/pipeline.h"
#include "engine/posture/source.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "engine/sensor/sensor.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/pod_watcher.h"
#include "engine/state/pods.h"
#include "engine/util/version.h"
#include "outputs/router.h"

namespace vigil::agent {
using config::get_or;

Result<WebserverConfig> webserver_config(const YAML::Node& cfg) {
  WebserverConfig out;
  auto enabled = get_or<bool>(cfg, "webserver.enabled", out.enabled);
  if (!enabled) return enabled.error();
  out.enabled = *enabled;
  auto listen = get_or<std::string>(cfg, "webserver.listen", out.listen);
  if (!listen) return listen.error();
  out.listen = *listen;
  auto stall = get_or<double>(cfg, "webserver.stall_after_s", 10.0);
  if (!stall) return stall.error();
  out.stall_after = std::chrono::milliseconds(static_cast<std::int64_t>(*stall * 1000));
  if (auto addr = metrics::parse_listen(out.listen); !addr) return addr.error();
  return out;
}

Result<std::unique_ptr<metrics::Server>> start_webserver(const WebserverConfig& cfg, const Agent& a,
                                                         metrics::HealthMonitor& health,
                                                         std::shared_ptr<spdlog::logger> log) {
  metrics::AgentView v;
  v.version = kVersion;
  v.loop = [&r = *a.runner] { return r.status(); };
  v.reloads = [&r = *a.runner] { return r.reload_stats(); };
  v.sinks = [&r = *a.router] { return r.stats(); };
  v.parts = [&p = a.parts] { return p.snapshot(); };
  v.rules = [&r = a.rules_in_force] { return r.get(); };
  v.sequences = [&p = *a.pipe] {
    std::vector<metrics::SequenceEvictions> out;
    for (const auto& s : p.sequence_stats().snapshot()) out.push_back({s.sequence, s.expired, s.capacity});
    return out;
  };
  v.process_table = [&a] {
    metrics::ProcessTableInfo t;
    t.exited_kept = a.exited_kept.load(std::memory_order_relaxed);
    t.exited_expired = a.exited_expired.load(std::memory_order_relaxed);
    t.exited_evicted = a.exited_evicted.load(std::memory_order_relaxed);
    t.late_events = a.late_events.load(std::memory_order_relaxed);
    return t;
  };
  if (a.pods != nullptr) {
    const bool tls_verified = !(a.k8s && a.k8s->api_tls_verification_off());
    v.k8s = [&a, tls_verified]() -> std::optional<metrics::K8sInfo> {
      const state::PodWatcher::Stats s = a.pods->stats();
      metrics::K8sInfo k;
      k.synced = s.synced;
      k.watching = s.watching;
      k.pods = a.pods_known.load(std::memory_order_relaxed);
      k.watch_events = s.events;
      k.errors = s.errors + s.pod_resources_errors;
      k.relists = s.relists_gone;
      k.tls_verified = tls_verified;
      return k;
    };
  }
  if (a.aggregator != nullptr) {
    v.aggregation = [g = a.aggregator.get()] {
      metrics::AggregationInfo info;
      for (const auto& r : g->stats().snapshot()) {
        info.rules.push_back({r.rule, r.counted, r.summaries_window, r.summaries_evicted, r.summaries_end, r.evicted});
      }
      info.open = g->stats().open();
      return info;
    };
  }
  if (a.metadata_wait != nullptr) {
    v.metadata = [w = a.metadata_wait.get()] {
      const pipeline::MetadataWaitStats::Snapshot s = w->stats().snapshot();
      metrics::MetadataInfo m;
      m.host = s.host;
      m.container = s.container;
      m.complete = s.complete;
      m.incomplete = s.incomplete;
      m.resolved = s.resolved;
      m.timed_out = s.timed_out;
      m.evicted = s.evicted;
      m.flushed = s.flushed;
      m.parked = s.parked;
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < s.delay_buckets.size(); ++i) {
        cumulative += s.delay_buckets[i];
        const double le = i < pipeline::MetadataWaitStats::kBuckets.size() ? pipeline::MetadataWaitStats::kBuckets[i]
                                                                           : std::numeric_limits<double>::infinity();
        m.delay_buckets.emplace_back(le, cumulative);
      }
      m.delay_sum_s = s.delay_sum_s;
      m.delay_count = s.delay_count;
      return m;
    };
  }
  if (a.cri != nullptr) {
    v.cri = [&a] {
      const state::CriResolver::Stats s = a.cri->stats();
      return metrics::CriInfo{s.found, s.not_found, s.errors, s.gave_up, s.dropped, s.pending};
    };
  }
  if (a.baselines != nullptr) {
    v.baselines = [b = a.baselines.get()] {
      const baseline::Stats s = b->stats();
      metrics::BaselineInfo out;
      out.learning = s.learning;
      out.locked = s.locked;
      out.workloads_refused = s.workloads_refused;
      for (std::size_t i = 0; i < baseline::kSets; ++i) {
        out.not_learnt.emplace_back(std::string(baseline::set_name(static_cast<baseline::Set>(i))), s.full[i]);
      }
      out.files_refused = s.files_refused;
      out.save_failures = s.save_failures;
      return out;
    };
  }
  if (a.posture != nullptr) {
    v.posture = [view = a.posture]() -> std::optional<metrics::PostureInfo> {
      auto p = view->get();
      if (!p) return std::nullopt;
      metrics::PostureInfo out;
      out.driver = p->driver_version;
      out.toolkit = p->toolkit_version;
      out.runtime = p->runtime;
      for (const auto& f : p->vulnerable) out.vulnerable.emplace_back(f.cve, f.component);
      out.profiling_admin_only = p->profiling_admin_only;
      out.accept_envvar = p->accept_envvar;
      out.cuda_compat_hook = p->cuda_compat_hook;
      out.ecc = p->ecc == "on" ? 1 : (p->ecc == "off" || p->ecc == "mixed") ? 0 : -1;
      auto mode = [](const std::string& m) { return m.empty() ? std::string("unknown") : m; };
      for (const auto& g : p->ecc_gpus) {
        out.ecc_gpus.push_back({std::to_string(g.index), g.uuid, mode(g.current), mode(g.pending)});
      }
      return out;
    };
  }
  if (a.prevention || (a.ruleset && a.ruleset->has_prevention())) {
    v.prevention = [&a] {
      metrics::PreventionInfo out;
      auto rs = a.pipe->ruleset();
      if (rs) out.mode = std::string(rules::prevention_mode_name(rs->prevention_mode()));
      for (const auto& [key, n] : a.pipe->prevention_counts()) out.decisions.emplace_back(key.first, key.second, n);
      if (a.sensor && rs) {
        const auto counts = a.sensor->policy_refusals();
        const auto slots = rules::enforced_slots(rs->prevention());
        for (std::size_t i = 0; i < slots.size() && i < counts.size(); ++i)
          out.refusals.emplace_back(slots[i]->name, counts[i]);
      }
      if (a.prevention) {
        const auto s = a.prevention->stats();
        out.entries = s.entries;
        out.unknown = s.unknown;
        out.map_errors = s.map_errors;
        out.learnt_dests = s.learnt_dests;
        out.kills = s.kills;
        out.denied_files = s.denied_files;
        out.denied_file_errors = s.denied_file_errors;
        for (const auto& [key, n] : a.prevention->responses())
          out.responses.emplace_back(std::get<0>(key), std::get<1>(key), std::get<2>(key), n);
      }
      if (a.response_caps) out.capable = {{"kill", a.response_caps->kill}, {"freeze", a.response_caps->freeze}};
      return out;
    };
  }
  v.health = [&health] { return health.verdict(); };
  v.ready = [&r = *a.runner] {
    metrics::Verdict out;
    if (!r.status().running) {
      out.ok = false;
      out.reasons.push_back("starting or stopping: the event loop is not running");
    }
    return out;
  };
  v.counters = &a.counters;

  metrics::Handlers h;
  h.metrics = [v] { return metrics::scrape(v); };
  h.health = [&health] { return health.verdict(); };
  h.ready = v.ready;
  h.sample = [&a, &health] {
    health.observe(a.runner->status(), a.pipe->stats().events, std::chrono::steady_clock::now());
  };
  return metrics::Server::start({cfg.listen, std::move(log)}, std::move(h));
}

}  // namespace vigil::agent
