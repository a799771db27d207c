#include "engine/state/pod_json.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

namespace vigil::state {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxString = 4096;
constexpr std::size_t kMaxMapEntries = 256;
constexpr std::size_t kMaxContainers = 64;
constexpr std::size_t kMaxEnv = 512;
constexpr std::size_t kMaxPodJson = 4u << 20;

const json* field(const json& obj, const char* key) { return json_member(obj, key); }
std::string str(const json& obj, const char* key) { return json_string(obj, key); }

std::map<std::string, std::string> string_map(const json& obj, const char* key) {
  std::map<std::string, std::string> out;
  const json* m = field(obj, key);
  if (!m || !m->is_object()) return out;
  for (auto it = m->begin(); it != m->end() && out.size() < kMaxMapEntries; ++it) {
    if (!it.value().is_string() || it.key().size() > 317) continue;  // 253 prefix + / + 63
    const auto& v = it.value().get_ref<const std::string&>();
    if (v.size() > kMaxString) continue;  // e.g. kubectl last-applied-configuration
    out.emplace(it.key(), v);
  }
  return out;
}

std::int64_t quantity(const json& q) {
  if (q.is_number_integer()) {
    auto v = q.get<std::int64_t>();
    return v > 0 && v < 1000000 ? v : 0;
  }
  if (!q.is_string()) return 0;
  const auto& s = q.get_ref<const std::string&>();
  if (s.empty() || s.size() > 6) return 0;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

// NVIDIA GPUs asked for: nvidia.com/gpu, its shared variant (nvidia.com/gpu.shared)
// and MIG slices of the mixed strategy (nvidia.com/mig-<profile>).
std::int64_t gpu_quantity(const json& limits) {
  if (!limits.is_object()) return 0;
  std::int64_t total = 0;
  std::size_t n = 0;
  for (auto it = limits.begin(); it != limits.end() && ++n <= kMaxMapEntries; ++it) {
    const std::string& k = it.key();
    if (k == "nvidia.com/gpu" || k.rfind("nvidia.com/gpu.", 0) == 0 || k.rfind("nvidia.com/mig-", 0) == 0) {
      total += quantity(it.value());
    }
  }
  return total;
}

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// A metav1.Time, RFC 3339 ("2026-11-26T10:00:00Z"; the API writes whole
// seconds and UTC, but a fraction and a ±hh:mm offset are read too), as ns
// since the epoch; 0 when it is not one or before 1970.
std::int64_t rfc3339_ns(std::string_view s) {
  auto digits = [&s](std::size_t at, std::size_t n, unsigned& out) {
    if (at + n > s.size()) return false;
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + static_cast<unsigned>(s[i] - '0');
    }
    return true;
  };
  unsigned Y, M, D, h, m, sec;
  if (!digits(0, 4, Y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, M) || s[7] != '-' || !digits(8, 2, D) ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2, h) || s[13] != ':' || !digits(14, 2, m) ||
      s[16] != ':' || !digits(17, 2, sec))
    return 0;
  if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return 0;
  std::size_t i = 19;
  std::int64_t frac = 0;
  if (s[i] == '.') {
    std::int64_t scale = 100'000'000;
    std::size_t start = ++i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      frac += (s[i] - '0') * scale;
      scale /= 10;
    }
    if (i == start) return 0;
  }
  std::int64_t offset = 0;
  std::string_view zone = s.substr(std::min(i, s.size()));
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    unsigned oh, om;
    if (!digits(i + 1, 2, oh) || !digits(i + 4, 2, om) || oh > 23 || om > 59) return 0;
    offset = (zone[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else {
    return 0;
  }
  const std::int64_t secs = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec - offset;
  return secs < 0 ? 0 : secs * 1'000'000'000 + frac;
}

// "containerd://<id>" → "<id>"
std::string strip_runtime_prefix(std::string id) {
  std::size_t p = id.find("://");
  if (p != std::string::npos) id.erase(0, p + 3);
  return id;
}

void add_containers(const json& spec, const json& status, const char* spec_key, const char* status_key, Pod* pod) {
  const json* list = field(spec, spec_key);
  if (!list || !list->is_array()) return;
  const json* statuses = field(status, status_key);
  for (const auto& c : *list) {
    if (pod->containers.size() >= kMaxContainers) return;
    if (!c.is_object()) continue;
    PodContainer pc;
    pc.name = str(c, "name");
    pc.image = str(c, "image");
    if (const json* res = field(c, "resources")) {
      if (const json* lim = field(*res, "limits")) pc.gpu_limit = gpu_quantity(*lim);
    }
    if (const json* env = field(c, "env"); env && env->is_array()) {
      std::size_t n = 0;
      for (const auto& e : *env) {
        if (++n > kMaxEnv) break;
        if (str(e, "name") == "NVIDIA_VISIBLE_DEVICES") pc.nvidia_visible_devices = str(e, "value");
      }
    }
    if (const json* sc = field(c, "securityContext")) {
      if (const json* p = field(*sc, "privileged"); p && p->is_boolean()) pc.privileged = p->get<bool>();
    }
    if (statuses && statuses->is_array()) {
      for (const auto& st : *statuses) {
        if (str(st, "name") != pc.name) continue;
        pc.id = strip_runtime_prefix(str(st, "containerID"));
        if (const json* cstate = field(st, "state")) {
          if (const json* running = field(*cstate, "running"))
            pc.started_at_ns = rfc3339_ns(str(*running, "startedAt"));
        }
        break;
      }
    }
    pod->containers.push_back(std::move(pc));
  }
}

// metadata.ownerReferences: the controller (controller: true), else the
// first entry. Entries past the 64th are not looked at.
void owner_of(const json& meta, Pod& p) {
  const json* refs = field(meta, "ownerReferences");
  if (!refs || !refs->is_array()) return;
  const json* pick = nullptr;
  std::size_t seen = 0;
  for (const json& r : *refs) {
    if (++seen > 64) break;
    if (!r.is_object() || str(r, "kind").empty() || str(r, "name").empty()) continue;
    if (!pick) pick = &r;
    const json* c = field(r, "controller");
    if (c && c->is_boolean() && c->get<bool>()) {
      pick = &r;
      break;
    }
  }
  if (!pick) return;
  p.owner_kind = str(*pick, "kind").substr(0, 64);
  p.owner_name = str(*pick, "name").substr(0, 253);
}

}  // namespace

