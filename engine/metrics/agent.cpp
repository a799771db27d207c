#include "engine/metrics/agent.h"

#include <cmath>
#include <cstdio>

#include "engine/metrics/process_stats.h"
#include "outputs/transport.h"

namespace vigil::metrics {
namespace {

double d(std::uint64_t v) { return static_cast<double>(v); }

std::string_view health_name(source::EventSource::Health h) {
  switch (h) {
    case source::EventSource::Health::kRunning: return "running";
    case source::EventSource::Health::kDone: return "done";
    case source::EventSource::Health::kFailed: return "failed";
  }
  return "running";
}

void collect_loop(const runtime::LoopStatus& loop, Exposition& out) {
  out.family("vigil_source_events_total", "counter", "Events a source handed to the pipeline.");
  out.family("vigil_drops_total", "counter", "Events a source lost, by reason (docs/metrics.md lists the reasons).");
  out.family("vigil_source_up", "gauge", "1 while the source runs; 0 once it is done or failed.");
  out.family("vigil_source_backlog", "gauge",
             "What waits in the source's buffer now (the unit label says bytes or events).");
  out.family("vigil_source_backlog_capacity", "gauge", "The most the source's buffer holds.");
  out.family("vigil_ringbuf_fill_ratio", "gauge", "How full the BPF ring buffer is, 0 to 1.");
  for (const runtime::SourceStatus& s : loop.sources) {
    if (s.name.empty()) continue;
    out.sample("vigil_source_events_total", {{"source", s.name}}, d(s.events));
    for (const auto& [reason, n] : s.drops.by_reason) {
      out.sample("vigil_drops_total", {{"source", s.name}, {"reason", reason}}, d(n));
    }
    out.sample("vigil_source_up", {{"source", s.name}, {"state", health_name(s.health)}},
               s.health == source::EventSource::Health::kRunning ? 1 : 0);
    if (s.backlog) {
      out.sample("vigil_source_backlog", {{"source", s.name}, {"unit", s.backlog->unit}}, d(s.backlog->pending));
      out.sample("vigil_source_backlog_capacity", {{"source", s.name}, {"unit", s.backlog->unit}},
                 d(s.backlog->capacity));
      if (s.name == "bpf" && s.backlog->capacity > 0) {
        out.sample("vigil_ringbuf_fill_ratio", d(s.backlog->pending) / d(s.backlog->capacity));
      }
    }
  }
  out.family("vigil_loop_turns_total", "counter", "Turns of the event loop (it turns at least every 100 ms).");
  out.sample("vigil_loop_turns_total", d(loop.turns));
}

std::string bound(double le) {
  if (std::isinf(le)) return "+Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", le);
  return buf;
}

void collect_aggregation(const AggregationInfo& g, Exposition& out) {
  out.family("vigil_alerts_aggregated_total", "counter",
             "Repeats of a rule's alert counted into a summary instead of sent (docs/outputs.md#aggregation).");
  for (const RuleAggregation& r : g.rules)
    out.sample("vigil_alerts_aggregated_total", {{"rule", r.rule}}, d(r.counted));
  out.family("vigil_alert_summaries_total", "counter",
             "Summaries of repeated alerts published, by why their window ended (window: it passed; evicted: "
             "aggregation.max_keys or max_keys_per_rule; end: end of input or shutdown).");
  for (const RuleAggregation& r : g.rules) {
    out.sample("vigil_alert_summaries_total", {{"rule", r.rule}, {"reason", "window"}}, d(r.summaries_window));
    out.sample("vigil_alert_summaries_total", {{"rule", r.rule}, {"reason", "evicted"}}, d(r.summaries_evicted));
    out.sample("vigil_alert_summaries_total", {{"rule", r.rule}, {"reason", "end"}}, d(r.summaries_end));
  }
  out.family("vigil_aggregation_evictions_total", "counter",
             "Aggregation keys closed before their window ended because a bound was reached, by rule.");
  for (const RuleAggregation& r : g.rules) {
    out.sample("vigil_aggregation_evictions_total", {{"rule", r.rule}}, d(r.evicted));
  }
  out.family("vigil_aggregation_open_keys", "gauge", "Aggregation keys with an open window now.");
  out.sample("vigil_aggregation_open_keys", d(g.open));
}

void collect_metadata(const MetadataInfo& m, Exposition& out) {
  out.family("vigil_alerts_metadata_total", "counter",
             "Alerts published, by how complete their metadata was (k8s.meta: complete, incomplete, container, "
             "host).");
  out.sample("vigil_alerts_metadata_total", {{"metadata", "complete"}}, d(m.complete));
  out.sample("vigil_alerts_metadata_total", {{"metadata", "incomplete"}}, d(m.incomplete));
  out.sample("vigil_alerts_metadata_total", {{"metadata", "container"}}, d(m.container));
  out.sample("vigil_alerts_metadata_total", {{"metadata", "host"}}, d(m.host));
  out.family("vigil_alert_metadata_waits_total", "counter",
             "Alerts that waited for their pod, by how the wait ended (pod: it became known; timeout: "
             "k8s.metadata_wait_ms passed; evicted: k8s.metadata_wait_max_alerts were waiting; shutdown).");
  out.sample("vigil_alert_metadata_waits_total", {{"end", "pod"}}, d(m.resolved));
  out.sample("vigil_alert_metadata_waits_total", {{"end", "timeout"}}, d(m.timed_out));
  out.sample("vigil_alert_metadata_waits_total", {{"end", "evicted"}}, d(m.evicted));
  out.sample("vigil_alert_metadata_waits_total", {{"end", "shutdown"}}, d(m.flushed));
  out.family("vigil_alert_metadata_waiting", "gauge", "Alerts waiting for their pod now.");
  out.sample("vigil_alert_metadata_waiting", d(m.parked));
  out.family("vigil_alert_metadata_wait_seconds", "histogram", "How long alerts waited for their pod.");
  for (const auto& [le, n] : m.delay_buckets) {
    out.sample("vigil_alert_metadata_wait_seconds_bucket", {{"le", bound(le)}}, d(n));
  }
  out.sample("vigil_alert_metadata_wait_seconds_sum", m.delay_sum_s);
  out.sample("vigil_alert_metadata_wait_seconds_count", d(m.delay_count));
}

void collect_sinks(const std::vector<outputs::SinkStats>& sinks, Exposition& out) {
  out.family("vigil_sink_sent_total", "counter", "Alerts the output delivered.");
  out.family("vigil_sink_failed_total", "counter",
             "Alerts the output gave up on (rejected, retries exhausted, internal error).");
  out.family("vigil_sink_retried_total", "counter", "Send attempts that failed and were retried.");
  out.family("vigil_sink_dropped_total", "counter", "Alerts the output lost, by reason.");
  out.family("vigil_sink_errors_total", "counter", "Failed send attempts by cause.");
  out.family("vigil_sink_filtered_total", "counter",
             "Alerts not for this output (priority, rules, tags) or rate-limited.");
  out.family("vigil_sink_queue_depth", "gauge", "Alerts waiting in the output's memory queue.");
  out.family("vigil_sink_queue_bytes", "gauge", "Bytes waiting in the output's memory queue.");
  out.family("vigil_sink_spool_alerts", "gauge", "Alerts waiting in the output's disk spool.");
  out.family("vigil_sink_spooled_bytes", "gauge", "Bytes of the output's disk spool.");
  out.family("vigil_sink_spooled_total", "counter", "Alerts written to the output's disk spool.");
  out.family("vigil_sink_last_success_timestamp_seconds", "gauge",
             "When the output last delivered an alert, in seconds since the Unix epoch (0: never).");
  for (const outputs::SinkStats& s : sinks) {
    const Label sink{"sink", s.name};
    const Label type{"type", s.type};
    out.sample("vigil_sink_sent_total", {sink, type}, d(s.sent));
    out.sample("vigil_sink_failed_total", {sink, type}, d(s.failed));
    out.sample("vigil_sink_retried_total", {sink, type}, d(s.retried));
    for (std::size_t r = 0; r < outputs::kDropReasonCount; ++r) {
      out.sample("vigil_sink_dropped_total",
                 {sink, type, {"reason", outputs::drop_reason_name(static_cast<outputs::DropReason>(r))}},
                 d(s.drops[r]));
    }
    for (std::size_t c = 0; c < outputs::kErrorClassCount; ++c) {
      if (s.errors[c] == 0) continue;
      out.sample("vigil_sink_errors_total",
                 {sink, type, {"class", outputs::error_class_name(static_cast<outputs::ErrorClass>(c))}},
                 d(s.errors[c]));
    }
    out.sample("vigil_sink_filtered_total", {sink, type, {"why", "filter"}}, d(s.filtered));
    out.sample("vigil_sink_filtered_total", {sink, type, {"why", "rate_limit"}}, d(s.rate_limited));
    out.sample("vigil_sink_queue_depth", {sink, type}, d(s.queue_depth));
    out.sample("vigil_sink_queue_bytes", {sink, type}, d(s.queue_bytes));
    out.sample("vigil_sink_spool_alerts", {sink, type}, d(s.spool_depth));
    out.sample("vigil_sink_spooled_bytes", {sink, type}, d(s.spool_bytes));
    out.sample("vigil_sink_spooled_total", {sink, type}, d(s.spooled));
    out.sample("vigil_sink_last_success_timestamp_seconds", {sink, type},
               static_cast<double>(s.last_success_unix_ms) / 1000.0);
  }
}

}  // namespace

