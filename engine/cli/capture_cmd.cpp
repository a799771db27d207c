#include "engine/cli/capture_cmd.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/capture/event_json.h"
#include "engine/capture/reader.h"
#include "engine/capture/replay.h"
#include "engine/capture/timeline.h"
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

constexpr const char* kCaptureUsage =
    "usage: vigil capture -w FILE [--duration D] [--size S] [--filter CONDITION]\n"
    "                     [--rotate-size S] [--rotate-every D] [--keep N] [--log-level LEVEL]\n"
    "                     [-c CONFIG] [-o key=value]... [--k8s-api URL] [--k8s-token-file F]\n"
    "                     [--k8s-ca FILE] [--kubeconfig FILE]\n"
    "\n"
    "Records live events (and the process, container and pod state they need) to a\n"
    "capture file, until SIGINT/SIGTERM, --duration or --size. Pods come from the\n"
    "Kubernetes API exactly as for `vigil run` (flags, the k8s: section, or in-cluster).\n"
    "  -w FILE            the capture file (rotated files become FILE.1, FILE.2, ...)\n"
    "  --duration D       stop after D (90, 30s, 5m, 2h)\n"
    "  --size S           stop once S bytes are written (512K, 64M, 2G)\n"
    "  --filter COND      keep only events matching a rule condition (state is always kept)\n"
    "  --rotate-size S    start a new file every S bytes\n"
    "  --rotate-every D   start a new file every D\n"
    "  --keep N           rotated files to keep (default 5)\n"
    "  -c, --config FILE  configuration (its k8s: and hostname: keys)\n"
    "  -o key=value       override a configuration key (e.g. -o k8s.node_name=node-1)\n"
    "  --k8s-api URL      Kubernetes API server to watch pods from (outside a cluster)\n"
    "  --k8s-token-file F bearer token for --k8s-api\n"
    "  --k8s-ca FILE      CA bundle for --k8s-api\n"
    "  --kubeconfig FILE  take the API server and credentials from a kubeconfig\n";

constexpr const char* kReplayUsage =
    "usage: vigil replay FILE [-r RULES]... [-c CONFIG] [--since T] [--until T]\n"
    "                    [--container ID] [--pod NAME|NS/NAME] [--filter CONDITION]\n"
    "                    [--events [--format json|text]] [--timeline OUT.json]\n"
    "\n"
    "Feeds a capture through the same pipeline and outputs as `vigil run`.\n"
    "  -r, --rules PATH   rule file or directory (repeatable; default: the bundled rules)\n"
    "  -c, --config FILE  configuration (its outputs: section; default: JSON on stdout)\n"
    "  --since T, --until T  a time window (RFC 3339 or Unix seconds)\n"
    "  --container ID     only this container (an id prefix)\n"
    "  --pod NAME         only this pod (NAME or NAMESPACE/NAME)\n"
    "  --filter COND      only events matching a rule condition\n"
    "  --events           print the events (JSON lines, or --format text) instead of alerts\n"
    "  --timeline FILE    also write a Chrome trace / Perfetto timeline\n";

bool is_help(std::string_view a) { return a == "-h" || a == "--help"; }

// Splits "12.5ms" into number and unit.
std::optional<std::pair<double, std::string_view>> number_unit(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string num(s.substr(0, i));
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
  return std::make_pair(v, s.substr(i));
}

class Progress {
 public:
  Progress() : on_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  void update(std::uint64_t done, std::uint64_t total, std::uint64_t events) {
    if (!on_) return;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0;
    int bars = static_cast<int>(pct / 100.0 * 30);
    std::string bar(static_cast<std::size_t>(std::clamp(bars, 0, 30)), '#');
    bar.resize(30, ' ');
    std::fprintf(stderr, "\r[%s] %5.1f%%  %llu events  %.0f events/s ", bar.c_str(), pct,
                 static_cast<unsigned long long>(events),
                 secs > 0 ? static_cast<double>(events) / secs : 0.0);
    shown_ = true;
  }
  void done() {
    if (shown_) std::fputc('\n', stderr);
  }

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::optional<std::uint64_t> parse_duration_ns(std::string_view s) {
  auto nu = number_unit(s);
  if (!nu) return std::nullopt;
  auto [v, unit] = *nu;
  double mult = 0;
  if (unit.empty() || unit == "s") mult = 1e9;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "m") mult = 60e9;
  else if (unit == "h") mult = 3600e9;
  else if (unit == "d") mult = 86400e9;
  else return std::nullopt;
  double ns = v * mult;
  if (ns > 1e19) return std::nullopt;
  return static_cast<std::uint64_t>(ns);
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
  auto nu = number_unit(s);
  if (!nu) return std::nullopt;
  auto [v, unit] = *nu;
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k") mult = 1024.0;
  else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else return std::nullopt;
  double b = v * mult;
  if (b > 1e18) return std::nullopt;
  return static_cast<std::uint64_t>(b);
}