Result<Pod> pod_from_json(const json& j) {
  if (!j.is_object()) return Error::bad_input("pod: not an object");
  const json* meta = field(j, "metadata");
  if (!meta || !meta->is_object()) return Error::bad_input("pod: no metadata");
  Pod p;
  p.uid = str(*meta, "uid");
  if (p.uid.empty() || p.uid.size() > 64) return Error::bad_input("pod: no uid");
  p.name = str(*meta, "name");
  p.ns = str(*meta, "namespace");
  p.resource_version = str(*meta, "resourceVersion");
  p.labels = string_map(*meta, "labels");
  p.annotations = string_map(*meta, "annotations");
  owner_of(*meta, p);
  static const json kEmpty = json::object();
  const json* spec = field(j, "spec");
  const json* status = field(j, "status");
  if (!spec) spec = &kEmpty;
  if (!status) status = &kEmpty;
  p.node = str(*spec, "nodeName");
  add_containers(*spec, *status, "containers", "containerStatuses", &p);
  add_containers(*spec, *status, "initContainers", "initContainerStatuses", &p);
  add_containers(*spec, *status, "ephemeralContainers", "ephemeralContainerStatuses", &p);
  return p;
}

const json* json_member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string json_string(const json& obj, const char* key) {
  const json* v = json_member(obj, key);
  if (!v || !v->is_string()) return {};
  const auto& s = v->get_ref<const std::string&>();
  return s.size() > kMaxString ? s.substr(0, kMaxString) : s;
}

Result<Pod> parse_pod_json(std::string_view text) {
  if (text.size() > kMaxPodJson) return Error::bad_input("pod: JSON too large");
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return Error::bad_input("pod: malformed JSON");
  return pod_from_json(j);
}

}  // namespace vigil::state
