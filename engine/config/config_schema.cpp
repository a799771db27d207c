#include "engine/config/config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engine/event/alert.h"
#include "engine/rules/append_output.h"
#include "engine/sensor/sensor.h"
#include "outputs/config.h"

namespace vigil::config {
namespace {

using K = ValueKind;

// The order is the order of docs/install.md's example.
constexpr KeySpec kSchema[] = {
    {"rules", K::kPaths},
    {"hostname", K::kString, 0, 0, false, true},
    {"state_dir", K::kString, 0, 0, false, true},
    {"outputs", K::kOutputs},
    {"append_output", K::kAppendOutput},
    {"sensor", K::kSection},
    {"sensor.payload_bytes", K::kUint, 0, 4096},
    {"sensor.ringbuf_mib", K::kUint, 1, 1024, true},
    {"sensor.usage_interval_ms", K::kUint, 100, 3600000},
    {"sensor.egress_interval_ms", K::kUint, 100, 3600000},
    {"sensor.egress_window_s", K::kUint, 1, 86400},
    {"sensor.wakeup_kib", K::kUint, 0, 524288},  // and at most half of ringbuf_mib
    {"sensor.kmsg_path", K::kString, 0, 0, false, true},
    {"sensor.identify_exe", K::kBool},
    {"sensor.ioctl_cache", K::kBool},
    {"sensor.watch_comm_prefix", K::kString},
    {"k8s", K::kSection},
    {"k8s.api", K::kString},
    {"k8s.token_file", K::kString},
    {"k8s.ca_file", K::kString},
    {"k8s.kubeconfig", K::kString},
    {"k8s.node_name", K::kString},
    {"k8s.pod_grace_s", K::kNumber, 0, 3600},
    {"k8s.metadata_wait_ms", K::kUint, 0, 60000},
    {"k8s.metadata_wait_max_alerts", K::kUint, 1, 1000000},
    {"state", K::kSection},
    {"state.process_grace_s", K::kNumber, 0, 3600},
    {"state.max_exited_processes", K::kUint, 1, 1000000},
    {"cri", K::kSection},
    {"cri.socket", K::kString},
    {"cri.timeout_ms", K::kNumber, 10, 60000},
    {"plugins", K::kPlugins},
    {"load_plugins", K::kNames},
    {"prevention", K::kSection},
    {"prevention.mode", K::kString},
    {"posture", K::kSection},
    {"posture.enabled", K::kBool},
    {"posture.host_root", K::kString, 0, 0, false, true},
    {"posture.kernel_root", K::kString, 0, 0, false, true},
    {"posture.interval_s", K::kUint, 1, 86400},
    {"aggregation", K::kSection},
    {"aggregation.window_s", K::kNumber, 0, 86400},
    {"aggregation.by", K::kNames},
    {"aggregation.max_keys", K::kUint, 1, 1000000},
    {"aggregation.max_keys_per_rule", K::kUint, 1, 1000000},
    {"heartbeat", K::kSection},
    {"heartbeat.interval_s", K::kUint, 0, 86400},
    {"webserver", K::kSection},
    {"webserver.enabled", K::kBool},
    {"webserver.listen", K::kString, 0, 0, false, true},
    {"webserver.stall_after_s", K::kNumber, 1, 3600},
    {"flight_recorder", K::kSection},
    {"flight_recorder.enabled", K::kBool},
    {"flight_recorder.dir", K::kString, 0, 0, false, true},
    {"flight_recorder.window_s", K::kNumber, 0, 3600},
    {"flight_recorder.after_s", K::kNumber, 0, 3600},
    {"flight_recorder.max_mib", K::kUint, 1, 4096},
    {"flight_recorder.min_priority", K::kPriority},
    {"flight_recorder.keep", K::kUint, 0, 100000},
    {"flight_recorder.max_disk_mib", K::kUint, 0, 1048576},
    {"baseline", K::kSection},
    {"baseline.enabled", K::kBool},
    {"baseline.dir", K::kString, 0, 0, false, true},
    {"baseline.key", K::kString, 0, 0, false, true},  // image, image_digest, owner (check_config)
    {"baseline.learn_for_s", K::kNumber, 0, 31536000},
    {"baseline.save_interval_s", K::kNumber, 1, 86400},
    {"baseline.v4_prefix", K::kUint, 0, 32},
    {"baseline.v6_prefix", K::kUint, 0, 128},
    {"baseline.ephemeral_from", K::kUint, 0, 65535},
    {"baseline.watch_paths", K::kPaths},
    {"baseline.max_workloads", K::kUint, 1, 100000},
    {"baseline.max_exes", K::kUint, 1, 65536},
    {"baseline.max_destinations", K::kUint, 1, 65536},
    {"baseline.max_files", K::kUint, 1, 65536},
    {"baseline.max_gpu_classes", K::kUint, 1, 4096},
};

std::string num(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  return std::to_string(d);
}

std::string range(const KeySpec& s) { return "from " + num(s.min) + " to " + num(s.max); }

// The keys directly under `section` ("" for the top level), for messages.
std::string keys_under(std::string_view section) {
  std::string out;
  for (const KeySpec& s : kSchema) {
    std::string_view p = s.path;
    if (section.empty()) {
      if (p.find('.') != std::string_view::npos) continue;
    } else {
      if (p.size() <= section.size() + 1 || p.substr(0, section.size()) != section || p[section.size()] != '.') {
        continue;
      }
      p.remove_prefix(section.size() + 1);
    }
    out += (out.empty() ? "" : ", ") + std::string(p);
  }
  return out;
}

// What a scalar looks like in a message: quoted, cut short.
std::string shown(const YAML::Node& v) {
  if (!v.IsScalar()) return v.IsSequence() ? "a list" : "a mapping";
  std::string s = v.Scalar();
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return "'" + s + "'";
}

Status why(const std::string& reason) { return Error::bad_input(reason); }

Status check_scalar_number(const KeySpec& spec, const YAML::Node& v) {
  const bool whole = spec.kind == K::kUint;
  const std::string expected = std::string(whole ? "a whole number " : "a number ") + range(spec);
  if (!v.IsScalar()) return why("expected " + expected + ", got " + shown(v));
  const std::string& s = v.Scalar();
  double d = 0;
  bool ok = !s.empty() && s.size() <= 24;
  if (ok && whole) {
    ok = std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (ok) d = static_cast<double>(std::stoull(s.substr(0, 19)));
    if (s.size() > 19) d = INFINITY;
  } else if (ok) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    ok = ec == std::errc() && p == s.data() + s.size() && std::isfinite(d);
  }
  if (!ok) return why("expected " + expected + ", got " + shown(v));
  if (d < spec.min || d > spec.max) return why("must be " + range(spec) + ", got " + s);
  if (spec.power_of_two) {
    const auto u = static_cast<std::uint64_t>(d);
    if ((u & (u - 1)) != 0) return why("must be a power of two " + range(spec) + ", got " + s);
  }
  return {};
}

// The plugins: list; plugin::parse_config checks the declarations further
// (names, duplicates, load_plugins naming declared plugins).
Status check_plugins(const YAML::Node& v, const ConfigOrigin& origin) {
  if (!v.IsSequence()) return origin.error({"plugins"}, v, "expected a list of {name, library_path, init_config}");
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node p = v[i];
    const std::vector<std::string> at = {"plugins", std::to_string(i)};
    if (!p.IsMap()) return origin.error(at, p, "expected a mapping of name, library_path, init_config");
    for (const auto& kv : p) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      std::vector<std::string> path = at;
      path.push_back(k);
      if (k == "name" || k == "library_path") {
        if (!kv.second.IsScalar() || kv.second.Scalar().empty()) {
          return origin.error(path, kv.second, "expected a non-empty string");
        }
      } else if (k != "init_config") {
        return origin.error(path, kv.first, "unknown key (known: name, library_path, init_config)");
      }
    }
  }
  return {};
}

