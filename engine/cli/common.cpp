#include "engine/cli/common.h"

#include <dirent.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "engine/capture/flight_recorder.h"
#include "engine/cli/config.h"
#include "engine/cli/parts.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/sensor/klog.h"
#include "engine/sensor/kmsg.h"
#include "engine/sensor/sensor.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"

namespace vigil::cli {
namespace fs = std::filesystem;

// Where State reads the GPU table (state::Config's default nvidia_root).
constexpr std::string_view kNvidiaProcRoot = "/proc/driver/nvidia";

std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
  auto log = std::make_shared<spdlog::logger>(name, sink);
  log->set_level(spdlog::level::from_str(level));
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  return log;
}

int parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

void one_value_each(CLI::App& app, const std::string& name, std::vector<std::string>& out,
                    const std::string& help) {
  app.add_option(name, out, help)->allow_extra_args(false)->type_name("PATH");
}

void add_k8s_flags(CLI::App& app, K8sFlags& k8s) {
  app.add_option("--k8s-api", k8s.api, "Kubernetes API server to watch pods from (outside a cluster)")
      ->type_name("URL");
  app.add_option("--k8s-token-file", k8s.token_file, "bearer token for --k8s-api")->type_name("FILE");
  app.add_option("--k8s-ca", k8s.ca, "CA bundle for --k8s-api")->type_name("FILE");
  app.add_option("--kubeconfig", k8s.kubeconfig, "take the API server and credentials from a kubeconfig")
      ->type_name("FILE");
}

int fail(spdlog::logger& log, const Error& err) {
  log.error("{}", err.message);
  log.flush();
  return err.kind == Error::Kind::kBadInput ? 2 : 1;
}

std::string find_bundled_rules() {
  std::vector<fs::path> candidates;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = '\0';
    fs::path exe_dir = fs::path(buf).parent_path();
    candidates.push_back(exe_dir.parent_path() / "rules");
    candidates.push_back(exe_dir.parent_path() / "share" / "vigil" / "rules");
  }
  candidates.emplace_back("/usr/share/vigil/rules");
  candidates.emplace_back("/usr/local/share/vigil/rules");
  candidates.emplace_back("rules");
  std::error_code ec;
  for (const fs::path& p : candidates) {
    if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

Result<std::vector<std::string>> config_rule_paths(const YAML::Node& cfg) {
  std::vector<std::string> out;
  YAML::Node r = cfg["rules"];
  if (!r || r.IsNull()) return out;
  if (r.IsScalar()) {
    out.push_back(r.as<std::string>());
    return out;
  }
  if (!r.IsSequence()) return Error::bad_input("config key 'rules' must be a path or a list of paths");
  for (const YAML::Node& n : r) {
    if (!n.IsScalar()) return Error::bad_input("config key 'rules' must be a path or a list of paths");
    out.push_back(n.as<std::string>());
  }
  return out;
}

Status check_rule_counts(const RuleCounts& c, const RuleCountPolicy& policy) {
  if (c.enabled == 0 && !policy.allow_empty) {
    return Error::bad_input("no enabled rule" +
                            (c.skipped ? " (" + std::to_string(c.skipped) + " skipped)" : std::string()) +
                            ": vigil would detect nothing (--allow-no-rules runs anyway)");
  }
  if (c.enabled_in_force > 0 && c.skipped > 0 && c.enabled < c.enabled_in_force) {
    const std::size_t lost = c.enabled_in_force - c.enabled;
    if (static_cast<double>(lost) > policy.max_skipped_share * static_cast<double>(c.enabled_in_force)) {
      return Error::bad_input(std::to_string(c.skipped) + " rules skipped: " + std::to_string(c.enabled) +
                              " enabled rules instead of " + std::to_string(c.enabled_in_force) +
                              ", more than " + std::to_string(static_cast<int>(policy.max_skipped_share * 100 + 0.5)) +
                              "% fewer (--max-skipped-rules)");
    }
  }
  return {};
}

Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log,
                                                                const rules::LoadOptions& opts,
                                                                RuleCounts* counts) {
  rules::LoadResult res = rules::load_rules(paths, opts);
  for (const rules::Diagnostic& d : res.diagnostics) {
    if (d.severity == rules::Severity::kError) {
      log.error("{}", d.to_string());
    } else {
      log.warn("{}", d.to_string());
    }
  }
  if (res.errors > 0 || !res.ruleset) {
    return Error::bad_input("rules: " + std::to_string(res.loaded) + " loaded, " +
                            std::to_string(res.skipped) + " skipped, " + std::to_string(res.errors) +
                            " errors");
  }
  log.info("rules: {} loaded, {} skipped, {} errors", res.loaded, res.skipped, res.errors);
  if (counts) {
    counts->enabled = res.ruleset->enabled_count();
    counts->skipped = res.skipped;
    counts->skipped_rules = res.skipped_rules;
  }
  return std::shared_ptr<const rules::Ruleset>(res.ruleset);
}

