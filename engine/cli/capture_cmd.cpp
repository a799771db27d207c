#include "engine/cli/capture_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <set>
#include <tuple>
#include <unordered_set>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/capture/event_json.h"
#include "engine/capture/reader.h"
#include "engine/capture/timeline.h"
#include "engine/capture/writer.h"
#include "engine/cli/common.h"
#include "engine/cli/baseline_cmd.h"
#include "engine/cli/config.h"
#include "engine/cli/parts.h"
#include "engine/cli/plugins.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rules/filter.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/parts.h"
#include "engine/runtime/replay.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"
#include "outputs/router.h"

namespace vigil::cli {
namespace {

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

namespace {

// "--duration 30s" style values, checked after parsing so that the message
// names the option and shows the form expected.
bool parse_option(const char* cmd, const char* option, const std::string& text, bool is_size,
                  std::uint64_t& out) {
  if (text.empty()) return true;
  auto v = is_size ? parse_size(text) : parse_duration_ns(text);
  if (!v || *v == 0) {
    std::fprintf(stderr, "vigil %s: %s: bad %s '%s' (e.g. %s)\n", cmd, option, is_size ? "size" : "duration",
                 text.c_str(), is_size ? "512K, 64M, 2G" : "30s, 5m, 2h");
    return false;
  }
  out = *v;
  return true;
}

}  // namespace

int cmd_capture(int argc, char** argv) {
  std::string out, filter, level = "info", config_path;
  std::string duration_text, size_text, rotate_size_text, rotate_every_text;
  std::vector<std::string> overrides;
  K8sFlags k8s_flags;
  std::size_t keep = 5;
  CLI::App app("Records live events (and the process, container and pod state they need) to a capture "
               "file, until SIGINT/SIGTERM, --duration or --size. Pods come from the Kubernetes API "
               "exactly as for `vigil run` (flags, the k8s: section, or in-cluster).",
               "vigil capture");
  // Required, but checked after the parse: CLI11 reports a missing required
  // option before an unexpected one, and a mistyped flag should be named.
  app.add_option("-w,--write", out, "the capture file (rotated files become FILE.1, FILE.2, ...) (required)")
      ->type_name("FILE");
  app.add_option("--duration", duration_text, "stop after D (90, 30s, 5m, 2h)")->type_name("D");
  app.add_option("--size", size_text, "stop once S bytes are written (512K, 64M, 2G)")->type_name("S");
  app.add_option("--filter", filter, "keep only events matching a rule condition (state is always kept)")
      ->type_name("COND");
  app.add_option("--rotate-size", rotate_size_text, "start a new file every S bytes")->type_name("S");
  app.add_option("--rotate-every", rotate_every_text, "start a new file every D")->type_name("D");
  app.add_option("--keep", keep, "rotated files to keep (default 5)")->check(CLI::Range(0, 10000));
  app.add_option("--log-level", level, "trace, debug, info, warn, error (default info)")->type_name("LEVEL");
  app.add_option("-c,--config", config_path, "configuration (its k8s:, sensor:, plugins: and hostname: keys)")
      ->type_name("FILE");
  app.add_option("-o", overrides, "override a configuration key (e.g. -o k8s.node_name=node-1)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  add_k8s_flags(app, k8s_flags);
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  if (out.empty()) {
    std::fprintf(stderr, "vigil capture: -w FILE is required\nRun with --help for more information.\n");
    return 2;
  }
  std::uint64_t duration = 0, size = 0;
  capture::WriterOptions wopts;
  wopts.keep = keep;
  if (!parse_option("capture", "--duration", duration_text, false, duration) ||
      !parse_option("capture", "--size", size_text, true, size) ||
      !parse_option("capture", "--rotate-size", rotate_size_text, true, wopts.rotate_bytes) ||
      !parse_option("capture", "--rotate-every", rotate_every_text, false, wopts.rotate_interval_ns)) {
    return 2;
  }
  auto log = make_logger("capture", level);

  capture::CaptureWriter* writer_seen = nullptr;  // for --size, once the writer exists
  std::unique_ptr<plugin::Host> plugins;  // outlives the runner's plugin sources
  runtime::RunnerOptions ropts;
  ropts.log = log;
  ropts.duration_ns = duration;
  ropts.stop_when = [&writer_seen, size] { return size && writer_seen && writer_seen->stats().bytes >= size; };
  auto runner_r = runtime::Runner::create(ropts);  // before the pod watcher's thread: it inherits the mask
  if (!runner_r) return fail(*log, runner_r.error());
  runtime::Runner& runner = **runner_r;

  auto cfg = load_config_with_overrides(config_path, overrides);
  if (!cfg) return fail(*log, cfg.error());
  // Bad k8s settings are bad input and stop here, before anything is recorded;
  // no API at all (not in a cluster, nothing configured) records without pods.
  runtime::Parts parts;
  auto k8s = discover_k8s(*cfg, k8s_flags, *log, parts);
  if (!k8s) return fail(*log, k8s.error());
  auto host = load_plugins(*cfg, config_path, log, /*init=*/true);
  if (!host) return fail(*log, host.error());
  plugins = std::move(*host);
  std::unique_ptr<const rules::Filter> filter_expr;
  if (!filter.empty()) {
    auto f = rules::Filter::compile(filter, &plugins->fields());
    if (!f) return fail(*log, Error::bad_input("--filter: " + f.error().message));
    filter_expr = std::move(*f);
  }

  state::State st(state::Config{});
  seed_state(st, *log, parts);
  // Pods go into the state (and so into the capture as state records) as the
  // watcher reports them; the first LIST usually lands before any event.
  std::unique_ptr<state::PodWatcher> pods;
  if (*k8s) {
    auto w = watch_pods(**k8s, st, runner, *log, parts);
    if (!w) return fail(*log, w.error());
    pods = std::move(*w);
  }
  auto w = capture::CaptureWriter::open(out, capture_writer_options(host_name(*cfg), st, wopts));
  if (!w) return fail(*log, w.error());
  capture::CaptureWriter& writer = **w;
  writer_seen = &writer;
  st.set_listener(&writer);
  runtime::CaptureTap tap(writer, filter_expr.get());
  std::optional<Error> write_error;
  add_capture_tick(runner, writer, tap, [&](const Error& e) {
    write_error = e;
    runner.stop(1, e.message);
  });

  std::set<event::Type> types;
  for (int t = 1; t < static_cast<int>(event::Type::kCount); ++t) types.insert(static_cast<event::Type>(t));
  rules::OpenPaths paths;
  if (filter_expr) {
    types = filter_expr->event_types();
    paths = filter_expr->open_paths();
  }
  auto sources = live_sources_config(*cfg, std::move(types), paths);
  if (!sources) return fail(*log, sources.error());
  if (Status s = add_live_sources(runner, *sources, parts, *log); !s) return fail(*log, s.error());
  auto plugin_sources = plugins->start_sources(plugin::SourceOptions{});
  if (!plugin_sources) return fail(*log, plugin_sources.error());
  add_plugin_sources(runner, std::move(*plugin_sources), parts, *log);
  if (Status s = require_an_event_source(parts.snapshot()); !s) return fail(*log, s.error());

  pipeline::Pipeline pipe({st, nullptr, host_name(*cfg)}, nullptr);  // no rules: the tap records
  pipe.add_tap(&tap);
  log->info("ready: recording to {}", out);
  runtime::RunReport rep = runner.run(pipe);

  runner.close_sources();
  if (pods) pods->stop();
  st.set_listener(nullptr);
  Status closed = writer.close();
  const auto& ws = writer.stats();
  log->info("{} events, {} records, {} bytes in {} file(s); drops={} ({})", ws.events, ws.records, ws.bytes,
            ws.files, rep.drops_total(), rep.describe_drops());
  if (write_error) return fail(*log, *write_error);
  if (rep.error) return fail(*log, *rep.error);
  if (!closed) return fail(*log, closed.error());
  return rep.exit_code;
}

int cmd_replay(int argc, char** argv) {
  std::string file, config_path, timeline, filter, level = "warn", since_text, until_text, baseline_dir;
  std::vector<std::string> rule_paths;
  runtime::SelectOptions so;
  runtime::CaptureSourceOptions co;
  bool events = false;
  std::string format = "json";
  CLI::App app("Feeds a capture through the same pipeline and outputs as `vigil run`.", "vigil replay");
  app.add_option("file", file, "the capture file (required)")->type_name("FILE");
  one_value_each(app, "-r,--rules", rule_paths, "rule file or directory (repeatable; default: the bundled rules)");
  app.add_option("-c,--config", config_path, "configuration (its outputs: and plugins: sections; default: JSON on stdout)")
      ->type_name("FILE");
  app.add_option("--since", since_text, "the start of a time window (RFC 3339 or Unix seconds)")->type_name("T");
  app.add_option("--until", until_text, "the end of a time window (RFC 3339 or Unix seconds)")->type_name("T");
  app.add_option("--container", so.container, "only this container (an id prefix)")->type_name("ID");
  app.add_option("--pod", so.pod, "only this pod (NAME or NAMESPACE/NAME)")->type_name("NAME");
  app.add_option("--filter", filter, "only events matching a rule condition")->type_name("COND");
  app.add_flag("--events", events, "print the events (JSON lines, or --format text) instead of alerts");
  app.add_option("--format", format, "format of --events (default json)")->check(CLI::IsMember({"json", "text"}));
  app.add_option("--timeline", timeline, "also write a Chrome trace / Perfetto timeline")->type_name("FILE");
  app.add_option("--log-level", level, "trace, debug, info, warn, error (default warn)")->type_name("LEVEL");
  app.add_option("--baseline", baseline_dir,
                 "per-workload baselines from this directory, read only (the baseline: section of -c gives "
                 "the key, learn_for, prefixes and caps; docs/baselines.md)")
      ->type_name("DIR");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  if (file.empty()) {
    std::fprintf(stderr, "vigil replay: no capture file given\nRun with --help for more information.\n");
    return 2;
  }
  for (auto [option, text, dst] : {std::tuple{"--since", &since_text, &so.since_ns},
                                   std::tuple{"--until", &until_text, &co.until_ns}}) {
    if (text->empty()) continue;
    auto t = parse_time_ns(*text);
    if (!t) {
      std::fprintf(stderr,
                   "vigil replay: %s: bad time '%s' (RFC 3339 like 2026-11-22T03:00:00Z, or Unix seconds)\n",
                   option, text->c_str());
      return 2;
    }
    *dst = *t;
  }
  auto log = make_logger("replay", level);
  // The plugins of the configuration read their fields back from the
  // captured plugin events; their sources are not started.
  std::unique_ptr<plugin::Host> plugins;
  rules::LoadOptions load_opts;
  auto runner_r = runtime::Runner::create(runtime::RunnerOptions{.log = log});
  if (!runner_r) return fail(*log, runner_r.error());
  runtime::Runner& runner = **runner_r;

  auto cfg = load_config_with_overrides(config_path, {});
  if (!cfg) return fail(*log, cfg.error());
  auto host = load_plugins(*cfg, config_path, log, /*init=*/true);
  if (!host) return fail(*log, host.error());
  plugins = std::move(*host);
  plugins->configure(load_opts);
  if (!filter.empty()) {
    auto f = rules::Filter::compile(filter, &plugins->fields());
    if (!f) return fail(*log, Error::bad_input("--filter: " + f.error().message));
    so.filter = std::move(*f);
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
    auto loaded = load_rules_logged(rule_paths, *log, load_opts);
    if (!loaded) return fail(*log, loaded.error());
    ruleset = *loaded;
  }

  // Outputs: as configured (default JSON on stdout); none when printing events.
  std::unique_ptr<outputs::Router> router;
  const std::string hostname = (*cfg)["hostname"] ? host_name(*cfg) : (*reader)->info().hostname;
  if (!events) {
    outputs::RouterOptions routeropts;
    routeropts.hostname = hostname;
    routeropts.log = log;
    auto r = outputs::Router::from_config((*cfg)["outputs"], routeropts);
    if (!r) return fail(*log, r.error());
    router = std::move(*r);
  }

  std::unique_ptr<capture::TimelineBuilder> tl;
  if (!timeline.empty()) tl = std::make_unique<capture::TimelineBuilder>();
  std::unordered_set<std::string> tl_known;
  std::string line;
  if (events || tl) {
    so.on_selected = [&](const event::Event& ev, const state::EvalContext& ctx) {
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
  co.progress = [&](std::uint64_t done, std::uint64_t total, std::uint64_t n) { progress.update(done, total, n); };

  // Baselines: the profiles as they were saved, learning and locking in
  // memory as the live agent did; nothing is written back.
  std::unique_ptr<baseline::Store> baselines;
  if (!baseline_dir.empty()) {
    auto state_dir = get_or<std::string>(*cfg, "state_dir", "/var/lib/vigil");
    if (!state_dir) return fail(*log, state_dir.error());
    auto bl = baseline_settings(*cfg, *state_dir);
    if (!bl) return fail(*log, bl.error());
    bl->store.dir = baseline_dir;
    bl->store.read_only = true;
    struct stat dst {};
    if (stat(baseline_dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
      return fail(*log, Error::bad_input("--baseline " + baseline_dir + ": no such directory"));
    }
    baselines = std::make_unique<baseline::Store>(bl->store);
    log_baseline_errors(baselines->load(), *log);
  }

  state::Config replay_state;
  replay_state.live = false;
  state::State st(replay_state);
  // vigil.file judges paths by the replay's own configuration (-c, -r), as
  // `vigil run` with the same ones would (docs/fields.md).
  st.set_vigil_paths(own_paths(config_path, rule_paths, *cfg, ""));
  runtime::StateApplier sink(st);
  auto source = std::make_unique<runtime::CaptureSource>(std::move(*reader), sink, co);
  const runtime::CaptureSource& src = *source;
  runner.add_source(std::move(source));
  runtime::ReplaySelector selector(std::move(so));
  outputs::Router* rt = router.get();
  pipeline::Pipeline pipe({st,
                           [rt](std::shared_ptr<const event::Alert> a) {
                             if (rt) rt->publish(std::move(a));
                           },
                           hostname, baselines.get()},
                          ruleset);
  pipe.set_selector(&selector);
  // Alerts on the timeline (the rules run only on selected events).
  struct TimelineAlerts final : pipeline::EventTap {
    capture::TimelineBuilder* tl;
    void on_event(const event::Event&, const state::EvalContext&) override {}
    void on_alert(const event::Event& ev, const state::EvalContext&, event::Alert& a) override {
      tl->add_alert(ev, a);
    }
  } tl_alerts;
  tl_alerts.tl = tl.get();
  if (tl) pipe.add_tap(&tl_alerts);

  const auto start = std::chrono::steady_clock::now();
  runtime::RunReport rep = runner.run(pipe);
  progress.done();
  std::fflush(stdout);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (router) router->shutdown(std::chrono::milliseconds(5000));
  if (rep.error) return fail(*log, *rep.error);
  const auto& stats = src.stats();
  if (src.truncated()) {
    log->warn("{} ends inside a block at byte {} (cut off mid-write): replayed up to the last "
              "whole block",
              file, src.reader().truncated_at());
  }
  if (stats.skipped_records) {
    log->info("{} records of types this version does not know were skipped", stats.skipped_records);
  }
  log->info("replayed {} events ({} reported), {} alerts in {:.3f} s ({:.0f} events/s)", stats.events,
            selector.reported(), pipe.stats().alerts, secs,
            secs > 0 ? static_cast<double>(stats.events) / secs : 0.0);
  if (tl) {
    if (Status s = tl->write_file(timeline); !s) return fail(*log, s.error());
    if (tl->dropped()) {
      log->warn("timeline: {} trace events beyond the limit were left out", tl->dropped());
    }
  }
  return rep.exit_code;
}

}  // namespace vigil::cli