Status check_section(std::string_view name, const YAML::Node& v, const ConfigOrigin& origin);

// One key of the root or of a section: known, and its value well-formed.
Status check_entry(const std::vector<std::string>& path, const YAML::Node& key, const YAML::Node& value,
                   const ConfigOrigin& origin) {
  std::string dotted;
  for (const std::string& p : path) dotted += (dotted.empty() ? "" : ".") + p;
  const KeySpec* spec = key.IsScalar() ? find_key(dotted) : nullptr;
  if (!spec) {
    const std::string section = path.size() > 1 ? path.front() : "";
    return origin.error(path, key, "unknown key (known: " + keys_under(section) + ")");
  }
  if (spec->kind == K::kSection) return check_section(spec->path, value, origin);
  if (spec->kind == K::kPlugins) return value.IsNull() ? Status{} : check_plugins(value, origin);
  if (spec->kind == K::kOutputs) return {};  // parse_outputs, once state_dir is known
  if (spec->kind == K::kAppendOutput) {
    auto parsed = rules::parse_append_output(value, origin);
    return parsed ? Status{} : Status(parsed.error());
  }
  if (Status st = check_value(*spec, value); !st) return origin.error(path, value, st.error().message);
  return {};
}

Status check_section(std::string_view name, const YAML::Node& v, const ConfigOrigin& origin) {
  if (v.IsNull()) return {};
  if (!v.IsMap()) {
    return origin.error({std::string(name)}, v, "expected a mapping of " + keys_under(name) + "; got " + shown(v));
  }
  for (const auto& kv : v) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (Status st = check_entry({std::string(name), k}, kv.first, kv.second, origin); !st) return st;
  }
  return {};
}

}  // namespace