void collect_agent(const AgentView& v, Exposition& out) {
  out.family("vigil_build_info", "gauge", "Always 1; the version label says which vigil runs.");
  out.sample("vigil_build_info", {{"version", v.version}}, 1);
  if (v.health) {
    out.family("vigil_healthy", "gauge", "1 when /healthz answers ok (detection is not stuck).");
    out.sample("vigil_healthy", v.health().ok ? 1 : 0);
  }
  if (v.ready) {
    out.family("vigil_ready", "gauge", "1 when /readyz answers ready (probes attached, rules loaded).");
    out.sample("vigil_ready", v.ready().ok ? 1 : 0);
  }
  if (v.loop) collect_loop(v.loop(), out);
  if (v.counters) v.counters->collect(out);
  if (v.rules) {
    const RulesInfo r = v.rules();
    out.family("vigil_rules_loaded", "gauge", "Enabled rules in force.");
    out.sample("vigil_rules_loaded", d(r.loaded));
    out.family("vigil_rules_skipped", "gauge", "Rules left out of the set in force (unknown fields or sources).");
    out.sample("vigil_rules_skipped", d(r.skipped));
    out.family("vigil_rule_skipped", "gauge", "1 for each rule left out of the set in force, and why.");
    for (std::size_t i = 0; i < r.skipped_rules.size() && i < kMaxSkippedRuleSeries; ++i) {
      out.sample("vigil_rule_skipped", {{"rule", r.skipped_rules[i].first}, {"reason", r.skipped_rules[i].second}}, 1);
    }
  }
  if (v.sequences) {
    out.family(
        "vigil_sequence_evictions_total", "counter",
        "Partial matches of a sequence rule dropped before its last step, by reason (expired: its window passed; capacity: the table was full).");
    for (const SequenceEvictions& s : v.sequences()) {
      out.sample("vigil_sequence_evictions_total", {{"sequence", s.sequence}, {"reason", "expired"}}, d(s.expired));
      out.sample("vigil_sequence_evictions_total", {{"sequence", s.sequence}, {"reason", "capacity"}}, d(s.capacity));
    }
  }
  if (v.baselines) {
    const BaselineInfo b = v.baselines();
    out.family("vigil_baseline_workloads", "gauge", "Workload profiles held, by state (learning, locked).");
    out.sample("vigil_baseline_workloads", {{"state", "learning"}}, d(b.learning));
    out.sample("vigil_baseline_workloads", {{"state", "locked"}}, d(b.locked));
    out.family("vigil_baseline_workloads_refused_total", "counter",
               "Containers left without a profile because baseline.max_workloads was reached.");
    out.sample("vigil_baseline_workloads_refused_total", d(b.workloads_refused));
    out.family("vigil_baseline_not_learnt_total", "counter",
               "Facts a learning profile did not take because that set was full (baseline.max_<set>), by set.");
    for (const auto& [set, n] : b.not_learnt) out.sample("vigil_baseline_not_learnt_total", {{"set", set}}, d(n));
    out.family("vigil_baseline_files_refused_total", "counter",
               "Profile files refused (corrupt, oversized, over a cap).");
    out.sample("vigil_baseline_files_refused_total", d(b.files_refused));
    out.family("vigil_baseline_save_failures_total", "counter", "Profile files that could not be written.");
    out.sample("vigil_baseline_save_failures_total", d(b.save_failures));
  }
  if (v.metadata) collect_metadata(v.metadata(), out);
  if (v.aggregation) collect_aggregation(v.aggregation(), out);
  if (v.reloads) {
    const runtime::ReloadStats r = v.reloads();
    out.family("vigil_reloads_total", "counter", "Reloads of rules and outputs (SIGHUP or a watched file), by result.");
    out.sample("vigil_reloads_total", {{"result", "success"}}, d(r.succeeded));
    out.sample("vigil_reloads_total", {{"result", "failure"}}, d(r.failed));
    out.family(
        "vigil_last_reload_success", "gauge",
        "1 when the last reload succeeded (or none happened); 0 when it failed and the previous set stays in force.");
    out.sample("vigil_last_reload_success", r.last_ok ? 1 : 0);
    out.family("vigil_last_reload_timestamp_seconds", "gauge",
               "When the last reload ended, in seconds since the Unix epoch (0: none).");
    out.sample("vigil_last_reload_timestamp_seconds", static_cast<double>(r.last_unix_s));
  }
  if (v.sinks) collect_sinks(v.sinks(), out);
  if (v.parts) {
    out.family("vigil_part_enabled", "gauge",
               "1 when the part runs; 0 when it is off (a capability or mount is missing).");
    for (const runtime::PartState& p : v.parts()) out.sample("vigil_part_enabled", {{"part", p.name}}, p.on ? 1 : 0);
  }
  if (v.k8s) {
    if (auto k = v.k8s()) {
      out.family("vigil_k8s_synced", "gauge", "1 once a LIST of this node's pods succeeded.");
      out.sample("vigil_k8s_synced", k->synced ? 1 : 0);
      out.family("vigil_k8s_watch_up", "gauge", "1 while a WATCH of this node's pods is open.");
      out.sample("vigil_k8s_watch_up", k->watching ? 1 : 0);
      out.family("vigil_k8s_pods", "gauge", "Pods of this node that vigil knows.");
      out.sample("vigil_k8s_pods", d(k->pods));
      out.family("vigil_k8s_watch_events_total", "counter", "Pod watch events applied.");
      out.sample("vigil_k8s_watch_events_total", d(k->watch_events));
      out.family("vigil_k8s_errors_total", "counter", "Failed requests to the Kubernetes API or the kubelet.");
      out.sample("vigil_k8s_errors_total", d(k->errors));
      out.family("vigil_k8s_relists_total", "counter",
                 "Relists after the watch's resource version expired (410 Gone).");
      out.sample("vigil_k8s_relists_total", d(k->relists));
      out.family("vigil_k8s_tls_verified", "gauge",
                 "1 when the API server's certificate is verified; 0 when a kubeconfig turned verification off.");
      out.sample("vigil_k8s_tls_verified", k->tls_verified ? 1 : 0);
    }
  }
  if (v.process_table) {
    const ProcessTableInfo t = v.process_table();
    out.family("vigil_state_exited_processes", "gauge",
               "Exited processes kept for the events that arrive about them late (Xid lines, plugin events, GPU "
               "usage reports), within state.process_grace_s.");
    out.sample("vigil_state_exited_processes", d(t.exited_kept));
    out.family("vigil_state_exited_processes_forgotten_total", "counter",
               "Exited processes forgotten, by reason (grace: their grace period ended; capacity: "
               "state.max_exited_processes were kept, the one that exited first went early).");
    out.sample("vigil_state_exited_processes_forgotten_total", {{"reason", "grace"}}, d(t.exited_expired));
    out.sample("vigil_state_exited_processes_forgotten_total", {{"reason", "capacity"}}, d(t.exited_evicted));
    out.family("vigil_state_late_events_total", "counter",
               "Events about a process that had already exited (an Xid line, a plugin event, a GPU usage report) "
               "that still named it, its container and its pod.");
    out.sample("vigil_state_late_events_total", d(t.late_events));
  }
  if (v.prevention) {
    const PreventionInfo p = v.prevention();
    out.family("vigil_prevention_mode", "gauge", "The configuration's prevention.mode (off, monitor, enforce): 1.");
    out.sample("vigil_prevention_mode", {{"mode", p.mode}}, 1);
    out.family(
        "vigil_prevention_decisions_total", "counter",
        "Prevention decisions by rule and outcome: prevented (the kernel refused, or killed at exec), "
        "would_prevent (monitor mode), not_prevented (enforce mode, but the container's pod was not known "
        "yet or the kernel let the call through), respond (a response was asked for: kill, freeze, label, delete_pod), would_respond (the same in monitor mode).");
    for (const auto& [rule, outcome, n] : p.decisions)
      out.sample("vigil_prevention_decisions_total", {{"rule", rule}, {"outcome", outcome}}, d(n));
    out.family("vigil_prevention_kernel_refusals_total", "counter",
               "Calls the kernel refused (or programs it killed at exec), by rule, counted in the kernel.");
    for (const auto& [rule, n] : p.refusals)
      out.sample("vigil_prevention_kernel_refusals_total", {{"rule", rule}}, d(n));
    out.family("vigil_prevention_containers_total", "counter",
               "Containers' entries in the kernel's policy map by result: written; unknown (an event of a container "
               "whose pod is not known: nothing is refused for it); map_error (no room: never refused).");
    out.sample("vigil_prevention_containers_total", {{"result", "written"}}, d(p.entries));
    out.sample("vigil_prevention_containers_total", {{"result", "unknown"}}, d(p.unknown));
    out.sample("vigil_prevention_containers_total", {{"result", "map_error"}}, d(p.map_errors));
    out.family("vigil_prevention_learnt_destinations_total", "counter",
               "Addresses of denied names learnt from DNS answers and given to the kernel.");
    out.sample("vigil_prevention_learnt_destinations_total", d(p.learnt_dests));
    out.family("vigil_prevention_kills_total", "counter", "Kill responses carried out.");
    out.sample("vigil_prevention_kills_total", d(p.kills));
    out.family("vigil_prevention_denied_files_total", "counter",
               "Program files that rules deny by identity (proc.exe_sha256, proc.exe_build_id), given to the kernel "
               "once identified, by result: written (their later execs are killed at exec); map_error (the map is "
               "full: they are killed only after identification).");
    out.sample("vigil_prevention_denied_files_total", {{"result", "written"}}, d(p.denied_files));
    out.sample("vigil_prevention_denied_files_total", {{"result", "map_error"}}, d(p.denied_file_errors));
    out.family("vigil_prevention_responses_total", "counter",
               "Responses carried out (kill: signalled; freeze: cgroup.freeze or freezer.state written; label, "
               "delete_pod: the API server answered 2xx), by rule and response.");
    for (const auto& [rule, response, result, n] : p.responses)
      if (result == "done")
        out.sample("vigil_prevention_responses_total", {{"rule", rule}, {"response", response}}, d(n));
    out.family("vigil_prevention_response_failures_total", "counter",
               "Responses not carried out, by rule, response and reason: refused (a safety rule: pid 1, vigil, the "
               "host, a pod or cgroup vigil does not know), error (the signal, the cgroup write or the API call "
               "failed), dropped (the API request queue was full), no_api (no API server configured).");
    for (const auto& [rule, response, result, n] : p.responses)
      if (result != "done")
        out.sample("vigil_prevention_response_failures_total",
                   {{"rule", rule}, {"response", response}, {"reason", result}}, d(n));
    if (!p.capable.empty()) {
      out.family("vigil_prevention_response_capable", "gauge",
                 "Whether vigil can carry the response out on this node (checked at start): kill, CAP_KILL held; "
                 "freeze, the cgroup filesystem writable. 1 yes, 0 no.");
      for (const auto& [response, ok] : p.capable)
        out.sample("vigil_prevention_response_capable", {{"response", response}}, ok ? 1 : 0);
    }
  }
  if (v.posture) {
    if (auto p = v.posture()) {
      auto known = [](const std::string& s) { return s.empty() ? std::string("unknown") : s; };
      out.family("vigil_gpu_posture_info", "gauge",
                 "The node's NVIDIA driver and Container Toolkit versions and the runtime the toolkit runs "
                 "(unknown: not found on the host).");
      out.sample("vigil_gpu_posture_info",
                 {{"driver", known(p->driver)}, {"toolkit", known(p->toolkit)}, {"runtime", known(p->runtime)}}, 1);
      out.family("vigil_gpu_posture_vulnerabilities", "gauge",
                 "CVEs of NVIDIA's bulletins whose first fixed version is newer than the installed driver or toolkit.");
      out.sample("vigil_gpu_posture_vulnerabilities", d(p->vulnerable.size()));
      out.family("vigil_gpu_posture_vulnerable", "gauge",
                 "1 for each CVE the installed driver or toolkit is exposed to.");
      for (const auto& [cve, component] : p->vulnerable) {
        out.sample("vigil_gpu_posture_vulnerable", {{"cve", cve}, {"component", component}}, 1);
      }
      out.family("vigil_gpu_posture_setting", "gauge",
                 "The driver's and the toolkit's security settings: 1 on, 0 off, -1 not known (profiling_admin_only: "
                 "RmProfilingAdminOnly; accept_envvar: accept-nvidia-visible-devices-envvar-when-unprivileged; "
                 "cuda_compat_hook: the enable-cuda-compat hook runs; ecc: every GPU with ECC memory has it on, "
                 "from the nvml plugin).");
      out.sample("vigil_gpu_posture_setting", {{"setting", "profiling_admin_only"}}, p->profiling_admin_only);
      out.sample("vigil_gpu_posture_setting", {{"setting", "accept_envvar"}}, p->accept_envvar);
      out.sample("vigil_gpu_posture_setting", {{"setting", "cuda_compat_hook"}}, p->cuda_compat_hook);
      out.sample("vigil_gpu_posture_setting", {{"setting", "ecc"}}, p->ecc);
      if (!p->ecc_gpus.empty()) {
        out.family("vigil_gpu_posture_ecc", "gauge",
                   "1 for each GPU, with its ECC mode now (current) and after its next reboot (pending): on, off, "
                   "unsupported (no ECC memory) or unknown; read by the nvml plugin.");
        for (const auto& g : p->ecc_gpus) {
          out.sample("vigil_gpu_posture_ecc",
                     {{"gpu", g.gpu}, {"uuid", known(g.uuid)}, {"current", g.current}, {"pending", g.pending}}, 1);
        }
      }
    }
  }
  if (v.cri) {
    const CriInfo c = v.cri();
    out.family("vigil_cri_lookups_total", "counter",
               "New containers the container runtime was asked about, by result (found: it named the pod; "
               "not_found; gave_up: every call failed; dropped: the queue was full, not asked).");
    out.sample("vigil_cri_lookups_total", {{"result", "found"}}, d(c.found));
    out.sample("vigil_cri_lookups_total", {{"result", "not_found"}}, d(c.not_found));
    out.sample("vigil_cri_lookups_total", {{"result", "gave_up"}}, d(c.gave_up));
    out.sample("vigil_cri_lookups_total", {{"result", "dropped"}}, d(c.dropped));
    out.family("vigil_cri_errors_total", "counter", "Failed calls to the container runtime's CRI socket.");
    out.sample("vigil_cri_errors_total", d(c.errors));
    out.family("vigil_cri_pending", "gauge", "Containers waiting to be asked about.");
    out.sample("vigil_cri_pending", d(c.pending));
  }
}

std::string scrape(const AgentView& v) {
  Exposition out;
  collect_agent(v, out);
  collect_process(out);
  return out.text();
}

}  // namespace vigil::metrics