std::string host_name(const YAML::Node& cfg) {
  if (cfg["hostname"] && cfg["hostname"].IsScalar()) return cfg["hostname"].as<std::string>();
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') return node;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) == 0) return buf;
  return "localhost";
}

Result<YAML::Node> load_config_with_overrides(const std::string& path,
                                              const std::vector<std::string>& overrides) {
  return load_config(path, overrides);
}

// The section readers below read each key with get_or, which checks it
// against the schema (engine/cli/config_schema.h): types and ranges live there.
Result<LiveSourcesConfig> live_sources_config(const YAML::Node& cfg, std::set<event::Type> types,
                                              const rules::OpenPaths& open_paths) {
  LiveSourcesConfig out;
  sensor::Config& sc = out.sensor;
  sc.event_types = std::move(types);
  sc.open_path_prefixes = open_paths.prefixes;
  sc.open_write_prefixes = open_paths.write_prefixes;
  sc.open_given_prefixes = open_paths.given;
  sc.open_path_whole = open_paths.whole;
  sc.open_dirs = open_paths.directories;
  auto payload = get_or<std::uint32_t>(cfg, "sensor.payload_bytes", sc.payload_bytes);
  if (!payload) return payload.error();
  sc.payload_bytes = *payload;
  auto rb = get_or<std::uint32_t>(cfg, "sensor.ringbuf_mib", static_cast<std::uint32_t>(sc.ringbuf_bytes >> 20));
  if (!rb) return rb.error();
  sc.ringbuf_bytes = static_cast<std::size_t>(*rb) << 20;
  auto usage = get_or<std::uint32_t>(cfg, "sensor.usage_interval_ms",
                                     static_cast<std::uint32_t>(sc.usage_interval.count()));
  if (!usage) return usage.error();
  sc.usage_interval = std::chrono::milliseconds(*usage);
  auto wake = get_or<std::uint32_t>(cfg, "sensor.wakeup_kib", static_cast<std::uint32_t>(sc.wakeup_bytes >> 10));
  if (!wake) return wake.error();
  if (*wake > (*rb << 10) / 2) {
    return Error::bad_input("config key 'sensor.wakeup_kib' must be at most half of sensor.ringbuf_mib");
  }
  sc.wakeup_bytes = static_cast<std::size_t>(*wake) << 10;
  auto ident = get_or<bool>(cfg, "sensor.identify_exe", sc.identify_exe);
  if (!ident) return ident.error();
  sc.identify_exe = *ident;
  auto ioctl_cache = get_or<bool>(cfg, "sensor.ioctl_cache", sc.ioctl_cache);
  if (!ioctl_cache) return ioctl_cache.error();
  sc.ioctl_cache = *ioctl_cache;
  auto kmsg = get_or<std::string>(cfg, "sensor.kmsg_path", out.kmsg_path);
  if (!kmsg) return kmsg.error();
  out.kmsg_path = *kmsg;
  out.kmsg_syslog_fallback = out.kmsg_path == "/dev/kmsg";
  return out;
}

