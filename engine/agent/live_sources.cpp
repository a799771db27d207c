#include "engine/agent/live_sources.h"

#include <algorithm>
#include <map>

#include "engine/agent/parts.h"
#include "engine/config/config.h"
#include "engine/runtime/runner.h"
#include "engine/sensor/klog.h"
#include "engine/sensor/kmsg.h"

namespace vigil::agent {
using config::get_or;

// The section readers below read each key with get_or, which checks it
// against the schema (engine/config/config_schema.h): types and ranges live there.
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
  sc.open_traversal_prefixes = open_paths.traversal_prefixes;
  sc.open_traversal_fragments = open_paths.traversal_fragments;
  auto payload = get_or<std::uint32_t>(cfg, "sensor.payload_bytes", sc.payload_bytes);
  if (!payload) return payload.error();
  sc.payload_bytes = *payload;
  auto rb = get_or<std::uint32_t>(cfg, "sensor.ringbuf_mib", static_cast<std::uint32_t>(sc.ringbuf_bytes >> 20));
  if (!rb) return rb.error();
  sc.ringbuf_bytes = static_cast<std::size_t>(*rb) << 20;
  auto usage =
      get_or<std::uint32_t>(cfg, "sensor.usage_interval_ms", static_cast<std::uint32_t>(sc.usage_interval.count()));
  if (!usage) return usage.error();
  sc.usage_interval = std::chrono::milliseconds(*usage);
  auto egress =
      get_or<std::uint32_t>(cfg, "sensor.egress_interval_ms", static_cast<std::uint32_t>(sc.egress_interval.count()));
  if (!egress) return egress.error();
  sc.egress_interval = std::chrono::milliseconds(*egress);
  auto window =
      get_or<std::uint32_t>(cfg, "sensor.egress_window_s", static_cast<std::uint32_t>(sc.egress_window.count()));
  if (!window) return window.error();
  sc.egress_window = std::chrono::seconds(*window);
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
  auto watch = get_or<std::string>(cfg, "sensor.watch_comm_prefix", sc.watch_comm_prefix);
  if (!watch) return watch.error();
  if (watch->size() > 8) {
    return Error::bad_input(
        "config key 'sensor.watch_comm_prefix' is at most 8 bytes (the kernel compares the "
        "comm's first 8)");
  }
  sc.watch_comm_prefix = *watch;
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
  check(now.traversal_prefixes, before.traversal_prefixes);
  for (const std::string& f : now.traversal_fragments) {
    if (std::find(before.traversal_fragments.begin(), before.traversal_fragments.end(), f) ==
        before.traversal_fragments.end())
      out.push_back(f);
  }
  return out;
}

}  // namespace

std::string sensor_gaps(const std::set<event::Type>& collected, const rules::OpenPaths& filtered,
                        const rules::Ruleset& next) {
  using event::Type;
  std::set<Type> have = collected;
  // Always on (process state), or from sources that do not depend on the
  // rules (plugins, the posture); ioctl and gpu_usage come from the same hooks.
  have.insert({Type::kExec, Type::kFork, Type::kExit, Type::kPlugin, Type::kGpuPosture});
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
                        spdlog::logger& log, sensor::Sensor** sensor_out) {
  const util::CapSet caps = util::effective_caps().value_or(util::CapSet::all());
  auto sensor = sensor::Sensor::open(cfg.sensor);
  if (!sensor && sensor.error().kind == Error::Kind::kBadInput) return sensor.error();
  if (sensor) {
    record_part(parts, log, "bpf", true);
    const sensor::CgroupPrograms& cgroup = (*sensor)->cgroup_programs();
    if (cgroup.wanted) record_part(parts, log, "bpf_cgroup", cgroup.off.empty(), cgroup.off);
    if (sensor_out) *sensor_out = sensor->get();
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
      const std::string why =
          err ? open_failure(cfg.kmsg_path, err, "mount the host's /dev/kmsg", caps, {util::Cap::kSyslog})
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

}  // namespace vigil::agent
