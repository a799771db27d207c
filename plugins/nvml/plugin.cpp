// libvigil_nvml: the C ABI of vigil's plugin API (plugins/include/vigil/
// plugin_api.h) over the NVML sampler. Source `nvml`, fields `nvml.*`.
//
// Threads: next_batch runs on vigil's source thread and touches only the
// source half of the state; extract runs on the pipeline thread and touches
// only the extract half. No exception crosses the ABI.
#include "config.h"
#include "fields.h"
#include "nvml_library.h"
#include "record.h"
#include "sampler.h"

#include <vigil/plugin_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using vigil::nvml::Config;
using vigil::nvml::DeviceSample;
using vigil::nvml::LogLevel;
using vigil::nvml::NvmlLibrary;
using vigil::nvml::Record;
using vigil::nvml::RecordBytes;
using vigil::nvml::RecordKind;
using vigil::nvml::Sampler;
using SteadyClock = std::chrono::steady_clock;

// The reason of the last call that returned VIGIL_RC_FAILURE on this thread
// (next_batch and extract run on different threads, so each has its own).
thread_local std::string t_last_error;

vigil_rc fail(std::string why) {
  t_last_error = std::move(why);
  return VIGIL_RC_FAILURE;
}

void write_err(char* err, std::size_t errlen, const std::string& msg) {
  if (err == nullptr || errlen == 0) return;
  std::snprintf(err, errlen, "%s", msg.c_str());
}

}  // namespace

// A record waiting for the host to take it; outside the anonymous namespace
// because vigil_plugin_state holds them (GCC's -Wsubobject-linkage, when this
// file shares a unity batch).
struct NvmlPendingRecord {
  RecordBytes data;
  std::uint32_t pid;
  std::int32_t gpu_minor;
  RecordKind kind;
};

struct vigil_plugin_state {
  // Set at init, read-only afterwards.
  vigil_host host{};
  bool has_log = false;
  Config config;
  std::unique_ptr<NvmlLibrary> lib;  // null: no NVML on this node
  std::unique_ptr<Sampler> sampler;

  // Source thread only.
  std::deque<NvmlPendingRecord> pending;
  std::uint64_t pending_ts_ns = 0;
  SteadyClock::time_point next_sample{};
  std::vector<RecordBytes> batch_data;
  std::vector<vigil_event> batch;

  // Extract (pipeline) thread only.
  Record extracted;

  void log(vigil_log_level level, const std::string& msg) const {
    if (has_log) host.log(host.ctx, level, msg.c_str());
  }
};

namespace {

vigil_log_level to_host_level(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return VIGIL_LOG_DEBUG;
    case LogLevel::kInfo: return VIGIL_LOG_INFO;
    case LogLevel::kWarn: return VIGIL_LOG_WARN;
    case LogLevel::kError: return VIGIL_LOG_ERROR;
  }
  return VIGIL_LOG_WARN;
}

void queue_sample(vigil_plugin_state& s, const std::vector<DeviceSample>& devices) {
  s.pending_ts_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  for (const DeviceSample& d : devices) {
    std::int32_t minor = d.has_minor ? static_cast<std::int32_t>(d.minor) : -1;
    s.pending.push_back({vigil::nvml::encode(d, nullptr), 0, minor, RecordKind::kDevice});
    for (const auto& p : d.processes) {
      s.pending.push_back({vigil::nvml::encode(d, &p), p.pid, minor, RecordKind::kProcess});
    }
  }
}

}  // namespace

