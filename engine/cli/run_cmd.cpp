#include "engine/cli/run_cmd.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/cli/common.h"
#include "engine/cli/config.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/sensor.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::cli {
namespace {

constexpr const char* kRunUsage =
    "usage: vigil run [-r PATH]... [-c CONFIG] [-o key=value]... [--format json|text]\n"
    "                 [--k8s-api URL] [--log-level LEVEL]\n"
    "\n"
    "  -r, --rules PATH     rule file or directory (repeatable; default: the bundled rules)\n"
    "  -c, --config FILE    configuration file (outputs, k8s, sensor, flight recorder)\n"
    "  -o key=value         override a configuration key (e.g. -o outputs.0.format=text)\n"
    "  --format json|text   format of the default stdout output (default json)\n"
    "  --k8s-api URL        Kubernetes API server to watch pods from (outside a cluster)\n"
    "  --log-level LEVEL    trace, debug, info, warn, error (default info)\n";

struct RunArgs {
  std::vector<std::string> rules;
  std::string config;
  std::vector<std::string> overrides;
  std::string format;
  std::string k8s_api;
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
  outputs::RouterOptions ropts;
  ropts.hostname = hostname;
  ropts.log = log;
  auto router = outputs::Router::from_config((*cfg)["outputs"], ropts);
  if (!router) return fail(*log, router.error());

  // 4. Signals: handled synchronously through a signalfd polled by the loop.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);

  // 5. State, seeded from /proc.
  state::Config scfg;
  state::State st(scfg);
  if (Status s = st.seed_from_proc(); !s) {
    log->warn("seeding the process table from /proc: {}", s.error().message);
  }

  // 6. Probes (runtime failure → 1).
  auto sensor_cfg = sensor_config(*cfg, *ruleset);
  if (!sensor_cfg) return fail(*log, sensor_cfg.error());
  auto sensor = sensor::Sensor::open(*sensor_cfg);
  if (!sensor) {
    (*router)->shutdown(std::chrono::milliseconds(1000));
    return fail(*log, sensor.error());
  }

  outputs::Router* rt = router->get();
  pipeline::Pipeline pipe({st, [rt](std::shared_ptr<const event::Alert> a) { rt->publish(std::move(a)); },
                           hostname},
                          ruleset);

  std::string hooks;
  for (const std::string& h : (*sensor)->attached()) hooks += (hooks.empty() ? "" : ",") + h;
  log->info("ready: {} rules loaded from {} path(s), probes attached: {}", rule_count(*ruleset),
            rule_paths.size(), hooks);

  // 7. The loop.
  auto last_drop_report = std::chrono::steady_clock::now();
  std::uint64_t reported_drops = 0;
  const auto drop_interval = std::chrono::seconds(10);
  bool stop = false;
  while (!stop) {
    int n = (*sensor)->poll(100, [&](event::Event&& ev) { pipe.process(ev); });
    if (n < 0 && n != -EINTR) {
      log->error("event loop: polling the sensor failed: {}", std::strerror(-n));
      break;
    }
    signalfd_siginfo si{};
    while (sfd >= 0 && read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGHUP) {
        log->info("SIGHUP: reloading rules");
        auto re = load_rules_logged(rule_paths, *log);
        if (re) {
          pipe.set_ruleset(*re);
          log->info("rules reloaded: {} rules", rule_count(**re));
        } else {
          log->error("rule reload failed, the previous rules stay in force: {}", re.error().message);
        }
      } else {
        log->info("{}: stopping", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        stop = true;
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_drop_report >= drop_interval) {
      last_drop_report = now;
      std::uint64_t total = (*sensor)->drops().total();
      if (total > reported_drops) {
        log->warn("sensor dropped {} events in the last {} s ({} in all): {}", total - reported_drops,
                  drop_interval.count(), total, describe_drops((*sensor)->drops()));
        reported_drops = total;
      }
    }
  }

  // 8. Clean stop: detach probes first (no new events), then flush outputs.
  sensor->reset();
  (*router)->shutdown(std::chrono::milliseconds(5000));
  auto ps = pipe.stats();
  log->info("stopped: {} events, {} alerts", ps.events, ps.alerts);
  if (sfd >= 0) close(sfd);
  return 0;
}

}  // namespace vigil::cli
