// Step "build pipeline": the pipeline each command runs the loop over, with
// its taps. vigil run: the rules, alerts to the router through the metadata
// wait (an alert whose pod is not known yet waits k8s.metadata_wait_ms for
// it), the aggregation of repeated alerts (docs/outputs.md#aggregation), the
// baselines, and the counters (for the web server), the capture and the
// flight recorder.
// vigil capture: no rules, the capture tap records. vigil replay: a state
// that is not live, the capture file as the source, the selector, alerts to
// the router through the aggregation (none with --events; no metadata wait: a capture holds each pod
// where it reached the state live, so the replay's alerts name what the live
// run's did when they were made, and the output depends on nothing but the
// file) and the timeline.
#include "engine/agent/steps/steps.h"

#include <fstream>

#include "engine/agent/k8s.h"
#include "engine/agent/own_paths.h"
#include "engine/agent/posture_ecc.h"
#include "engine/agent/prevention.h"
#include "engine/agent/response_caps.h"
#include "engine/baseline/store.h"
#include "engine/capture/reader.h"
#include "engine/capture/timeline.h"
#include "engine/config/config.h"
#include "engine/pipeline/aggregate.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset.h"
#include "engine/state/k8s_config.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::agent::steps {
namespace {

// Alerts on the timeline (the rules run only on selected events).
struct TimelineAlerts final : pipeline::EventTap {
  explicit TimelineAlerts(capture::TimelineBuilder& t) : tl(t) {}
  void on_event(const event::Event&, const state::EvalContext&) override {}
  void on_alert(const event::Event& ev, const state::EvalContext&, event::Alert& a) override { tl.add_alert(ev, a); }
  capture::TimelineBuilder& tl;
};

// What prevention does on this node: the mode, the rules the kernel
// enforces by hook, those it cannot, and whether the kernel has BPF LSM.
std::string describe_prevention(const rules::Ruleset& rs, bool have_sensor) {
  std::size_t by_hook[5] = {};
  std::size_t alert_only = 0, responses = 0;
  for (const rules::PreventionRule& p : rs.prevention()) {
    if (!p.enabled) continue;
    if (p.responses != 0) ++responses;
    else if (!p.enforceable) ++alert_only;
  }
  for (const rules::PreventionRule* p : rules::enforced_slots(rs.prevention())) ++by_hook[static_cast<int>(p->hook)];
  std::string lsm;
  std::ifstream in("/sys/kernel/security/lsm");
  std::getline(in, lsm);
  const bool bpf_lsm = ("," + lsm + ",").find(",bpf,") != std::string::npos;
  return "mode " + std::string(rules::prevention_mode_name(rs.prevention_mode())) +
         "; in the kernel: " + std::to_string(by_hook[1]) + " device, " + std::to_string(by_hook[2]) +
         " destination, " + std::to_string(by_hook[3]) + " socket, " + std::to_string(by_hook[4]) + " exec rules" +
         (have_sensor ? "" : " (no sensor: nothing is refused)") + "; " + std::to_string(alert_only) +
         " deny rules the kernel cannot judge (alert only); " + std::to_string(responses) +
         " rules with responses; BPF LSM " + (bpf_lsm ? "enabled (not used yet)" : "not enabled (lsm=" + lsm + ")");
}

// The aggregation's bounds (aggregation.max_keys, max_keys_per_rule).
Result<pipeline::AggregatorOptions> aggregator_options(const YAML::Node& cfg) {
  pipeline::AggregatorOptions o;
  auto keys = config::get_or<std::uint64_t>(cfg, "aggregation.max_keys", o.max_keys);
  if (!keys) return keys.error();
  auto per_rule = config::get_or<std::uint64_t>(cfg, "aggregation.max_keys_per_rule", o.max_keys_per_rule);
  if (!per_rule) return per_rule.error();
  o.max_keys = static_cast<std::size_t>(*keys);
  o.max_keys_per_rule = static_cast<std::size_t>(*per_rule);
  return o;
}

// The aggregator, publishing its summaries to the router; it publishes
// repeats too while an output wants every alert.
Status make_aggregator(Agent& a) {
  auto opts = aggregator_options(a.cfg);
  if (!opts) return opts.error();
  outputs::Router* rt = a.router.get();
  a.aggregator = std::make_unique<pipeline::Aggregator>(*opts, [rt](std::shared_ptr<const event::Alert> al) {
    if (rt) rt->publish(std::move(al));
  });
  a.aggregator->set_repeats_wanted(rt != nullptr && rt->repeats_wanted());
  return {};
}

}  // namespace