std::optional<std::uint64_t> parse_time_ns(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s.find('T') == std::string_view::npos) {
    // Unix seconds with up to 9 decimals, parsed exactly (a double loses the ns).
    std::size_t dot = s.find('.');
    std::string_view whole = s.substr(0, dot);
    std::uint64_t secs = 0;
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), secs);
    if (ec != std::errc() || p != whole.data() + whole.size() || secs > 10'000'000'000ull) {
      return std::nullopt;
    }
    std::uint64_t frac = 0;
    if (dot != std::string_view::npos) {
      std::string_view f = s.substr(dot + 1);
      if (f.empty() || f.size() > 9) return std::nullopt;
      std::uint64_t scale = 100'000'000;
      for (char c : f) {
        if (c < '0' || c > '9') return std::nullopt;
        frac += static_cast<std::uint64_t>(c - '0') * scale;
        scale /= 10;
      }
    }
    return secs * 1'000'000'000ull + frac;
  }
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)
  int Y, M, D, h, m, sec;
  int used = 0;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &used) != 6 ||
      used != 19) {
    return std::nullopt;
  }
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60 || Y < 1970) {
    return std::nullopt;
  }
  std::string_view rest = s.substr(19);
  std::uint64_t frac_ns = 0;
  if (!rest.empty() && rest[0] == '.') {
    std::size_t i = 1;
    std::uint64_t scale = 100'000'000;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      frac_ns += static_cast<std::uint64_t>(rest[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == 1) return std::nullopt;
    rest = rest.substr(i);
  }
  long offset = 0;
  if (rest == "Z" || rest == "z") {
    offset = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2) {
      return std::nullopt;
    }
    offset = (rest[0] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  std::time_t t = timegm(&tm);
  if (t < 0) return std::nullopt;
  long long secs = static_cast<long long>(t) - offset;
  if (secs < 0) return std::nullopt;
  return static_cast<std::uint64_t>(secs) * 1'000'000'000ull + frac_ns;
}

int cmd_capture(int argc, char** argv) {
  std::string out, filter, level = "info";
  std::string config_path, k8s_api, k8s_token_file, k8s_ca, kubeconfig;
  std::vector<std::string> overrides;
  std::uint64_t duration = 0, size = 0;
  capture::WriterOptions wopts;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vigil capture: %s needs a value\n%s", name, kCaptureUsage);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (is_help(a)) {
      std::fputs(kCaptureUsage, stdout);
      return 0;
    } else if (a == "-w" || a == "--write") {
      if (!(v = value("-w"))) return 2;
      out = v;
    } else if (a == "--duration" || a == "--rotate-every") {
      if (!(v = value(argv[i]))) return 2;
      auto d = parse_duration_ns(v);
      if (!d || *d == 0) {
        std::fprintf(stderr, "vigil capture: %s: bad duration '%s' (e.g. 30s, 5m, 2h)\n",
                     std::string(a).c_str(), v);
        return 2;
      }
      (a == "--duration" ? duration : wopts.rotate_interval_ns) = *d;
    } else if (a == "--size" || a == "--rotate-size") {
      if (!(v = value(argv[i]))) return 2;
      auto s = parse_size(v);
      if (!s || *s == 0) {
        std::fprintf(stderr, "vigil capture: %s: bad size '%s' (e.g. 512K, 64M, 2G)\n",
                     std::string(a).c_str(), v);
        return 2;
      }
      (a == "--size" ? size : wopts.rotate_bytes) = *s;
    } else if (a == "--keep") {
      if (!(v = value("--keep"))) return 2;
      std::size_t k = 0;
      auto [p, ec] = std::from_chars(v, v + std::strlen(v), k);
      if (ec != std::errc() || *p != '\0' || k > 10000) {
        std::fprintf(stderr, "vigil capture: --keep: bad count '%s'\n", v);
        return 2;
      }
      wopts.keep = k;
    } else if (a == "--filter") {
      if (!(v = value("--filter"))) return 2;
      filter = v;
    } else if (a == "--log-level") {
      if (!(v = value("--log-level"))) return 2;
      level = v;
    } else if (a == "-c" || a == "--config") {
      if (!(v = value("-c"))) return 2;
      config_path = v;
    } else if (a == "-o") {
      if (!(v = value("-o"))) return 2;
      overrides.emplace_back(v);
    } else if (a == "--k8s-api") {
      if (!(v = value("--k8s-api"))) return 2;
      k8s_api = v;
    } else if (a == "--k8s-token-file") {
      if (!(v = value("--k8s-token-file"))) return 2;
      k8s_token_file = v;
    } else if (a == "--k8s-ca") {
      if (!(v = value("--k8s-ca"))) return 2;
      k8s_ca = v;
    } else if (a == "--kubeconfig") {
      if (!(v = value("--kubeconfig"))) return 2;
      kubeconfig = v;
    } else {
      std::fprintf(stderr, "vigil capture: unknown argument '%s'\n%s", argv[i], kCaptureUsage);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "vigil capture: -w FILE is required\n%s", kCaptureUsage);
    return 2;
  }
  auto log = make_logger("capture", level);

  auto cfg = load_config(config_path);
  if (!cfg) return fail(*log, cfg.error());
  for (const std::string& o : overrides) {
    if (Status s = apply_override(*cfg, o); !s) return fail(*log, s.error());
  }
  auto k8s_opts = k8s_options(*cfg, k8s_api, k8s_token_file, k8s_ca, kubeconfig);
  if (!k8s_opts) return fail(*log, k8s_opts.error());
  // Bad k8s settings are bad input and stop here, before anything is recorded;
  // no API at all (not in a cluster, nothing configured) records without pods.
  auto k8s = state::k8s_config_discover(*k8s_opts);
  if (!k8s && k8s.error().kind == Error::Kind::kBadInput) return fail(*log, k8s.error());

  std::shared_ptr<const rules::Ruleset> filter_rules;
  if (!filter.empty()) {
    auto f = capture::compile_filter(filter);
    if (!f) return fail(*log, f.error());
    filter_rules = *f;
  }

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  // Blocked before the pod watcher's thread starts, so it inherits the mask.
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);

  state::State st(state::Config{});
  if (Status s = st.seed_from_proc(); !s) {
    log->warn("seeding the process table from /proc: {}", s.error().message);
  }
  // Pods go into the state (and so into the capture as state records) as the
  // watcher reports them; the first LIST usually lands before any event.
  std::unique_ptr<state::PodWatcher> pods;
  if (k8s) {
    pods = std::make_unique<state::PodWatcher>(*k8s);
    if (Status s = pods->start(); !s) {
      if (sfd >= 0) close(sfd);
      return fail(*log, s.error());
    }
    log->info("watching pods of node {} at {}", k8s->node_name, k8s->api_url);
  } else {
    log->info("no Kubernetes API ({}); the capture has no pod metadata", k8s.error().message);
  }
  wopts.info = capture::describe_host();
  wopts.info.hostname = host_name(*cfg);
  wopts.snapshot = [&st] { return capture::snapshot_of(st); };
  auto w = capture::CaptureWriter::open(out, wopts);
  if (!w) return fail(*log, w.error());
  st.set_listener(w->get());

  sensor::Config scfg;
  for (int t = 1; t < static_cast<int>(event::Type::kCount); ++t) {
    scfg.event_types.insert(static_cast<event::Type>(t));
  }
  if (filter_rules) {
    scfg.event_types = filter_rules->event_types();
    scfg.open_path_prefixes = filter_rules->open_path_prefixes();
    scfg.open_path_whole = filter_rules->open_path_whole();
  }
  auto sensor = sensor::Sensor::open(scfg);
  if (!sensor) return fail(*log, sensor.error());
  log->info("ready: recording to {}", out);

  const auto start = std::chrono::steady_clock::now();
  Status status;
  bool stop = false;
  while (!stop && status) {
    if (pods) pods->drain(st);
    int n = (*sensor)->poll(100, [&](event::Event&& ev) {
      st.apply(ev);
      if (status && (!filter_rules || capture::filter_accepts(*filter_rules, st.enrich(ev)))) {
        status = (*w)->write_event(ev);
      }
      st.after(ev);
    });
    if (n < 0 && n != -EINTR) {
      log->error("polling the sensor failed: {}", std::strerror(-n));
      break;
    }
    if (status) status = (*w)->tick();  // quiet periods still reach the disk each second
    signalfd_siginfo si{};
    while (sfd >= 0 && read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) stop = true;
    if (duration && std::chrono::steady_clock::now() - start >= std::chrono::nanoseconds(duration)) {
      stop = true;
    }
    if (size && (*w)->stats().bytes >= size) stop = true;
  }
  if (pods) pods->stop();
  Status closed = (*w)->close();
  if (sfd >= 0) close(sfd);
  const auto& ws = (*w)->stats();
  log->info("{} events, {} records, {} bytes in {} file(s); sensor drops: {}", ws.events,
            ws.records, ws.bytes, ws.files, describe_drops((*sensor)->drops()));
  if (!status) return fail(*log, status.error());
  if (!closed) return fail(*log, closed.error());
  return 0;
}

