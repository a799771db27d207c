#include "engine/cli/run_cmd.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/capture/flight_recorder.h"
#include "engine/capture/replay.h"
#include "engine/capture/writer.h"
#include "engine/cli/common.h"
#include "engine/cli/config.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/sensor.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::cli {
namespace {

constexpr const char* kRunUsage =
    "usage: vigil run [-r PATH]... [-c CONFIG] [-o key=value]... [--format json|text]\n"
    "                 [--capture FILE] [--k8s-api URL] [--kubeconfig FILE] [--log-level LEVEL]\n"
    "\n"
    "  -r, --rules PATH     rule file or directory (repeatable; default: the bundled rules)\n"
    "  -c, --config FILE    configuration file (outputs, k8s, sensor, flight recorder)\n"
    "  -o key=value         override a configuration key (e.g. -o outputs.0.format=text)\n"
    "  --format json|text   format of the default stdout output (default json)\n"
    "  --capture FILE       also record every event to a capture file (see vigil replay)\n"
    "  --k8s-api URL        Kubernetes API server to watch pods from (outside a cluster)\n"
    "  --k8s-token-file F   bearer token for --k8s-api\n"
    "  --k8s-ca FILE        CA bundle for --k8s-api\n"
    "  --kubeconfig FILE    take the API server and credentials from a kubeconfig\n"
    "  --log-level LEVEL    trace, debug, info, warn, error (default info)\n";

struct RunArgs {
  std::vector<std::string> rules;
  std::string config;
  std::vector<std::string> overrides;
  std::string format;
  std::string capture;
  std::string k8s_api;
  std::string k8s_token_file;
  std::string k8s_ca;
  std::string kubeconfig;
  std::string log_level = "info";
};

// Returns 0 to go on, or the exit code.
int parse_args(int argc, char** argv, RunArgs& a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vigil run: %s needs a value\n%s", what, kRunUsage);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kRunUsage, stdout);
      return -1;
    } else if (arg == "-r" || arg == "--rules") {
      if (!(v = need("-r"))) return 2;
      a.rules.emplace_back(v);
    } else if (arg == "-c" || arg == "--config") {
      if (!(v = need("-c"))) return 2;
      a.config = v;
    } else if (arg == "-o") {
      if (!(v = need("-o"))) return 2;
      a.overrides.emplace_back(v);
    } else if (arg == "--format") {
      if (!(v = need("--format"))) return 2;
      a.format = v;
      if (a.format != "json" && a.format != "text") {
        std::fprintf(stderr, "vigil run: --format must be json or text\n");
        return 2;
      }
    } else if (arg == "--capture") {
      if (!(v = need("--capture"))) return 2;
      a.capture = v;
    } else if (arg == "--k8s-token-file") {
      if (!(v = need("--k8s-token-file"))) return 2;
      a.k8s_token_file = v;
    } else if (arg == "--k8s-ca") {
      if (!(v = need("--k8s-ca"))) return 2;
      a.k8s_ca = v;
    } else if (arg == "--kubeconfig") {
      if (!(v = need("--kubeconfig"))) return 2;
      a.kubeconfig = v;
    } else if (arg == "--k8s-api") {
      if (!(v = need("--k8s-api"))) return 2;
      a.k8s_api = v;
    } else if (arg == "--log-level") {
      if (!(v = need("--log-level"))) return 2;
      a.log_level = v;
    } else {
      std::fprintf(stderr, "vigil run: unknown option '%s'\n%s", arg.c_str(), kRunUsage);
      return 2;
    }
  }
  return 0;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  RunArgs args;
  if (int rc = parse_args(argc, argv, args); rc != 0) return rc < 0 ? 0 : rc;

  auto log = make_logger("vigil", args.log_level);

  // Signals are handled synchronously through a signalfd polled by the loop.
  // Blocked before any thread starts (output workers, the pod watcher), so
  // every thread inherits the mask and none dies of SIGTERM.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) return fail(*log, Error::runtime(std::string("signalfd: ") + std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } sfd_closer{sfd};

  // 1. Configuration (bad input → 2).
  auto cfg = load_config(args.config);
  if (!cfg) return fail(*log, cfg.error());
  for (const std::string& o : args.overrides) {
    if (Status st = apply_override(*cfg, o); !st) return fail(*log, st.error());
  }
  if (!args.format.empty() && !(*cfg)["outputs"]) {
    YAML::Node out;
    out["type"] = "stdout";
    out["format"] = args.format;
    (*cfg)["outputs"].push_back(out);
  }

  // 2. Rules (bad input → 2).
  std::vector<std::string> rule_paths = args.rules;
  if (rule_paths.empty()) {
    auto from_cfg = config_rule_paths(*cfg);
    if (!from_cfg) return fail(*log, from_cfg.error());
    rule_paths = *from_cfg;
  }
  if (rule_paths.empty()) {
    std::string bundled = find_bundled_rules();
    if (bundled.empty()) {
      return fail(*log, Error::bad_input("no rules given (-r) and no bundled rules directory found"));
    }
    rule_paths.push_back(bundled);
  }
  auto loaded = load_rules_logged(rule_paths, *log);
  if (!loaded) return fail(*log, loaded.error());
  std::shared_ptr<const rules::Ruleset> ruleset = *loaded;

  // 3. Outputs.
  const std::string hostname = host_name(*cfg);
  auto state_dir = get_or<std::string>(*cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return fail(*log, state_dir.error());
  outputs::RouterOptions ropts;
  ropts.hostname = hostname;
  ropts.log = log;
  ropts.state_dir = *state_dir;  // spools live under <state_dir>/spool
  auto router = outputs::Router::from_config((*cfg)["outputs"], ropts);
  if (!router) return fail(*log, router.error());


  // 5. State, seeded from /proc.
  state::Config scfg;
  state::State st(scfg);
  if (Status s = st.seed_from_proc(); !s) {
    log->warn("seeding the process table from /proc: {}", s.error().message);
  }
  log->info("process table seeded: {} processes", st.process_count());

  // 6. Pods from the Kubernetes API, when there is one.
  auto k8s_opts = k8s_options(*cfg, args.k8s_api, args.k8s_token_file, args.k8s_ca, args.kubeconfig);
  if (!k8s_opts) return fail(*log, k8s_opts.error());
  std::unique_ptr<state::PodWatcher> pods;
  if (auto k8s = state::k8s_config_discover(*k8s_opts); k8s) {
    pods = std::make_unique<state::PodWatcher>(*k8s);
    if (Status s = pods->start(); !s) return fail(*log, s.error());
    log->info("watching pods of node {} at {}", k8s->node_name, k8s->api_url);
  } else if (k8s.error().kind == Error::Kind::kBadInput) {
    return fail(*log, k8s.error());
  } else {
    log->info("no Kubernetes API ({}); k8s.* fields stay empty", k8s.error().message);
  }

  // 7. Recording: a capture of the whole run (--capture) and the flight
  //    recorder around alerts. Both are state listeners, through one fanout.
  capture::ListenerFanout listeners;
  std::unique_ptr<capture::CaptureWriter> writer;
  std::unique_ptr<capture::CaptureTap> capture_tap;
  if (!args.capture.empty()) {
    capture::WriterOptions wopts;
    wopts.info = capture::describe_host();
    wopts.info.hostname = hostname;
    wopts.snapshot = [&st] { return capture::snapshot_of(st); };
    auto w = capture::CaptureWriter::open(args.capture, wopts);
    if (!w) return fail(*log, w.error());
    writer = std::move(*w);
    listeners.add(writer.get());
    capture_tap = std::make_unique<capture::CaptureTap>(*writer);
    log->info("recording events to {}", args.capture);
  }
  auto fr_opts = flight_recorder_options(*cfg, *state_dir);
  if (!fr_opts) return fail(*log, fr_opts.error());
  std::unique_ptr<capture::FlightRecorder> recorder;
  std::unique_ptr<capture::FlightRecorderTap> recorder_tap;
  if (fr_opts->enabled) {
    std::error_code ec;
    std::filesystem::create_directories(fr_opts->dir, ec);
    if (ec) {
      log->warn("flight recorder off: cannot create {}: {}", fr_opts->dir, ec.message());
    } else {
      fr_opts->info = capture::describe_host();
      fr_opts->info.hostname = hostname;
      recorder = std::make_unique<capture::FlightRecorder>(*fr_opts);
      listeners.add(recorder.get());
      recorder_tap = std::make_unique<capture::FlightRecorderTap>(*recorder, st);
    }
  }
  st.set_listener(&listeners);

  // 8. Probes (runtime failure → 1).
  auto sensor_cfg = sensor_config(*cfg, *ruleset);
  if (!sensor_cfg) return fail(*log, sensor_cfg.error());
  if (ruleset->open_any_path()) {
    std::string names;
    for (const auto& n : ruleset->open_unfiltered_rules()) names += (names.empty() ? "'" : ", '") + n + "'";
    log->warn("open rules the sensor cannot pre-filter by path see device nodes and the other rules' "
              "paths only (docs/events.md, \"open\"): {}", names);
  }
  auto sensor = sensor::Sensor::open(*sensor_cfg);
  if (!sensor) {
    (*router)->shutdown(std::chrono::milliseconds(1000));
    return fail(*log, sensor.error());
  }

  outputs::Router* rt = router->get();
  pipeline::Pipeline pipe(
      {st, [rt](std::shared_ptr<const event::Alert> a) { rt->publish(std::move(a)); }, hostname},
      ruleset);
  if (capture_tap) pipe.add_tap(capture_tap.get());
  if (recorder_tap) pipe.add_tap(recorder_tap.get());

  std::string hooks;
  for (const std::string& h : (*sensor)->attached()) hooks += (hooks.empty() ? "" : ",") + h;
  log->info("ready: {} rules loaded from {} path(s), probes attached: {}", ruleset->size(),
            rule_paths.size(), hooks);

  // 9. The loop.
  auto last_drop_report = std::chrono::steady_clock::now();
  std::uint64_t reported_drops = 0;
  const auto drop_interval = std::chrono::seconds(10);
  bool stop = false;
  bool capture_failed = false;
  int exit_code = 0;
  while (!stop) {
    if (pods) pods->drain(st);
    int n = (*sensor)->poll(100, [&](event::Event&& ev) { pipe.process(ev); });
    if (n < 0 && n != -EINTR) {
      log->error("event loop: polling the sensor failed: {}", std::strerror(-n));
      exit_code = 1;
      break;
    }
    signalfd_siginfo si{};
    while (read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGHUP) {
        log->info("SIGHUP: reloading rules");
        auto re = load_rules_logged(rule_paths, *log);
        if (re) {
          pipe.set_ruleset(*re);
          log->info("rules reloaded: {} rules", (*re)->size());
        } else {
          log->error("rule reload failed, the previous rules stay in force: {}", re.error().message);
        }
      } else {
        log->info("{}: stopping", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        stop = true;
      }
    }
    if (writer && !capture_failed) {
      // Cuts a block when the flush interval has passed, even with no new event.
      Status s = writer->tick();
      if (s && capture_tap) s = capture_tap->status();
      if (!s) {
        log->error("capture to {} stopped (detection goes on): {}", args.capture, s.error().message);
        capture_failed = true;
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_drop_report >= drop_interval) {
      last_drop_report = now;
      const sensor::DropCounters d = (*sensor)->drops();
      // Truncated strings are counted but the events were still delivered.
      const std::uint64_t lost = d.total() - d.truncated;
      if (lost > reported_drops) {
        log->warn("sensor lost {} events in the last {} s ({} in all): {}", lost - reported_drops,
                  drop_interval.count(), lost, describe_drops(d));
        reported_drops = lost;
      }
    }
  }

  // 10. Clean stop: detach probes first (no new events), then finish captures
  //     and flush the outputs.
  const sensor::DropCounters final_drops = (*sensor)->drops();
  const std::uint64_t drops = final_drops.total() - final_drops.truncated;
  sensor->reset();
  if (pods) pods->stop();
  if (recorder) recorder->finish();
  st.set_listener(nullptr);
  if (writer) {
    if (Status s = writer->close(); !s) log->error("closing {}: {}", args.capture, s.error().message);
  }
  (*router)->shutdown(std::chrono::milliseconds(5000));
  auto ps = pipe.stats();
  log->info("stopped: {} events, {} alerts, drops={} ({})", ps.events, ps.alerts, drops,
            describe_drops(final_drops));
  return exit_code;
}

}  // namespace vigil::cli