std::span<const KeySpec> config_schema() { return kSchema; }

const KeySpec* find_key(std::string_view dotted) {
  for (const KeySpec& s : kSchema) {
    if (s.path == dotted) return &s;
  }
  return nullptr;
}

Status check_value(const KeySpec& spec, const YAML::Node& v) {
  if (!v.IsDefined() || v.IsNull()) return {};
  switch (spec.kind) {
    case K::kString:
      if (!v.IsScalar()) return why("expected a string, got " + shown(v));
      if (spec.non_empty && v.Scalar().empty()) return why("must not be empty");
      return {};
    case K::kBool:
      if (v.IsScalar()) {
        bool b = false;
        if (YAML::convert<bool>::decode(v, b)) return {};
      }
      return why("expected true or false, got " + shown(v));
    case K::kUint:
    case K::kNumber: return check_scalar_number(spec, v);
    case K::kPriority:
      if (v.IsScalar() && event::priority_from_name(v.Scalar())) return {};
      return why("unknown priority " + shown(v) +
                 " (Emergency, Alert, Critical, Error, Warning, Notice, Informational, Debug)");
    case K::kPaths:
      if (v.IsScalar() && !v.Scalar().empty()) return {};
      if (v.IsSequence() &&
          std::all_of(v.begin(), v.end(), [](const YAML::Node& e) { return e.IsScalar() && !e.Scalar().empty(); })) {
        return {};
      }
      return why("expected a path or a list of paths");
    case K::kNames:
      if (v.IsSequence() && std::all_of(v.begin(), v.end(), [](const YAML::Node& e) { return e.IsScalar(); })) {
        return {};
      }
      return why("expected a list of names");
    case K::kSection:
      if (v.IsMap()) return {};
      return why("expected a mapping of " + keys_under(spec.path) + "; got " + shown(v));
    case K::kOutputs:
    case K::kPlugins:
    case K::kAppendOutput:
      if (v.IsSequence()) return {};
      return why("expected a list");
  }
  return {};
}

Status check_config(const YAML::Node& root, const ConfigOrigin& origin) {
  if (!root.IsDefined() || root.IsNull()) return {};
  if (!root.IsMap()) return origin.error({}, root, "the configuration must be a YAML mapping");
  for (const auto& kv : root) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (Status st = check_entry({k}, kv.first, kv.second, origin); !st) return st;
  }
  // sensor.wakeup_kib: at most half of the ring buffer.
  // (A missing key gives an invalid handle: IsDefined() first, always.)
  const YAML::Node sensor = root["sensor"];
  if (sensor.IsDefined() && sensor.IsMap()) {
    const YAML::Node wake = sensor["wakeup_kib"], rb = sensor["ringbuf_mib"];
    std::uint64_t rb_mib = sensor::Config{}.ringbuf_bytes >> 20;
    if (rb.IsDefined() && !rb.IsNull()) rb_mib = rb.as<std::uint64_t>();
    if (wake.IsDefined() && !wake.IsNull() && wake.as<std::uint64_t>() > rb_mib * 1024 / 2) {
      return origin.error({"sensor", "wakeup_kib"}, wake,
                          "must be at most half of sensor.ringbuf_mib (" + std::to_string(rb_mib * 512) + ")");
    }
  }
  // baseline.key: one of the key modes (engine/baseline/key.h).
  const YAML::Node baseline = root["baseline"];
  if (baseline.IsDefined() && baseline.IsMap()) {
    const YAML::Node key = baseline["key"];
    if (key.IsDefined() && key.IsScalar() && key.Scalar() != "image" && key.Scalar() != "image_digest" &&
        key.Scalar() != "owner") {
      return origin.error({"baseline", "key"}, key,
                          "expected image, image_digest or owner, got '" + key.Scalar().substr(0, 40) + "'");
    }
  }
  const YAML::Node outputs = root["outputs"];
  if (outputs.IsDefined() && !outputs.IsNull()) {
    const YAML::Node sd = root["state_dir"];
    const std::string state_dir = sd.IsDefined() && sd.IsScalar() ? sd.Scalar() : "/var/lib/vigil";
    auto parsed = outputs::parse_outputs(outputs, state_dir, &origin);
    if (!parsed) return parsed.error();
  }
  return {};
}

}  // namespace vigil::config