namespace {

// Would the kernel's open filter, given `before`, already send the opens a
// literal of this kind in `now` names? A path is covered by a prefix of the
// resolved path that starts it, or by the same literal of its own kind.
std::vector<std::string> uncovered_paths(const rules::OpenPaths& now, const rules::OpenPaths& before) {
  auto starts_one = [](const std::string& p, const std::vector<std::string>& list) {
    return std::any_of(list.begin(), list.end(), [&p](const std::string& q) { return p.starts_with(q); });
  };
  std::vector<std::string> out;
  auto check = [&](const std::vector<std::string>& paths, const std::vector<std::string>& same_kind) {
    for (const std::string& p : paths) {
      if (!starts_one(p, before.prefixes) && !starts_one(p, same_kind)) out.push_back(p);
    }
  };
  check(now.prefixes, {});
  check(now.write_prefixes, before.write_prefixes);
  for (const std::string& p : now.given) {
    if (!starts_one(p, before.given)) out.push_back(p);
  }
  check(now.whole, before.whole);
  check(now.directories, before.directories);
  return out;
}

}  // namespace

std::string sensor_gaps(const std::set<event::Type>& collected, const rules::OpenPaths& filtered,
                        const rules::Ruleset& next) {
  using event::Type;
  std::set<Type> have = collected;
  // Always on (process state), or from sources that do not depend on the
  // rules (plugins); ioctl and gpu_usage come from the same hooks.
  have.insert({Type::kExec, Type::kFork, Type::kExit, Type::kPlugin});
  if (have.count(Type::kIoctl) || have.count(Type::kGpuUsage)) have.insert({Type::kIoctl, Type::kGpuUsage});
  std::map<Type, std::vector<std::string>> missing;  // type -> who needs it
  for (Type t : next.event_types()) {
    if (!have.count(t)) missing[t];
  }
  auto needs = [&missing](const std::string& who, const std::vector<std::string>& types) {
    std::set<Type> seen;
    for (const std::string& n : types) {
      Type t = event::type_from_name(n);
      auto it = missing.find(t);
      if (it != missing.end() && seen.insert(t).second) it->second.push_back(who);
    }
  };
  if (!missing.empty()) {
    for (const auto& r : next.rules()) {
      if (r.enabled) needs("'" + r.name + "'", r.event_types);
    }
    for (const auto& s : next.sequences()) {
      if (!s.enabled) continue;
      std::vector<std::string> all;
      for (const auto& step : s.step_event_types) all.insert(all.end(), step.begin(), step.end());
      needs("sequence '" + s.name + "'", all);
    }
  }
  std::string out;
  for (const auto& [t, who] : missing) {
    out += out.empty() ? "events the sensor does not collect: " : ", ";
    out += std::string(event::type_name(t));
    if (who.empty()) continue;
    out += " (";
    for (std::size_t i = 0; i < who.size() && i < 3; ++i) out += (i ? ", " : "") + who[i];
    if (who.size() > 3) out += " and " + std::to_string(who.size() - 3) + " more";
    out += ")";
  }
  // New paths matter only where the opens are collected at all.
  if (have.count(Type::kOpen)) {
    std::vector<std::string> paths = uncovered_paths(next.open_paths(), filtered);
    if (!paths.empty()) {
      out += out.empty() ? "" : "; ";
      out += "open paths the kernel's open filter was not given: ";
      for (std::size_t i = 0; i < paths.size(); ++i) out += (i ? ", " : "") + paths[i];
    }
  }
  if (!out.empty()) out += "; restart vigil to collect them";
  return out;
}