Status build_pipeline(Agent& a) {
  outputs::Router* rt = a.router.get();
  pipeline::Publisher publish = [rt](std::shared_ptr<const event::Alert> al) { rt->publish(std::move(al)); };
  // Every alert goes through the metadata wait (it counts them by k8s.meta);
  // it waits only where pods come from somewhere (the API server, the
  // container runtime). Their feeds wake the loop, and the tick of that turn
  // releases the alerts of the pods they brought.
  auto wait = metadata_wait_options(a.cfg);
  if (!wait) return wait.error();
  if (!a.k8s && !a.cri) wait->wait = std::chrono::milliseconds(0);
  a.metadata_wait = std::make_unique<pipeline::MetadataWait>(*wait, *a.state, publish, [] {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  });
  if (a.metadata_wait->enabled()) {
    // Every turn of the loop (at least every RunnerOptions::max_wait): the
    // deadlines, and pods that reached the state by another way.
    a.runner->add_tick("metadata wait", std::chrono::nanoseconds(0),
                       [w = a.metadata_wait.get()](std::uint64_t) { w->tick(); });
  }
  // Windows close as the events' time passes their end, never by the clock:
  // what the live run sends is what a replay of its capture sends.
  if (Status s = make_aggregator(a); !s) return s;
  a.pipe = std::make_unique<pipeline::Pipeline>(
      pipeline::Deps{*a.state, publish, a.hostname, a.baselines.get(), a.metadata_wait.get(), a.aggregator.get()},
      a.ruleset);
  if (a.sensor) {
    // First among the taps: a container's entry reaches the kernel as soon
    // as its pod is known (a reload may bring rules with an action: the tap
    // does nothing while the rules in force have none).
    a.prevention = std::make_unique<PreventionTap>(a.sensor, *a.pipe, a.log.get());
    // The label and delete_pod responses go to the API server the pods come from.
    if (a.k8s) a.prevention->set_k8s(*a.k8s);
    a.pipe->add_tap(a.prevention.get());
  }
  if (a.ruleset && a.ruleset->has_prevention()) {
    // Kill and freeze happen on the node: say whether they can (response_caps.h).
    bool node_responses = false;
    for (const rules::PreventionRule& p : a.ruleset->prevention())
      node_responses =
          node_responses || (p.enabled && (p.responses & (rules::kResponseKill | rules::kResponseFreeze)) != 0);
    if (a.sensor && node_responses) a.response_caps = check_response_caps({});
    const std::string caps = a.response_caps ? "; " + describe(*a.response_caps) : "";
    a.log->info("prevention: {}{}", describe_prevention(*a.ruleset, a.sensor != nullptr), caps);
  }
  {
    a.pipe->set_prevention_handler([&a](rules::PreventionDecision& d, const state::EvalContext& ctx) {
      if (a.prevention) a.prevention->on_decision(d, ctx);
      a.log->debug("prevention: rule '{}': {} (pid {})", d.rule, d.outcome, d.pid);
    });
  }
  if (a.web.enabled) a.pipe->add_tap(&a.counters);
  if (a.posture_ecc) a.pipe->add_tap(a.posture_ecc.get());
  if (a.capture_tap) a.pipe->add_tap(a.capture_tap.get());
  if (a.recorder_tap) a.pipe->add_tap(a.recorder_tap.get());
  return {};
}

Status build_capture_pipeline(Agent& a) {
  a.pipe = std::make_unique<pipeline::Pipeline>(pipeline::Deps{*a.state, nullptr, a.hostname}, nullptr);
  if (a.posture_ecc) a.pipe->add_tap(a.posture_ecc.get());
  a.pipe->add_tap(a.capture_tap.get());
  return {};
}

Status build_replay_pipeline(Agent& a) {
  state::Config replay_state;
  replay_state.live = false;
  // As long as the live run kept a deleted pod and an exited process (the
  // same configuration).
  if (Status st = retention(a.cfg, replay_state); !st) return st;
  a.state = std::make_unique<state::State>(replay_state);
  // vigil.file judges paths by the replay's own configuration (-c, -r), as
  // `vigil run` with the same ones would (docs/fields.md).
  a.state->set_vigil_paths(own_paths(a.opts.config, a.rule_paths, a.cfg, ""));
  a.replay_sink = std::make_unique<runtime::StateApplier>(*a.state);
  auto source = std::make_unique<runtime::CaptureSource>(std::move(a.reader), *a.replay_sink, a.opts.replay);
  a.replay_source = source.get();
  a.runner->add_source(std::move(source));
  a.opts.select.filter = a.filter;
  a.selector = std::make_unique<runtime::ReplaySelector>(std::move(a.opts.select));
  outputs::Router* rt = a.router.get();
  if (Status s = make_aggregator(a); !s) return s;
  a.pipe =
      std::make_unique<pipeline::Pipeline>(pipeline::Deps{*a.state,
                                                          [rt](std::shared_ptr<const event::Alert> al) {
                                                            if (rt) rt->publish(std::move(al));
                                                          },
                                                          a.hostname, a.baselines.get(), nullptr, a.aggregator.get()},
                                           a.ruleset);
  a.pipe->set_selector(a.selector.get());
  if (a.timeline) {
    a.timeline_alerts = std::make_unique<TimelineAlerts>(*a.timeline);
    a.pipe->add_tap(a.timeline_alerts.get());
  }
  return {};
}

}  // namespace vigil::agent::steps