int cmd_replay(int argc, char** argv) {
  std::string file, config_path, timeline, filter, level = "warn";
  std::vector<std::string> rule_paths;
  capture::ReplayOptions ro;
  bool events = false;
  std::string format = "json";
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vigil replay: %s needs a value\n%s", name, kReplayUsage);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (is_help(a)) {
      std::fputs(kReplayUsage, stdout);
      return 0;
    } else if (a == "-r" || a == "--rules") {
      if (!(v = value("-r"))) return 2;
      rule_paths.emplace_back(v);
    } else if (a == "-c" || a == "--config") {
      if (!(v = value("-c"))) return 2;
      config_path = v;
    } else if (a == "--since" || a == "--until") {
      if (!(v = value(argv[i]))) return 2;
      auto t = parse_time_ns(v);
      if (!t) {
        std::fprintf(stderr,
                     "vigil replay: %s: bad time '%s' (RFC 3339 like 2026-11-22T03:00:00Z, or "
                     "Unix seconds)\n",
                     std::string(a).c_str(), v);
        return 2;
      }
      (a == "--since" ? ro.since_ns : ro.until_ns) = *t;
    } else if (a == "--container") {
      if (!(v = value("--container"))) return 2;
      ro.container = v;
    } else if (a == "--pod") {
      if (!(v = value("--pod"))) return 2;
      ro.pod = v;
    } else if (a == "--filter") {
      if (!(v = value("--filter"))) return 2;
      filter = v;
    } else if (a == "--events") {
      events = true;
    } else if (a == "--format") {
      if (!(v = value("--format"))) return 2;
      format = v;
      if (format != "json" && format != "text") {
        std::fprintf(stderr, "vigil replay: --format must be json or text\n");
        return 2;
      }
    } else if (a == "--timeline") {
      if (!(v = value("--timeline"))) return 2;
      timeline = v;
    } else if (a == "--log-level") {
      if (!(v = value("--log-level"))) return 2;
      level = v;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "vigil replay: unknown argument '%s'\n%s", argv[i], kReplayUsage);
      return 2;
    } else if (file.empty()) {
      file = argv[i];
    } else {
      std::fprintf(stderr, "vigil replay: one capture file at a time ('%s')\n", argv[i]);
      return 2;
    }
  }
  if (file.empty()) {
    std::fprintf(stderr, "vigil replay: no capture file given\n%s", kReplayUsage);
    return 2;
  }
  auto log = make_logger("replay", level);
  YAML::Node cfg;
  if (!config_path.empty()) {
    auto c = load_config(config_path);
    if (!c) return fail(*log, c.error());
    cfg = *c;
  }
  if (!filter.empty()) {
    auto f = capture::compile_filter(filter);
    if (!f) return fail(*log, f.error());
    ro.filter = *f;
  }

  auto reader = capture::CaptureReader::open(file);
  if (!reader) return fail(*log, reader.error());

  // Rules: not needed to print events (unless asked for), else the bundled ones by default.
  std::shared_ptr<const rules::Ruleset> ruleset;
  if (!events || !rule_paths.empty() || !timeline.empty()) {
    if (rule_paths.empty()) {
      std::string bundled = find_bundled_rules();
      if (bundled.empty()) {
        return fail(*log, Error::bad_input("no rules given (-r) and no bundled rules found"));
      }
      rule_paths.push_back(bundled);
    }
    auto loaded = load_rules_logged(rule_paths, *log);
    if (!loaded) return fail(*log, loaded.error());
    ruleset = *loaded;
  }

  // Outputs: as configured (default JSON on stdout); none when printing events.
  std::unique_ptr<outputs::Router> router;
  const std::string hostname =
      cfg["hostname"] ? host_name(cfg) : (*reader)->info().hostname;
  if (!events) {
    outputs::RouterOptions ropts;
    ropts.hostname = hostname;
    ropts.log = log;
    auto r = outputs::Router::from_config(cfg["outputs"], ropts);
    if (!r) return fail(*log, r.error());
    router = std::move(*r);
  }

  std::unique_ptr<capture::TimelineBuilder> tl;
  if (!timeline.empty()) tl = std::make_unique<capture::TimelineBuilder>();
  std::unordered_set<std::string> tl_known;
  std::string line;
  if (events || tl) {
    ro.on_selected = [&](const event::Event& ev, const state::EvalContext& ctx) {
      if (events) {
        line = format == "json" ? capture::event_json(ev, &ctx) : capture::event_text(ev, &ctx);
        line.push_back('\n');
        std::fwrite(line.data(), 1, line.size(), stdout);
      }
      if (tl) {
        if (ctx.container && tl_known.insert(ctx.container->id).second) tl->add(*ctx.container);
        if (ctx.pod && tl_known.insert("pod:" + ctx.pod->uid + ctx.pod->resource_version).second) {
          tl->add(*ctx.pod);
        }
        tl->add_event(ev);
      }
    };
  }
  Progress progress;
  ro.progress = [&](std::uint64_t done, std::uint64_t total, std::uint64_t n) {
    progress.update(done, total, n);
  };

  state::Config replay_state;
  replay_state.live = false;
  state::State st(replay_state);
  capture::Replayer rp(st, ro);
  outputs::Router* rt = router.get();
  pipeline::Pipeline pipe({st, rp.gate([rt](std::shared_ptr<const event::Alert> a) {
                             if (rt) rt->publish(std::move(a));
                           }),
                           hostname},
                          ruleset);
  pipe.add_tap(&rp);
  // Alerts on the timeline: a tap after the replayer sees whether the event was selected.
  struct TimelineAlerts final : pipeline::EventTap {
    capture::TimelineBuilder* tl;
    const capture::Replayer* rp;
    void on_event(const event::Event&) override {}
    void on_alert(const event::Event& ev, event::Alert& a) override {
      if (rp->selected()) tl->add_alert(ev, a);
    }
  } tl_alerts;
  tl_alerts.tl = tl.get();
  tl_alerts.rp = &rp;
  if (tl) pipe.add_tap(&tl_alerts);

  const auto start = std::chrono::steady_clock::now();
  auto stats = rp.run(**reader, pipe);
  progress.done();
  std::fflush(stdout);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (router) router->shutdown(std::chrono::milliseconds(5000));
  if (!stats) return fail(*log, stats.error());
  if (stats->truncated) {
    log->warn("{} ends inside a block at byte {} (cut off mid-write): replayed up to the last "
              "whole block",
              file, (*reader)->truncated_at());
  }
  if (stats->skipped_records) {
    log->info("{} records of types this version does not know were skipped",
              stats->skipped_records);
  }
  log->info("replayed {} events ({} reported), {} alerts in {:.3f} s ({:.0f} events/s)",
            stats->events, stats->reported, pipe.stats().alerts, secs,
            secs > 0 ? static_cast<double>(stats->events) / secs : 0.0);
  if (tl) {
    if (Status s = tl->write_file(timeline); !s) return fail(*log, s.error());
    if (tl->dropped()) {
      log->warn("timeline: {} trace events beyond the limit were left out", tl->dropped());
    }
  }
  return 0;
}

}  // namespace vigil::cli