Status add_live_sources(runtime::Runner& runner, const LiveSourcesConfig& cfg, runtime::Parts& parts,
                        spdlog::logger& log) {
  const util::CapSet caps = util::effective_caps().value_or(util::CapSet::all());
  auto sensor = sensor::Sensor::open(cfg.sensor);
  if (!sensor && sensor.error().kind == Error::Kind::kBadInput) return sensor.error();
  if (sensor) {
    record_part(parts, log, "bpf", true);
    const sensor::CgroupPrograms& cgroup = (*sensor)->cgroup_programs();
    if (cgroup.wanted) record_part(parts, log, "bpf_cgroup", cgroup.off.empty(), cgroup.off);
    runner.add_source(std::move(*sensor));
  } else {
    record_part(parts, log, "bpf", false, sensor.error().message);
  }
  // Xid lines are read only when a rule asks for them.
  if (cfg.sensor.event_types.count(event::Type::kXid)) {
    int err = 0;
    auto k = sensor::KmsgSource::open(cfg.kmsg_path, &err);
    if (k) {
      record_part(parts, log, "kmsg", true);
      runner.add_source(std::move(*k));
    } else {
      const std::string why = err ? open_failure(cfg.kmsg_path, err, "mount the host's /dev/kmsg", caps,
                                                 {util::Cap::kSyslog})
                                  : k.error().message;
      // A pod that is not privileged cannot open the device even when it is
      // mounted (the runtime's device cgroup): the same lines come through
      // syslog(2), which needs only CAP_SYSLOG.
      int klog_err = 0;
      auto kl = cfg.kmsg_syslog_fallback ? sensor::KlogSource::open(std::chrono::seconds(1), &klog_err)
                                         : Result<std::unique_ptr<sensor::KlogSource>>(Error::runtime("off"));
      if (kl) {
        log.info("kmsg: {}; reading the kernel log through syslog(2) instead (polled every second)", why);
        record_part(parts, log, "kmsg", true);
        runner.add_source(std::move(*kl));
      } else {
        std::string also;
        if (cfg.kmsg_syslog_fallback) {
          also = "; syslog(2): " + (klog_err ? open_failure("the kernel log", klog_err, "", caps, {util::Cap::kSyslog})
                                             : kl.error().message);
        }
        record_part(parts, log, "kmsg", false, why + also);
      }
    }
  }
  return {};
}

void add_plugin_sources(runtime::Runner& runner, std::vector<std::unique_ptr<source::EventSource>> sources,
                        runtime::Parts& parts, spdlog::logger& log) {
  for (auto& s : sources) {
    record_part(parts, log, s->name(), true);
    runner.add_source(std::move(s), /*essential=*/false);
  }
}

Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const K8sFlags& flags) {
  state::K8sOptions o;
  struct Key {
    const char* key;
    std::string* dst;
  } keys[] = {{"k8s.api", &o.api_url},       {"k8s.token_file", &o.token_file},
              {"k8s.ca_file", &o.ca_file},   {"k8s.kubeconfig", &o.kubeconfig},
              {"k8s.node_name", &o.node_name}};
  for (const Key& k : keys) {
    auto v = get_or<std::string>(cfg, k.key, "");
    if (!v) return v.error();
    *k.dst = *v;
  }
  if (!flags.api.empty()) o.api_url = flags.api;
  if (!flags.token_file.empty()) o.token_file = flags.token_file;
  if (!flags.ca.empty()) o.ca_file = flags.ca;
  if (!flags.kubeconfig.empty()) o.kubeconfig = flags.kubeconfig;
  return o;
}

