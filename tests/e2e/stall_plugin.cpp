// The stall plugin: a test hook that stalls vigil's rule engine on purpose,
// so that the end-to-end test of /healthz can see detection stuck (issue 14).
// It is built for the tests only and never installed.
//
// Its source "stall" emits a "tick" every `interval_ms`. Its one field,
// stall.hold, blocks the extraction while the file `hold_file` exists (at
// most `max_hold_s` seconds), then reads 1. A rule on stall.hold therefore
// holds the pipeline thread inside rule evaluation for as long as the test
// keeps the file: events pile up in the ring buffer and the plugin's queue,
// and the loop stops turning, as it would behind a stuck extraction.
//
// init_config: {"hold_file": "/tmp/x/hold", "interval_ms": 20, "max_hold_s": 120}
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vigil/plugin_api.h"

namespace {

struct State {
  std::string hold_file;
  std::uint64_t interval_ms = 20;
  std::uint64_t max_hold_s = 120;
  std::chrono::steady_clock::time_point due{};
  vigil_event ev{};
  std::uint8_t data[1] = {1};
  std::string last_error;
};

const vigil_field_info kFields[] = {
    {"stall.hold", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE, "1, after waiting while the hold file exists."},
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

extern "C" {

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_required_api_version(void) { return VIGIL_PLUGIN_API_VERSION_STRING; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_name(void) { return "stall"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_version(void) { return "1.0.0"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_description(void) {
  return "Test hook: stalls rule evaluation while a file exists.";
}

VIGIL_PLUGIN_EXPORT vigil_plugin_state* vigil_plugin_init(const vigil_host*, const char* config, char* err,
                                                          size_t errlen) {
  auto* s = new State();
  try {
    const nlohmann::json j = nlohmann::json::parse(config ? config : "{}");
    s->hold_file = j.at("hold_file").get<std::string>();
    if (j.contains("interval_ms")) s->interval_ms = j["interval_ms"].get<std::uint64_t>();
    if (j.contains("max_hold_s")) s->max_hold_s = j["max_hold_s"].get<std::uint64_t>();
  } catch (const std::exception& e) {
    if (err && errlen) std::snprintf(err, errlen, "stall: %s", e.what());
    delete s;
    return nullptr;
  }
  return reinterpret_cast<vigil_plugin_state*>(s);
}

VIGIL_PLUGIN_EXPORT void vigil_plugin_destroy(vigil_plugin_state* st) { delete reinterpret_cast<State*>(st); }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_last_error(vigil_plugin_state* st) {
  return reinterpret_cast<State*>(st)->last_error.c_str();
}

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_event_source(void) { return "stall"; }

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_next_batch(vigil_plugin_state* st, uint32_t, uint32_t timeout_ms,
                                                     const vigil_event** events, uint32_t* n) {
  auto* s = reinterpret_cast<State*>(st);
  *events = nullptr;
  *n = 0;
  const auto now = std::chrono::steady_clock::now();
  if (s->due == std::chrono::steady_clock::time_point{}) s->due = now;
  if (now < s->due) {
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(s->due - now, std::chrono::milliseconds(timeout_ms)));
    if (std::chrono::steady_clock::now() < s->due) return VIGIL_RC_TIMEOUT;
  }
  s->due += std::chrono::milliseconds(s->interval_ms);
  s->ev = vigil_event{};
  s->ev.gpu_minor = -1;
  s->ev.name = "tick";
  s->ev.data = s->data;
  s->ev.data_len = sizeof(s->data);
  *events = &s->ev;
  *n = 1;
  return VIGIL_RC_OK;
}

VIGIL_PLUGIN_EXPORT const vigil_field_info* vigil_plugin_get_fields(uint32_t* n) {
  *n = sizeof(kFields) / sizeof(kFields[0]);
  return kFields;
}

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_extract(vigil_plugin_state* st, const vigil_event*,
                                                  vigil_extract_request* reqs, uint32_t n) {
  auto* s = reinterpret_cast<State*>(st);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(s->max_hold_s);
  while (exists(s->hold_file) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (uint32_t i = 0; i < n; ++i) {
    reqs[i].value.u64 = 1;
    reqs[i].has_value = 1;
  }
  return VIGIL_RC_OK;
}

}  // extern "C"
