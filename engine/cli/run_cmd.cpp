#include "engine/cli/run_cmd.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "engine/capture/flight_recorder.h"
#include "engine/capture/writer.h"
#include "engine/cli/baseline_cmd.h"
#include "engine/cli/common.h"
#include "engine/cli/config.h"
#include "engine/cli/parts.h"
#include "engine/cli/heartbeat.h"
#include "engine/cli/plugins.h"
#include "engine/cli/webserver.h"
#include "engine/metrics/event_counters.h"
#include "engine/metrics/health.h"
#include "engine/runtime/parts.h"
#include "engine/pipeline/pipeline.h"
#include "engine/runtime/parts.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/file_watch.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "engine/util/safe_file.h"
#include "engine/util/version.h"
#include "outputs/router.h"

namespace vigil::cli {
namespace {

// The longest a load of the rules may take, at start and on SIGHUP
// (docs/rules.md, "Limits").
constexpr std::chrono::seconds kRulesCompileBudget{60};

struct RunArgs {
  std::vector<std::string> rules;
  std::string config;
  std::vector<std::string> overrides;
  std::string format;
  std::string capture;
  K8sFlags k8s;
  std::string log_level = "info";
  bool allow_no_rules = false;
  double max_skipped_percent = 50;
};

// The configuration of a run, at start and at each reload: the file with
// the -o overrides and, when it has no outputs:, the --format stdout output.
Result<YAML::Node> run_config(const RunArgs& args) {
  auto cfg = load_config_with_overrides(args.config, args.overrides);
  if (!cfg) return cfg.error();
  if (!args.format.empty() && !(*cfg)["outputs"]) {
    YAML::Node out;
    out["type"] = "stdout";
    out["format"] = args.format;
    (*cfg)["outputs"].push_back(out);
  }
  return cfg;
}

// -r, else rules: from the configuration, else the bundled rules.
Result<std::vector<std::string>> run_rule_paths(const RunArgs& args, const YAML::Node& cfg) {
  if (!args.rules.empty()) return args.rules;
  auto from_cfg = config_rule_paths(cfg);
  if (!from_cfg) return from_cfg.error();
  if (!from_cfg->empty()) return from_cfg;
  std::string bundled = find_bundled_rules();
  if (bundled.empty()) return Error::bad_input("no rules given (-r) and no bundled rules directory found");
  return std::vector<std::string>{bundled};
}

// What a reload reads: the configuration file and the rule paths.
std::vector<std::string> watched_files(const RunArgs& args, const std::vector<std::string>& rule_paths) {
  std::vector<std::string> out = rule_paths;
  if (!args.config.empty()) out.insert(out.begin(), args.config);
  return out;
}

// A change of a watched file reloads, as SIGHUP does, once the writes have
// settled (runtime/file_watch.h).
Status watch_files(runtime::Runner& runner, const std::vector<std::string>& files,
                   std::unique_ptr<runtime::FileWatch>& watch, const std::shared_ptr<spdlog::logger>& log) {
  auto w = runtime::FileWatch::create({.log = log});
  if (!w) return w.error();
  (*w)->set_paths(files);
  runtime::FileWatch* raw = w->get();
  if (Status s = runner.add_fd("file watch", raw->fd(),
                               [raw] { raw->on_readable(runtime::FileWatch::Clock::now()); });
      !s) {
    return s;
  }
  runner.add_tick("file watch", std::chrono::milliseconds(100), [raw, &runner](std::uint64_t) {
    if (auto what = raw->changed(runtime::FileWatch::Clock::now())) runner.request_reload(*what + " changed");
  });
  watch = std::move(*w);
  return {};
}

}  // namespace

int cmd_run(int argc, char** argv) {
  RunArgs args;
  CLI::App app("Live monitoring: loads the rules, attaches the probes, and sends alerts to the outputs "
               "(stdout by default) until SIGINT/SIGTERM. SIGHUP, or a change of the configuration or rule "
               "files, reloads the rules and outputs.",
               "vigil run");
  one_value_each(app, "-r,--rules", args.rules, "rule file or directory (repeatable; default: the bundled rules)");
  app.add_option("-c,--config", args.config, "configuration file (outputs, k8s, sensor, flight recorder, plugins)")
      ->type_name("FILE");
  app.add_option("-o", args.overrides, "override a configuration key (e.g. -o outputs.0.format=text)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  app.add_option("--format", args.format, "format of the default stdout output (default json)")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--capture", args.capture, "also record every event to a capture file (see vigil replay)")
      ->type_name("FILE");
  add_k8s_flags(app, args.k8s);
  app.add_option("--log-level", args.log_level, "trace, debug, info, warn, error (default info)")
      ->type_name("LEVEL");
  app.add_flag("--allow-no-rules", args.allow_no_rules,
               "run even when no rule is enabled (otherwise that is an error, exit 2, and a reload "
               "that would leave none keeps the rules in force)");
  app.add_option("--max-skipped-rules", args.max_skipped_percent,
                 "a reload whose skipped rules (unknown fields or sources) would leave more than this "
                 "percentage of the enabled rules out keeps the rules in force (default 50)")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PERCENT");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;

  auto log = make_logger("vigil", args.log_level);

  // The loop first: it blocks the signals before any thread starts (output
  // workers, the pod watcher), so every thread inherits the mask.
  std::vector<std::string> rule_paths;  // the rules loaded at start
  // Declared before the runner: its plugin sources and the rules' plugin
  // fields point into the host, which must outlive both.
  std::unique_ptr<plugin::Host> plugins;
  rules::LoadOptions load_opts;
  load_opts.compile_budget = kRulesCompileBudget;
  const RuleCountPolicy count_policy{args.allow_no_rules, args.max_skipped_percent / 100.0};
  // Enabled rules of the set in force; written by the start and by the
  // commit of each reload that succeeds.
  std::size_t enabled_in_force = 0;
  // The same counts for /metrics (written at start and by each reload's commit).
  metrics::RulesInForce rules_in_force;
  // Set before the loop runs; a reload reads them on the runner's reload
  // thread and changes them only in its commit, on the loop thread, so the
  // two never overlap (one reload at a time, the next starts after the commit).
  YAML::Node cfg_in_force;
  outputs::Router* router_in_force = nullptr;
  std::unique_ptr<runtime::FileWatch> watch;
  std::vector<std::string> watched;
  // Per-workload baselines (off unless baseline.enabled): the store, and the
  // watch on its directory that picks up `vigil baseline lock`.
  std::unique_ptr<baseline::Store> baselines;
  std::unique_ptr<runtime::FileWatch> baseline_watch;
  // What the sensor was set up for at start (a reload cannot change it).
  std::set<event::Type> collected_in_force;
  rules::OpenPaths filtered_in_force;
  runtime::RunnerOptions ropts;
  ropts.log = log;
  // SIGHUP or a watched file changed: the configuration (same file, same -o)
  // and the rules it names, then the outputs; in force together, or not at all.
  ropts.reload = [&](const std::atomic<bool>& cancel) -> Result<runtime::Reloaded> {
    auto cfg = run_config(args);
    if (!cfg) return cfg.error();
    std::string restart;
    for (const std::string& k : changed_keys(cfg_in_force, *cfg, {"rules", "outputs"})) {
      restart += (restart.empty() ? "" : ", ") + k;
    }
    if (!restart.empty()) log->warn("reload: changed keys need a restart, kept as they are: {}", restart);
    auto paths = run_rule_paths(args, *cfg);
    if (!paths) return paths.error();
    rules::LoadOptions opts = load_opts;
    opts.cancel = &cancel;
    RuleCounts counts;
    auto loaded = load_rules_logged(*paths, *log, opts, &counts);
    if (!loaded) return loaded.error();
    counts.enabled_in_force = enabled_in_force;
    if (Status ok = check_rule_counts(counts, count_policy); !ok) return ok.error();
    std::string gaps = sensor_gaps(collected_in_force, filtered_in_force, **loaded);
    auto plan = router_in_force->prepare((*cfg)["outputs"]);
    if (!plan) return plan.error();
    runtime::Reloaded r;
    r.rules = *loaded;
    r.summary = "outputs: " + (*plan)->describe();
    auto held = std::make_shared<std::unique_ptr<outputs::Router::Plan>>(std::move(*plan));
    r.commit = [&, held, enabled = counts.enabled, skipped = counts.skipped,
                skipped_rules = counts.skipped_rules, files = watched_files(args, *paths), gaps] {
      router_in_force->commit(std::move(*held));
      if (!gaps.empty()) log->warn("reload: {}", gaps);
      enabled_in_force = enabled;
      rules_in_force.set({enabled, skipped, skipped_rules});
      if (watch && files != watched) watch->set_paths(files);
      watched = files;
      if (baselines) {  // SIGHUP also picks up profiles locked on disk
        std::vector<std::string> done;
        log_baseline_errors(baselines->pick_up(done), *log);
        for (const std::string& d : done) log->info("baseline: {}", d);
      }
    };
    return r;
  };
  auto runner_r = runtime::Runner::create(ropts);
  if (!runner_r) return fail(*log, runner_r.error());
  runtime::Runner& runner = **runner_r;

  // 1. Configuration (bad input → 2).
  auto cfg = run_config(args);
  if (!cfg) return fail(*log, cfg.error());
  auto web = webserver_config(*cfg);
  if (!web) return fail(*log, web.error());
  auto heartbeat_every = heartbeat_interval(*cfg);
  if (!heartbeat_every) return fail(*log, heartbeat_every.error());
  cfg_in_force = YAML::Clone(*cfg);

  // 2. Plugins (bad input → 2, a failed init → 1): their fields and sources
  //    are known before the rules compile.
  auto host = load_plugins(*cfg, args.config, log, /*init=*/true);
  if (!host) return fail(*log, host.error());
  plugins = std::move(*host);
  plugins->configure(load_opts);

  // 3. Rules (bad input → 2).
  auto paths = run_rule_paths(args, *cfg);
  if (!paths) return fail(*log, paths.error());
  rule_paths = *paths;
  RuleCounts counts;
  auto loaded = load_rules_logged(rule_paths, *log, load_opts, &counts);
  if (!loaded) return fail(*log, loaded.error());
  if (Status ok = check_rule_counts(counts, count_policy); !ok) {
    std::string from;
    for (const auto& p : rule_paths) from += (from.empty() ? "" : ", ") + p;
    return fail(*log, Error::bad_input("rules from " + from + ": " + ok.error().message));
  }
  if (counts.enabled == 0) log->warn("no enabled rule: vigil detects nothing until a reload adds some (--allow-no-rules)");
  enabled_in_force = counts.enabled;
  rules_in_force.set({counts.enabled, counts.skipped, counts.skipped_rules});
  std::shared_ptr<const rules::Ruleset> ruleset = *loaded;

  // 4. Outputs.
  const std::string hostname = host_name(*cfg);
  auto state_dir = get_or<std::string>(*cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return fail(*log, state_dir.error());
  outputs::RouterOptions routeropts;
  routeropts.hostname = hostname;
  routeropts.log = log;
  routeropts.state_dir = *state_dir;  // spools live under <state_dir>/spool
  auto router = outputs::Router::from_config((*cfg)["outputs"], routeropts);
  if (!router) return fail(*log, router.error());
  router_in_force = router->get();
  auto stop_outputs = [&](int rc) {
    (*router)->shutdown(std::chrono::milliseconds(1000));
    return rc;
  };

  // 5. State, seeded from /proc; pods from the Kubernetes API, when there is one.
  //    Each part that needs a capability or a mount says whether it runs (parts.h).
  runtime::Parts parts;
  state::State st(state::Config{});
  seed_state(st, *log, parts);
  auto k8s = discover_k8s(*cfg, args.k8s, *log, parts);
  if (!k8s) return stop_outputs(fail(*log, k8s.error()));
  std::unique_ptr<state::PodWatcher> pods;
  if (*k8s) {
    auto w = watch_pods(**k8s, st, runner, *log, parts);
    if (!w) return stop_outputs(fail(*log, w.error()));
    pods = std::move(*w);
  }

  // 6. Recording: a capture of the whole run (--capture) and the flight
  //    recorder around alerts. Both are state listeners, through one fanout.
  runtime::ListenerFanout listeners;
  std::unique_ptr<capture::CaptureWriter> writer;
  std::unique_ptr<runtime::CaptureTap> capture_tap;
  if (!args.capture.empty()) {
    auto w = capture::CaptureWriter::open(args.capture, capture_writer_options(hostname, st));
    if (!w) return stop_outputs(fail(*log, w.error()));
    writer = std::move(*w);
    listeners.add(writer.get());
    capture_tap = std::make_unique<runtime::CaptureTap>(*writer);
    add_capture_tick(runner, *writer, *capture_tap, [&](const Error& e) {
      log->error("capture to {} stopped (detection goes on): {}", args.capture, e.message);
    });
    log->info("recording events to {}", args.capture);
  }
  auto fr_opts = flight_recorder_options(*cfg, *state_dir);
  if (!fr_opts) return stop_outputs(fail(*log, fr_opts.error()));
  std::unique_ptr<capture::FlightRecorder> recorder;
  std::unique_ptr<runtime::FlightRecorderTap> recorder_tap;
  if (fr_opts->enabled) {
    // 0700 whatever the umask; a directory others could write to is refused
    // (exit 2), one that cannot be made only turns the recorder off.
    Status made = util::make_dirs(fr_opts->dir, util::kDirMode);
    if (!made && made.error().kind == Error::Kind::kBadInput) {
      return stop_outputs(fail(*log, Error::bad_input("flight recorder: " + made.error().message)));
    }
    if (!made) {
      log->warn("flight recorder off: cannot create {}: {}", fr_opts->dir, made.error().message);
    } else {
      fr_opts->info = capture::describe_host();
      fr_opts->info.hostname = hostname;
      recorder = std::make_unique<capture::FlightRecorder>(*fr_opts);
      listeners.add(recorder.get());
      recorder_tap = std::make_unique<runtime::FlightRecorderTap>(*recorder, st);
    }
  }
  st.set_listener(&listeners);

  // 7. Probes and plugin sources: each that cannot run is left out; with none
  //    at all, runtime failure → 1.
  auto sources = live_sources_config(*cfg, ruleset->event_types(), ruleset->open_paths());
  if (!sources) return stop_outputs(fail(*log, sources.error()));
  collected_in_force = ruleset->event_types();
  filtered_in_force = ruleset->open_paths();
  // vigil's own files and directories (vigil.file): the rules judge them;
  // the sensor sends the write opens of its files (not of what is inside its
  // directories: docs/events.md, "open").
  st.set_vigil_paths(own_paths(args.config, rule_paths, *cfg, args.capture));
  // The rules' paths come first: own files only take the slots they leave
  // (a rule set that fit before still starts).
  std::size_t slots = ruleset->open_paths().size();
  std::string left_out;
  for (const std::string& f : own_files(args.config, rule_paths, args.capture)) {
    if (slots < sensor::kOpenPathSlots && f.size() < sensor::kOpenPathMaxLen) {
      sources->sensor.own_files.push_back(f);
      ++slots;
    } else {
      left_out += (left_out.empty() ? "" : ", ") + f;
    }
  }
  if (!left_out.empty()) {
    log->warn("open filter: write opens of {} are not seen (vigil.file; the filter has {} paths of fewer than "
              "{} bytes, and the rules' come first)",
              left_out, sensor::kOpenPathSlots, sensor::kOpenPathMaxLen);
  }
  if (ruleset->open_any_path()) {
    std::string names;
    for (const auto& n : ruleset->open_unfiltered_rules()) names += (names.empty() ? "'" : ", '") + n + "'";
    log->warn("open rules the sensor cannot pre-filter by path see device nodes and the other rules' "
              "paths only (docs/events.md, \"open\"): {}", names);
  }
  if (Status s = add_live_sources(runner, *sources, parts, *log); !s) return stop_outputs(fail(*log, s.error()));
  // A plugin's source is not essential: if it fails, detection goes on without it.
  auto plugin_sources = plugins->start_sources(plugin::SourceOptions{});
  if (!plugin_sources) return stop_outputs(fail(*log, plugin_sources.error()));
  add_plugin_sources(runner, std::move(*plugin_sources), parts, *log);
  if (Status s = require_an_event_source(parts.snapshot()); !s) return stop_outputs(fail(*log, s.error()));

  // 7b. Baselines, when enabled (bad input → 2: an unsafe directory).
  auto bl = baseline_settings(*cfg, *state_dir);
  if (!bl) return stop_outputs(fail(*log, bl.error()));
  if (bl->enabled) {
    auto started = start_baselines(*bl, runner, baseline_watch, log);
    if (!started && started.error().kind == Error::Kind::kBadInput) return stop_outputs(fail(*log, started.error()));
    if (!started) {
      log->error("baselines off: {}", started.error().message);
      parts.set({"baseline", false, "a writable baseline.dir", started.error().message});
    } else {
      baselines = std::move(*started);
      parts.set({"baseline", true, "a writable baseline.dir", ""});
    }
  }

  outputs::Router* rt = router->get();
  pipeline::Pipeline pipe(
      {st, [rt](std::shared_ptr<const event::Alert> a) { rt->publish(std::move(a)); }, hostname, baselines.get()},
      ruleset);
  metrics::EventCounters counters;  // counts only for the webserver: no cost when it is off
  if (web->enabled) pipe.add_tap(&counters);
  if (capture_tap) pipe.add_tap(capture_tap.get());
  if (recorder_tap) pipe.add_tap(recorder_tap.get());

  // The files a reload reads, watched: a change (an edit, a ConfigMap
  // update) reloads as SIGHUP does.
  watched = watched_files(args, rule_paths);
  if (Status s = watch_files(runner, watched, watch, log); !s) {
    log->warn("file watch off (SIGHUP still reloads): {}", s.error().message);
  }

  std::string hooks;
  for (const std::string& h : runner.attached()) hooks += (hooks.empty() ? "" : ",") + h;
  const std::string off = parts_off(parts.snapshot());
  log->info("ready: {} rules loaded from {} path(s), probes attached: {}; parts off: {}", ruleset->size(),
            rule_paths.size(), hooks, off.empty() ? "none" : off);

  // 8. The metrics and health endpoint, then the loop until a signal or a
  //    failed source.
  std::atomic<std::uint64_t> pods_known{0};
  runner.add_tick("pod count", std::chrono::seconds(1),
                  [&](std::uint64_t) { pods_known.store(st.pod_count(), std::memory_order_relaxed); });
  if (heartbeat_every->count() > 0) {
    // From the loop itself: a stuck or blinded agent stops sending them.
    const auto started = std::chrono::steady_clock::now();
    runner.add_tick("heartbeat", *heartbeat_every, [&, started, seq = std::uint64_t{0}](std::uint64_t) mutable {
      HeartbeatInfo h;
      h.now_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
      h.hostname = hostname;
      h.version = kVersion;
      h.uptime_s = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
      const auto ps = pipe.stats();
      h.events = ps.events;
      h.alerts = ps.alerts;
      h.drops = (*router)->drops_total();
      for (const auto& s : runner.status().sources) h.drops += s.drops.total();
      h.rules = rules_in_force.get().loaded;
      const std::string off = parts_off(parts.snapshot());
      h.parts_off = off.empty() ? "none" : off;
      h.seq = ++seq;
      (*router)->publish(std::make_shared<const event::Alert>(make_heartbeat(h)));
    });
  }
  metrics::HealthMonitor health(web->stall_after);
  std::unique_ptr<metrics::Server> webserver;
  if (web->enabled) {
    const bool tls_verified = !(*k8s && (*k8s)->api_tls_verification_off());
    AgentObjects agent{runner,         pipe,       **router,  parts, counters, pods.get(), tls_verified,
                       rules_in_force, pods_known, baselines.get()};
    auto server = start_webserver(*web, agent, health, log);
    if (!server) return stop_outputs(fail(*log, server.error()));
    webserver = std::move(*server);
  }
  runtime::RunReport rep = runner.run(pipe);
  if (webserver) webserver->stop();
  if (rep.error) log->error("event loop: {}", rep.error->message);

  // 9. Clean stop: detach probes first (no new events), then finish captures
  //    and flush the outputs.
  runner.close_sources();
  if (baselines) log_baseline_errors(baselines->save(), *log);
  if (pods) pods->stop();
  if (recorder) recorder->finish();
  st.set_listener(nullptr);
  if (writer) {
    if (Status s = writer->close(); !s) log->error("closing {}: {}", args.capture, s.error().message);
  }
  (*router)->shutdown(std::chrono::milliseconds(5000));
  auto ps = pipe.stats();
  // drops= is every loss: events the sources lost (sensor, kmsg, plugins)
  // and alerts the outputs lost.
  log->info("stopped: {} events, {} alerts, drops={} (sources: {}; outputs: {})", ps.events,
            ps.alerts, rep.drops_total() + (*router)->drops_total(), rep.describe_drops(),
            (*router)->describe_drops());
  return rep.exit_code;
}

}  // namespace vigil::cli