Result<std::optional<state::K8sConfig>> discover_k8s(const YAML::Node& cfg, const K8sFlags& flags,
                                                     spdlog::logger& log, runtime::Parts& parts) {
  auto opts = k8s_options(cfg, flags);
  if (!opts) return opts.error();
  auto k8s = state::k8s_config_discover(*opts);
  if (k8s) {
    if (std::string w = state::tls_warning(*k8s); !w.empty()) log.warn("{}", w);
    return std::optional<state::K8sConfig>(std::move(*k8s));
  }
  if (k8s.error().kind == Error::Kind::kBadInput) return k8s.error();
  // Outside Kubernetes these parts have nothing to do: said at info.
  record_part(parts, log, "k8s", false, k8s.error().message, /*warn=*/false);
  record_part(parts, log, "pod_resources", false, "no Kubernetes API", /*warn=*/false);
  return std::optional<state::K8sConfig>();
}

namespace {

// Whether the kubelet's pod-resources socket takes a connection: "" when it
// does, else why not.
std::string pod_resources_off(const std::string& path, util::CapSet caps) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return "socket path too long: " + path;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  // Write access to the socket file is what connect needs: the owner's bits
  // as root, else CAP_DAC_OVERRIDE.
  return open_failure(path, err, "mount the host's /var/lib/kubelet/pod-resources", caps, {});
}

}  // namespace

Result<std::unique_ptr<state::PodWatcher>> watch_pods(const state::K8sConfig& k8s, state::State& st,
                                                      runtime::Runner& runner, spdlog::logger& log,
                                                      runtime::Parts& parts) {
  auto pods = std::make_unique<state::PodWatcher>(k8s);
  if (Status s = pods->start(); !s) return s.error();
  log.info("watching pods of node {} at {}", k8s.node_name, k8s.api_url);
  record_part(parts, log, "k8s", true);
  const std::string pr_off =
      pod_resources_off(k8s.pod_resources_socket, util::effective_caps().value_or(util::CapSet::all()));
  record_part(parts, log, "pod_resources", pr_off.empty(), pr_off);
  state::PodWatcher* w = pods.get();
  // Every turn: pods reach the state (and a capture) before most events that need them.
  runner.add_tick("pods", std::chrono::nanoseconds(0), [w, &st](std::uint64_t) { w->drain(st); });
  return pods;
}

void seed_state(state::State& st, spdlog::logger& log, runtime::Parts& parts) {
  const util::CapSet caps = util::effective_caps().value_or(util::CapSet::all());
  const std::string proc_off = procfs_off(caps);
  record_part(parts, log, "procfs", proc_off.empty(), proc_off);
  // The GPU table comes from the driver's files (State::load_nvidia, below).
  const std::string gpus = std::string(kNvidiaProcRoot) + "/gpus";
  if (DIR* d = ::opendir(gpus.c_str())) {
    ::closedir(d);
    record_part(parts, log, "gpu_inventory", true);
  } else {
    record_part(parts, log, "gpu_inventory", false,
                open_failure(gpus, errno, "no NVIDIA driver loaded on this node",
                             caps, {}));
  }
  if (Status s = st.seed_from_proc(); !s) {
    log.warn("seeding the process table from /proc: {}", s.error().message);
  }
  log.info("process table seeded: {} processes", st.process_count());
}

capture::WriterOptions capture_writer_options(const std::string& hostname, const state::State& st,
                                              capture::WriterOptions base) {
  base.info = capture::describe_host();
  base.info.hostname = hostname;
  base.snapshot = [&st] { return runtime::snapshot_of(st); };
  return base;
}

void add_capture_tick(runtime::Runner& runner, capture::CaptureWriter& writer, const runtime::CaptureTap& tap,
                      std::function<void(const Error&)> on_error) {
  auto failed = std::make_shared<bool>(false);
  runner.add_tick("capture flush", std::chrono::nanoseconds(0),
                  [&writer, &tap, failed, on_error = std::move(on_error)](std::uint64_t) {
                    if (*failed) return;
                    Status s = writer.tick();
                    if (s) s = tap.status();
                    if (!s) {
                      *failed = true;
                      on_error(s.error());
                    }
                  });
}