extern "C" {

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_required_api_version(void) { return VIGIL_PLUGIN_API_VERSION_STRING; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_name(void) { return "nvml"; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_version(void) { return "0.2.0"; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_description(void) {
  return "GPU telemetry per process from NVIDIA's management library (NVML): SM and memory "
         "utilisation, GPU memory, device identity and ECC mode";
}

VIGIL_PLUGIN_EXPORT vigil_plugin_state* vigil_plugin_init(const vigil_host* host, const char* config_json, char* err,
                                                          std::size_t errlen) {
  try {
    std::string error;
    auto cfg = vigil::nvml::parse_config(config_json, error);
    if (!cfg) {
      write_err(err, errlen, "nvml init_config: " + error);
      return nullptr;
    }
    auto s = std::make_unique<vigil_plugin_state>();
    s->config = *cfg;
    if (host != nullptr && host->size >= offsetof(vigil_host, log) + sizeof(host->log) && host->log != nullptr) {
      s->host = *host;
      s->has_log = true;
    }
    std::string why;
    s->lib = NvmlLibrary::open(s->config.nvml_library, why);
    if (!s->lib) {
      s->log(VIGIL_LOG_WARN, "NVML unavailable, no GPU telemetry from this plugin: " + why);
      return s.release();
    }
    vigil_plugin_state* raw = s.get();
    s->sampler = std::make_unique<Sampler>(
        *s->lib, s->config.max_processes,
        [raw](LogLevel level, const std::string& msg) { raw->log(to_host_level(level), msg); });
    return s.release();
  } catch (const std::exception& e) {
    write_err(err, errlen, std::string("nvml init failed: ") + e.what());
  } catch (...) {
    write_err(err, errlen, "nvml init failed");
  }
  return nullptr;
}

VIGIL_PLUGIN_EXPORT void vigil_plugin_destroy(vigil_plugin_state* s) { delete s; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_last_error(vigil_plugin_state*) { return t_last_error.c_str(); }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_event_source(void) { return "nvml"; }

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_next_batch(vigil_plugin_state* s, uint32_t max, uint32_t timeout_ms,
                                                     const vigil_event** events, uint32_t* n) {
  if (s == nullptr || events == nullptr || n == nullptr) return fail("next_batch: null argument");
  *events = nullptr;
  *n = 0;
  if (!s->sampler) return VIGIL_RC_EOF;  // no NVML on this node
  if (max == 0) return fail("next_batch: max is 0");
  try {
    if (s->pending.empty()) {
      auto now = SteadyClock::now();
      if (now < s->next_sample) {
        auto wait = std::min<SteadyClock::duration>(s->next_sample - now, std::chrono::milliseconds(timeout_ms));
        std::this_thread::sleep_for(wait);
        now = SteadyClock::now();
        if (now < s->next_sample) return VIGIL_RC_TIMEOUT;
      }
      queue_sample(*s, s->sampler->sample());
      // Keep the cadence; after a stall, start again from now.
      s->next_sample += s->config.interval;
      if (s->next_sample <= now) s->next_sample = now + s->config.interval;
      if (s->pending.empty()) return VIGIL_RC_TIMEOUT;
    }
    std::size_t take =
        std::min<std::size_t>({s->pending.size(), max, static_cast<std::size_t>(VIGIL_PLUGIN_MAX_BATCH)});
    s->batch_data.clear();
    s->batch.clear();
    s->batch_data.reserve(take);
    s->batch.reserve(take);
    for (std::size_t i = 0; i < take; ++i) {
      NvmlPendingRecord& p = s->pending.front();
      s->batch_data.push_back(p.data);
      vigil_event ev{};
      ev.ts_ns = s->pending_ts_ns;
      ev.pid = p.pid;
      ev.tid = 0;
      ev.gpu_minor = p.gpu_minor;
      ev.data_len = static_cast<uint32_t>(vigil::nvml::kRecordSize);
      ev.name = vigil::nvml::event_name(p.kind);
      s->batch.push_back(ev);
      s->pending.pop_front();
    }
    for (std::size_t i = 0; i < take; ++i) s->batch[i].data = s->batch_data[i].data();
    *events = s->batch.data();
    *n = static_cast<uint32_t>(take);
    return VIGIL_RC_OK;
  } catch (const std::exception& e) {
    return fail(std::string("next_batch: ") + e.what());
  } catch (...) {
    return fail("next_batch failed");
  }
}

VIGIL_PLUGIN_EXPORT const vigil_field_info* vigil_plugin_get_fields(uint32_t* n) { return vigil::nvml::field_table(n); }

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_extract(vigil_plugin_state* s, const vigil_event* ev,
                                                  vigil_extract_request* reqs, uint32_t n) {
  if (n == 0) return VIGIL_RC_OK;
  if (reqs == nullptr) return fail("extract: null requests");
  for (uint32_t i = 0; i < n; ++i) {
    reqs[i].has_value = 0;
    reqs[i].value.u64 = 0;
  }
  if (s == nullptr || ev == nullptr) return fail("extract: null argument");
  try {
    std::string why;
    auto rec = vigil::nvml::decode(ev->data, ev->data_len, why);
    if (!rec) return fail(why);
    if (ev->name != nullptr && std::string_view(ev->name) != vigil::nvml::event_name(rec->kind)) {
      return fail("nvml event named '" + std::string(ev->name).substr(0, 63) + "' holds a " +
                  vigil::nvml::event_name(rec->kind) + " record");
    }
    s->extracted = std::move(*rec);
    for (uint32_t i = 0; i < n; ++i) {
      if (!vigil::nvml::extract_field(s->extracted, reqs[i])) {
        for (uint32_t j = 0; j < n; ++j) reqs[j].has_value = 0;
        return fail("extract: no nvml field with index " + std::to_string(reqs[i].field));
      }
    }
    return VIGIL_RC_OK;
  } catch (const std::exception& e) {
    return fail(std::string("extract: ") + e.what());
  } catch (...) {
    return fail("extract failed");
  }
}

}  // extern "C"
