#include "engine/cli/common.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "engine/capture/flight_recorder.h"
#include "engine/cli/config.h"
#include "engine/state/pods.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/sensor.h"

namespace vigil::cli {
namespace fs = std::filesystem;

std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
  auto log = std::make_shared<spdlog::logger>(name, sink);
  log->set_level(spdlog::level::from_str(level));
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  return log;
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

Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log) {
  rules::LoadOptions opts;
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
  return std::shared_ptr<const rules::Ruleset>(res.ruleset);
}

std::string host_name(const YAML::Node& cfg) {
  if (cfg["hostname"] && cfg["hostname"].IsScalar()) return cfg["hostname"].as<std::string>();
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') return node;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) == 0) return buf;
  return "localhost";
}

Result<sensor::Config> sensor_config(const YAML::Node& cfg, const rules::Ruleset& rules) {
  sensor::Config sc;
  sc.event_types = rules.event_types();
  sc.open_path_prefixes = rules.open_path_prefixes();
  sc.open_path_whole = rules.open_path_whole();
  auto payload = get_or<std::uint32_t>(cfg, "sensor.payload_bytes", sc.payload_bytes);
  if (!payload) return payload.error();
  if (*payload > 4096) return Error::bad_input("config key 'sensor.payload_bytes' must be at most 4096");
  sc.payload_bytes = *payload;
  auto rb = get_or<std::uint32_t>(cfg, "sensor.ringbuf_mib", static_cast<std::uint32_t>(sc.ringbuf_bytes >> 20));
  if (!rb) return rb.error();
  if (*rb == 0 || *rb > 1024 || (*rb & (*rb - 1)) != 0) {
    return Error::bad_input("config key 'sensor.ringbuf_mib' must be a power of two between 1 and 1024");
  }
  sc.ringbuf_bytes = static_cast<std::size_t>(*rb) << 20;
  auto usage = get_or<std::uint32_t>(cfg, "sensor.usage_interval_ms",
                                     static_cast<std::uint32_t>(sc.usage_interval.count()));
  if (!usage) return usage.error();
  if (*usage < 100) return Error::bad_input("config key 'sensor.usage_interval_ms' must be at least 100");
  sc.usage_interval = std::chrono::milliseconds(*usage);
  auto wake = get_or<std::uint32_t>(cfg, "sensor.wakeup_kib", static_cast<std::uint32_t>(sc.wakeup_bytes >> 10));
  if (!wake) return wake.error();
  if (*wake > (*rb << 10) / 2) return Error::bad_input("config key 'sensor.wakeup_kib' must be at most half of sensor.ringbuf_mib");
  sc.wakeup_bytes = static_cast<std::size_t>(*wake) << 10;
  auto kmsg = get_or<std::string>(cfg, "sensor.kmsg_path", sc.kmsg_path);
  if (!kmsg) return kmsg.error();
  sc.kmsg_path = *kmsg;
  return sc;
}

std::string describe_drops(const sensor::DropCounters& d) { return d.to_string(); }

Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const std::string& api,
                                      const std::string& token_file, const std::string& ca,
                                      const std::string& kubeconfig) {
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
  auto insecure = get_or<bool>(cfg, "k8s.insecure", false);
  if (!insecure) return insecure.error();
  o.insecure = *insecure;
  if (!api.empty()) o.api_url = api;
  if (!token_file.empty()) o.token_file = token_file;
  if (!ca.empty()) o.ca_file = ca;
  if (!kubeconfig.empty()) o.kubeconfig = kubeconfig;
  return o;
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
  if (*window < 0 || *window > 3600 || *after < 0 || *after > 3600) {
    return Error::bad_input("config keys 'flight_recorder.window_s' and 'after_s' must be between 0 and 3600");
  }
  o.window_ns = static_cast<std::uint64_t>(*window * 1e9);
  o.after_ns = static_cast<std::uint64_t>(*after * 1e9);
  auto mem = get_or<std::uint32_t>(cfg, "flight_recorder.max_mib", static_cast<std::uint32_t>(o.max_bytes >> 20));
  if (!mem) return mem.error();
  if (*mem == 0 || *mem > 4096) return Error::bad_input("config key 'flight_recorder.max_mib' must be 1..4096");
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

}  // namespace vigil::cli