Result<capture::FlightRecorderOptions> flight_recorder_options(const YAML::Node& cfg,
                                                               const std::string& state_dir) {
  capture::FlightRecorderOptions o;
  o.dir = state_dir + "/flight";
  auto enabled = get_or<bool>(cfg, "flight_recorder.enabled", o.enabled);
  if (!enabled) return enabled.error();
  o.enabled = *enabled;
  auto dir = get_or<std::string>(cfg, "flight_recorder.dir", o.dir);
  if (!dir) return dir.error();
  o.dir = *dir;
  auto window = get_or<double>(cfg, "flight_recorder.window_s", o.window_ns / 1e9);
  if (!window) return window.error();
  auto after = get_or<double>(cfg, "flight_recorder.after_s", o.after_ns / 1e9);
  if (!after) return after.error();
  o.window_ns = static_cast<std::uint64_t>(*window * 1e9);
  o.after_ns = static_cast<std::uint64_t>(*after * 1e9);
  auto mem = get_or<std::uint32_t>(cfg, "flight_recorder.max_mib", static_cast<std::uint32_t>(o.max_bytes >> 20));
  if (!mem) return mem.error();
  o.max_bytes = static_cast<std::size_t>(*mem) << 20;
  auto disk = get_or<std::uint32_t>(cfg, "flight_recorder.max_disk_mib",
                                    static_cast<std::uint32_t>(o.max_disk_bytes >> 20));
  if (!disk) return disk.error();
  o.max_disk_bytes = static_cast<std::uint64_t>(*disk) << 20;
  auto keep = get_or<std::uint32_t>(cfg, "flight_recorder.keep", static_cast<std::uint32_t>(o.keep));
  if (!keep) return keep.error();
  o.keep = *keep;
  auto prio = get_or<std::string>(cfg, "flight_recorder.min_priority",
                                  std::string(event::priority_name(o.min_priority)));
  if (!prio) return prio.error();
  auto p = event::priority_from_name(*prio);
  if (!p) return Error::bad_input("config key 'flight_recorder.min_priority': unknown priority '" + *prio + "'");
  o.min_priority = *p;
  return o;
}

namespace {
// Each path absolute, and its real path where a symlink makes that differ;
// no duplicates, no trailing '/'.
std::vector<std::string> absolute_and_real(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  auto add = [&](const std::filesystem::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  for (const std::string& g : given) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(g, ec);
    if (ec) continue;
    add(abs);
    auto real = std::filesystem::weakly_canonical(abs, ec);
    if (!ec) add(real);
  }
  return out;
}
}  // namespace

std::vector<std::string> own_paths(const std::string& config, const std::vector<std::string>& rules,
                                   const YAML::Node& cfg, const std::string& capture) {
  std::vector<std::string> given;
  if (!config.empty()) given.push_back(config);
  given.insert(given.end(), rules.begin(), rules.end());
  auto state_dir = get_or<std::string>(cfg, "state_dir", "/var/lib/vigil");
  if (state_dir) {
    given.push_back(*state_dir);
    if (auto fr = flight_recorder_options(cfg, *state_dir); fr && fr->enabled) given.push_back(fr->dir);
  }
  if (!capture.empty()) given.push_back(capture);
  return absolute_and_real(given);
}

std::vector<std::string> own_files(const std::string& config, const std::vector<std::string>& rules,
                                   const std::string& capture) {
  std::vector<std::string> given;
  if (!config.empty()) given.push_back(config);
  for (const std::string& r : rules) {
    std::error_code ec;
    if (!std::filesystem::is_directory(r, ec)) {
      given.push_back(r);
      continue;
    }
    std::size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(r, ec); !ec && it != std::filesystem::directory_iterator() && n < 64;
         it.increment(ec), ++n) {
      const auto ext = it->path().extension();
      if (ext == ".yaml" || ext == ".yml") given.push_back(it->path().string());
    }
  }
  if (!capture.empty()) given.push_back(capture);
  return absolute_and_real(given);
}

}  // namespace vigil::cli
