#include "engine/cli/capture_cmd.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <tuple>

#include <CLI/CLI.hpp>

#include "engine/agent/agent.h"
#include "engine/agent/plan.h"
#include "engine/cli/common.h"

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
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &used) != 6 || used != 19) {
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
bool parse_option(const char* cmd, const char* option, const std::string& text, bool is_size, std::uint64_t& out) {
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
  agent::Options o;
  o.command = agent::Command::kCapture;
  std::string duration_text, size_text, rotate_size_text, rotate_every_text;
  std::size_t keep = 5;
  CLI::App app(
      "Records live events (and the process, container and pod state they need) to a capture "
      "file, until SIGINT/SIGTERM, --duration or --size. Pods come from the Kubernetes API "
      "exactly as for `vigil run` (flags, the k8s: section, or in-cluster).",
      "vigil capture");
  // Required, but checked after the parse: CLI11 reports a missing required
  // option before an unexpected one, and a mistyped flag should be named.
  app.add_option("-w,--write", o.write, "the capture file (rotated files become FILE.1, FILE.2, ...) (required)")
      ->type_name("FILE");
  app.add_option("--duration", duration_text, "stop after D (90, 30s, 5m, 2h)")->type_name("D");
  app.add_option("--size", size_text, "stop once S bytes are written (512K, 64M, 2G)")->type_name("S");
  app.add_option("--filter", o.filter, "keep only events matching a rule condition (state is always kept)")
      ->type_name("COND");
  app.add_option("--rotate-size", rotate_size_text, "start a new file every S bytes")->type_name("S");
  app.add_option("--rotate-every", rotate_every_text, "start a new file every D")->type_name("D");
  app.add_option("--keep", keep, "rotated files to keep (default 5)")->check(CLI::Range(0, 10000));
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error (default info)")->type_name("LEVEL");
  app.add_option("-c,--config", o.config, "configuration (its k8s:, sensor:, plugins: and hostname: keys)")
      ->type_name("FILE");
  app.add_option("-o", o.overrides, "override a configuration key (e.g. -o k8s.node_name=node-1)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  add_k8s_flags(app, o.k8s);
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  if (o.write.empty()) {
    std::fprintf(stderr, "vigil capture: -w FILE is required\nRun with --help for more information.\n");
    return 2;
  }
  o.writer.keep = keep;
  if (!parse_option("capture", "--duration", duration_text, false, o.duration_ns) ||
      !parse_option("capture", "--size", size_text, true, o.size_bytes) ||
      !parse_option("capture", "--rotate-size", rotate_size_text, true, o.writer.rotate_bytes) ||
      !parse_option("capture", "--rotate-every", rotate_every_text, false, o.writer.rotate_interval_ns)) {
    return 2;
  }
  agent::Agent a(std::move(o));
  return agent::run(a, agent::capture_plan());
}

int cmd_replay(int argc, char** argv) {
  agent::Options o;
  o.command = agent::Command::kReplay;
  o.log_level = "warn";
  std::string since_text, until_text;
  runtime::SelectOptions& so = o.select;
  CLI::App app("Feeds a capture through the same pipeline and outputs as `vigil run`.", "vigil replay");
  app.add_option("file", o.replay_file, "the capture file (required)")->type_name("FILE");
  one_value_each(app, "-r,--rules", o.rules, "rule file or directory (repeatable; default: the bundled rules)");
  app.add_option("-c,--config", o.config, "configuration (its outputs: and plugins: sections; default: JSON on stdout)")
      ->type_name("FILE");
  app.add_option("--since", since_text, "the start of a time window (RFC 3339 or Unix seconds)")->type_name("T");
  app.add_option("--until", until_text, "the end of a time window (RFC 3339 or Unix seconds)")->type_name("T");
  app.add_option("--container", so.container, "only this container (an id prefix)")->type_name("ID");
  app.add_option("--pod", so.pod, "only this pod (NAME or NAMESPACE/NAME)")->type_name("NAME");
  app.add_option("--filter", o.filter, "only events matching a rule condition")->type_name("COND");
  app.add_flag("--events", o.print_events, "print the events (JSON lines, or --format text) instead of alerts");
  app.add_option("--format", o.events_format, "format of --events (default json)")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--timeline", o.timeline, "also write a Chrome trace / Perfetto timeline")->type_name("FILE");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error (default warn)")->type_name("LEVEL");
  app.add_option("--baseline", o.baseline_dir,
                 "per-workload baselines from this directory, read only (the baseline: section of -c gives "
                 "the key, learn_for, prefixes and caps; docs/baselines.md)")
      ->type_name("DIR");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  if (o.replay_file.empty()) {
    std::fprintf(stderr, "vigil replay: no capture file given\nRun with --help for more information.\n");
    return 2;
  }
  for (auto [option, text, dst] :
       {std::tuple{"--since", &since_text, &so.since_ns}, std::tuple{"--until", &until_text, &o.replay.until_ns}}) {
    if (text->empty()) continue;
    auto t = parse_time_ns(*text);
    if (!t) {
      std::fprintf(stderr, "vigil replay: %s: bad time '%s' (RFC 3339 like 2026-11-22T03:00:00Z, or Unix seconds)\n",
                   option, text->c_str());
      return 2;
    }
    *dst = *t;
  }
  agent::Agent a(std::move(o));
  return agent::run(a, agent::replay_plan());
}

}  // namespace vigil::cli
