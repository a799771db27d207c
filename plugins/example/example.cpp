// The example plugin (docs/plugins.md): an event source and a field extractor
// in one small file, written against plugins/include/vigil/plugin_api.h only.
//
// It emits a "tick" event every `interval_ms` about process `pid`, numbered
// from 1, `burst` at a time, and stops after `count` events (0: never). Its
// fields read the number back out of the event's data:
//
//   example.seq        uint64  the tick's number
//   example.even       bool    whether it is even
//   example.label      string  the configured label
//   example.tag[KEY]   string  KEY=value pairs of the configured tags
//
// It suggests example.label as an output field (ABI 1.1): with append_output's
// suggested_output, every alert of an `example` rule ends in example_label=...
//
// init_config: {"interval_ms": 100, "count": 0, "burst": 1, "pid": 0,
//               "label": "tick", "tags": {"team": "gpu"}}
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vigil/plugin_api.h"

namespace {

// The event data: a version byte, then the tick number, little-endian.
constexpr std::uint8_t kDataVersion = 1;
constexpr std::size_t kDataSize = 9;

struct State {
  const vigil_host* host = nullptr;
  std::uint64_t interval_ms = 100;
  std::uint64_t count = 0;
  std::uint32_t burst = 1;
  std::uint32_t pid = 0;
  std::string label = "tick";
  std::map<std::string, std::string> tags;

