// Step "reload" (SIGHUP, or a watched file changed): the configuration (same
// file, same -o) and the rules it names, with its append_output, then the
// outputs; in force together, or not at all. prepare runs on the runner's
// reload thread and changes nothing in the agent; commit runs on the loop
// thread, between two events.
// One reload at a time: the next starts after the commit.
#include "engine/agent/steps/steps.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/agent/baselines.h"
#include "engine/agent/config.h"
#include "engine/agent/live_sources.h"
#include "engine/agent/rules_load.h"
#include "engine/baseline/store.h"
#include "engine/config/config.h"
#include "engine/pipeline/aggregate.h"
#include "engine/sensor/sensor.h"
#include "engine/runtime/file_watch.h"
#include "outputs/router.h"

namespace vigil::agent::steps {
namespace {

// What a reload that succeeded puts in force, besides the rules.
struct Prepared {
  std::unique_ptr<outputs::Router::Plan> outputs;
  RuleCounts counts;
  std::vector<std::string> files;        // what the next reload reads
  std::string gaps;                      // what no live source gives the new rules (no sensor)
  std::optional<sensor::Config> sensor;  // what the sensor moves to
  std::set<event::Type> collected;
  rules::OpenPaths filtered;
};

// Keys a reload cannot change, logged (the rest of the configuration stays).
void warn_restart_keys(Agent& a, const YAML::Node& cfg) {
  std::string restart;
  for (const std::string& k : config::changed_keys(a.cfg_in_force, cfg, {"rules", "outputs", "append_output"})) {
    // The default aggregation is part of the rules a reload loads.
    if (k == "aggregation.window_s" || k == "aggregation.by") continue;
    restart += (restart.empty() ? "" : ", ") + k;
  }
  if (!restart.empty()) a.log->warn("reload: changed keys need a restart, kept as they are: {}", restart);
}

void commit(Agent& a, Prepared& p) {
  a.router->commit(std::move(p.outputs));
  // An output added or changed may want every repeat, or no longer.
  if (a.aggregator) a.aggregator->set_repeats_wanted(a.router->repeats_wanted());
  if (!p.gaps.empty()) a.log->warn("reload: {}", p.gaps);
  if (p.sensor && a.sensor) {
    // Between two events: the new rules judge the next one, and the sensor
    // collects what they need from it on.
    if (Status st = a.sensor->update(*p.sensor); !st) {
      a.log->error("reload: the sensor kept collecting for the old rules: {}", st.error().message);
    } else {
      a.collected_in_force = std::move(p.collected);
      a.filtered_in_force = std::move(p.filtered);
    }
  }
  a.enabled_in_force = p.counts.enabled;
  a.rules_in_force.set({p.counts.enabled, p.counts.skipped, p.counts.skipped_rules});
  if (a.watch && p.files != a.watched) a.watch->set_paths(p.files);
  a.watched = p.files;
  if (a.baselines) {  // SIGHUP also picks up profiles locked on disk
    std::vector<std::string> done;
    log_baseline_errors(a.baselines->pick_up(done), *a.log);
    for (const std::string& d : done) a.log->info("baseline: {}", d);
  }
}

}  // namespace

Result<runtime::Reloaded> reload(Agent& a, const std::atomic<bool>& cancel) {
  auto cfg = config_of(a.opts);
  if (!cfg) return cfg.error();
  warn_restart_keys(a, *cfg);
  auto paths = run_rule_paths(a.opts, *cfg);
  if (!paths) return paths.error();
  rules::LoadOptions opts = a.load_opts;
  opts.cancel = &cancel;
  if (Status s = set_prevention_mode(*cfg, opts); !s) return s.error();
  if (Status s = set_append_output(*cfg, config::config_origin(a.opts.config, a.opts.overrides), a.plugins.get(), opts);
      !s) {
    return s.error();
  }
  auto p = std::make_shared<Prepared>();
  auto loaded = load_rules_logged(*paths, *a.log, opts, &p->counts);
  if (!loaded) return loaded.error();
  p->counts.enabled_in_force = a.enabled_in_force;
  if (Status ok = check_rule_counts(p->counts, a.count_policy); !ok) return ok.error();
  if (a.sensor) {
    // The sensor loaded every program it can run here: it attaches the
    // hooks the new rules need and moves its open filter in the commit; it
    // refuses only what it cannot (then so does the reload, the old rules
    // running on).
    auto sources = run_sources_config(a, **loaded);
    if (!sources) return sources.error();
    if (std::string why = a.sensor->cannot_update(sources->sensor); !why.empty())
      return Error::runtime("the sensor cannot collect what the new rules need (" + why +
                            "); restart vigil to load them");
    p->sensor = sources->sensor;
    p->collected = (*loaded)->event_types();
    p->filtered = (*loaded)->open_paths();
  } else {
    p->gaps = sensor_gaps(a.collected_in_force, a.filtered_in_force, **loaded);
  }
  auto plan = a.router->prepare((*cfg)["outputs"]);
  if (!plan) return plan.error();
  p->outputs = std::move(*plan);
  p->files = watched_files(a.opts, *paths);
  runtime::Reloaded r;
  r.rules = *loaded;
  r.summary = "outputs: " + p->outputs->describe();
  r.commit = [&a, p] { commit(a, *p); };
  return r;
}

}  // namespace vigil::agent::steps