  std::uint64_t next = 1;                       // the next tick's number
  std::chrono::steady_clock::time_point due{};  // when the next tick is due
  std::vector<vigil_event> batch;               // returned by next_batch, valid until the next call
  std::vector<std::uint8_t> data;               // the batch's data, kDataSize bytes per event
  std::string last_error;
  std::vector<std::string> values;  // strings of the last extract call
};

void put_le64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

bool get_seq(const vigil_event* ev, std::uint64_t& seq) {
  if (!ev || ev->data_len != kDataSize || !ev->data || ev->data[0] != kDataVersion) return false;
  seq = 0;
  for (int i = 0; i < 8; ++i) seq |= static_cast<std::uint64_t>(ev->data[1 + i]) << (8 * i);
  return true;
}

const vigil_field_info kFields[] = {
    {"example.seq", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE, "The tick's number, from 1."},
    {"example.even", VIGIL_FIELD_BOOL, VIGIL_ARG_NONE, "Whether the tick's number is even."},
    {"example.label", VIGIL_FIELD_STRING, VIGIL_ARG_NONE, "The label of the plugin's configuration."},
    {"example.tag", VIGIL_FIELD_STRING, VIGIL_ARG_REQUIRED,
     "The value of one of the configured tags: example.tag[team]."},
};

void write_err(char* err, size_t errlen, const std::string& msg) {
  if (err && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
}

}  // namespace

extern "C" {

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_required_api_version(void) { return VIGIL_PLUGIN_API_VERSION_STRING; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_name(void) { return "example"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_version(void) { return "1.0.0"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_description(void) {
  return "Emits numbered ticks; the example of docs/plugins.md.";
}

VIGIL_PLUGIN_EXPORT vigil_plugin_state* vigil_plugin_init(const vigil_host* host, const char* config, char* err,
                                                          size_t errlen) {
  auto* s = new State();
  s->host = host;
  // Exceptions never cross the C boundary.
  try {
    const nlohmann::json j = nlohmann::json::parse(config ? config : "{}");
    if (!j.is_object()) throw std::runtime_error("init_config must be a JSON object");
    for (const auto& [key, v] : j.items()) {
      if (key == "interval_ms") s->interval_ms = v.get<std::uint64_t>();
      else if (key == "count") s->count = v.get<std::uint64_t>();
      else if (key == "burst") s->burst = v.get<std::uint32_t>();
      else if (key == "pid") s->pid = v.get<std::uint32_t>();
      else if (key == "label") s->label = v.get<std::string>();
      else if (key == "tags") s->tags = v.get<std::map<std::string, std::string>>();
      else throw std::runtime_error("unknown key '" + key + "'");
    }
    if (s->burst == 0 || s->burst > VIGIL_PLUGIN_MAX_BATCH) {
      throw std::runtime_error("burst must be 1.." + std::to_string(VIGIL_PLUGIN_MAX_BATCH));
    }
    if (s->interval_ms > 3600 * 1000) throw std::runtime_error("interval_ms is at most one hour");
    if (s->label.size() > 256) throw std::runtime_error("label is at most 256 bytes");
  } catch (const std::exception& e) {
    write_err(err, errlen, std::string("example: ") + e.what());
    delete s;
    return nullptr;
  }
  if (host && host->log) host->log(host->ctx, VIGIL_LOG_INFO, "ticking");
  return reinterpret_cast<vigil_plugin_state*>(s);
}

VIGIL_PLUGIN_EXPORT void vigil_plugin_destroy(vigil_plugin_state* st) { delete reinterpret_cast<State*>(st); }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_last_error(vigil_plugin_state* st) {
  return reinterpret_cast<State*>(st)->last_error.c_str();
}

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_event_source(void) { return "example"; }

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_next_batch(vigil_plugin_state* st, uint32_t max, uint32_t timeout_ms,
                                                     const vigil_event** events, uint32_t* n) {
  auto* s = reinterpret_cast<State*>(st);
  *events = nullptr;
  *n = 0;
  if (s->count && s->next > s->count) return VIGIL_RC_EOF;
  // Wait for the next tick, but never longer than vigil allows.
  const auto now = std::chrono::steady_clock::now();
  if (s->due == std::chrono::steady_clock::time_point{}) s->due = now + std::chrono::milliseconds(s->interval_ms);
  if (now < s->due) {
    const auto wait =
        std::min<std::chrono::steady_clock::duration>(s->due - now, std::chrono::milliseconds(timeout_ms));
    std::this_thread::sleep_for(wait);
    if (std::chrono::steady_clock::now() < s->due) return VIGIL_RC_TIMEOUT;
  }
  s->due += std::chrono::milliseconds(s->interval_ms);
  std::uint32_t k = std::min(s->burst, max);
  if (s->count) k = static_cast<std::uint32_t>(std::min<std::uint64_t>(k, s->count - s->next + 1));
  s->batch.assign(k, vigil_event{});
  s->data.assign(static_cast<std::size_t>(k) * kDataSize, 0);
  for (std::uint32_t i = 0; i < k; ++i) {
    std::uint8_t* d = s->data.data() + static_cast<std::size_t>(i) * kDataSize;
    d[0] = kDataVersion;
    put_le64(d + 1, s->next++);
    vigil_event& e = s->batch[i];
    e.pid = s->pid;
    e.gpu_minor = -1;
    e.name = "tick";
    e.data = d;
    e.data_len = kDataSize;
  }
  *events = s->batch.data();
  *n = k;
  return VIGIL_RC_OK;
}

VIGIL_PLUGIN_EXPORT const vigil_field_info* vigil_plugin_get_fields(uint32_t* n) {
  *n = sizeof(kFields) / sizeof(kFields[0]);
  return kFields;
}

VIGIL_PLUGIN_EXPORT const char* const* vigil_plugin_get_suggested_output_fields(void) {
  static const char* const kSuggested[] = {"example.label", nullptr};
  return kSuggested;
}

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_extract(vigil_plugin_state* st, const vigil_event* ev,
                                                  vigil_extract_request* reqs, uint32_t n) {
  auto* s = reinterpret_cast<State*>(st);
  std::uint64_t seq = 0;
  const bool ok = get_seq(ev, seq);  // data from a capture may be anything
  s->values.clear();
  s->values.reserve(n);  // no reallocation: the c_str()s handed out stay valid
  for (uint32_t i = 0; i < n; ++i) {
    vigil_extract_request& r = reqs[i];
    r.has_value = 0;
    switch (r.field) {
      case 0:
        if (ok) {
          r.value.u64 = seq;
          r.has_value = 1;
        }
        break;
      case 1:
        if (ok) {
          r.value.u64 = seq % 2 == 0;
          r.has_value = 1;
        }
        break;
      case 2:
        r.value.str = s->label.c_str();
        r.has_value = 1;
        break;
      case 3: {
        auto it = r.arg ? s->tags.find(r.arg) : s->tags.end();
        if (it != s->tags.end()) {
          r.value.str = s->values.emplace_back(it->second).c_str();
          r.has_value = 1;
        }
        break;
      }
      default: s->last_error = "no field " + std::to_string(r.field); return VIGIL_RC_FAILURE;
    }
  }
  return VIGIL_RC_OK;
}

}  // extern "C"
