// libvigil_cuda.so: the C ABI (plugins/include/vigil/plugin_api.h) over
// CudaSource (the source) and the wire decoder (the extractor).
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "plugins/cuda/calls.h"
#include "plugins/cuda/config.h"
#include "plugins/cuda/source.h"
#include "plugins/cuda/wire.h"
#include "vigil/plugin_api.h"

using namespace vigil::cuda;

struct vigil_plugin_state {
  vigil_host host{};
  std::unique_ptr<CudaSource> source;
  std::vector<OutEvent> batch;  // owned until the next next_batch
  std::vector<vigil_event> events;
  std::vector<std::string> values;  // owned until the next extract
  std::string last_error;
};

namespace {

enum Field : std::uint32_t {
  kCall,
  kCategory,
  kDevice,
  kAllocSize,
  kPtr,
  kModulePath,
  kModuleKind,
  kLaunches,
  kGraphLaunches,
  kIntervalMs,
  kLibrary,
  kProbes,
  kMissing,
  kDropsCalls,
  kDropsLaunches,
  kFieldCount
};

constexpr std::array<vigil_field_info, kFieldCount> kFields{{
    {"cuda.call", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The CUDA driver API entry point called (cuda_call events), e.g. cuMemAlloc_v2."},
    {"cuda.category", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The kind of call: context, module, memory (cuda_call) or launch (cuda_launches)."},
    {"cuda.device", VIGIL_FIELD_INT64, VIGIL_ARG_NONE,
     "The CUDA device ordinal a context is created on (as the process numbers its visible devices)."},
    {"cuda.alloc.size", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Bytes of device memory requested (cuMemAlloc_v2, cuMemAllocManaged, cuMemAllocAsync)."},
    {"cuda.ptr", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE, "The device pointer freed (cuMemFree_v2)."},
    {"cuda.module.path", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The file a module is loaded from (cuModuleLoad, cuLibraryLoadFromFile)."},
    {"cuda.module.kind", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The format of an in-memory module image by its first bytes: ptx, cubin, fatbin or unknown."},
    {"cuda.launches", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Kernel launches by the process in the interval (cuda_launches events, counted in the kernel)."},
    {"cuda.graph_launches", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "CUDA graph launches (cuGraphLaunch) by the process in the interval; each starts many kernels."},
    {"cuda.interval_ms", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The length of the interval a cuda_launches event covers, in milliseconds."},
    {"cuda.library", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The libcuda file probed, by the path the process that first mapped it sees."},
    {"cuda.probes", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Entry points attached in a newly probed libcuda file (cuda_library events)."},
    {"cuda.missing", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "Entry points not attached in a newly probed libcuda file, each with the reason."},
    {"cuda.drops.calls", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Call records lost since the plugin started (ring buffer or queue full), on cuda_launches events."},
    {"cuda.drops.launches", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Kernel launches not counted since the plugin started (launch map full), on cuda_launches events."},
}};

void copy_err(char* err, size_t errlen, const std::string& msg) {
  if (!err || errlen == 0) return;
  std::snprintf(err, errlen, "%s", msg.c_str());
}

}  // namespace

extern "C" {

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_required_api_version(void) { return VIGIL_PLUGIN_API_VERSION_STRING; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_name(void) { return "cuda"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_version(void) { return "0.1.0"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_description(void) {
  return "CUDA driver API activity per process from uprobes on libcuda: context creation, module "
         "loads, memory allocation, and kernel launches counted in the kernel.";
}

VIGIL_PLUGIN_EXPORT vigil_plugin_state* vigil_plugin_init(const vigil_host* host, const char* config_json, char* err,
                                                          size_t errlen) {
  try {
    Config cfg;
    std::string why;
    if (!parse_config(config_json ? config_json : "", cfg, why)) {
      copy_err(err, errlen, "init_config: " + why);
      return nullptr;
    }
    auto st = std::make_unique<vigil_plugin_state>();
    if (host) {
      std::size_t n = std::min<std::size_t>(host->size, sizeof(vigil_host));
      std::memcpy(&st->host, host, n);
      st->host.size = static_cast<std::uint32_t>(n);
    }
    vigil_host h = st->host;
    LogFn log = [h](LogLevel level, const std::string& msg) {
      if (h.size >= offsetof(vigil_host, log) + sizeof(h.log) && h.log)
        h.log(h.ctx, static_cast<vigil_log_level>(level), msg.c_str());
    };
    st->source = CudaSource::create(cfg, log, why);
    if (!st->source) {
      copy_err(err, errlen, why);
      return nullptr;
    }
    return st.release();
  } catch (const std::exception& e) {
    copy_err(err, errlen, std::string("init failed: ") + e.what());
    return nullptr;
  }
}

VIGIL_PLUGIN_EXPORT void vigil_plugin_destroy(vigil_plugin_state* s) { delete s; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_last_error(vigil_plugin_state* s) {
  return s ? s->last_error.c_str() : "no plugin state";
}

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_event_source(void) { return "cuda"; }

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_next_batch(vigil_plugin_state* s, uint32_t max, uint32_t timeout_ms,
                                                     const vigil_event** events, uint32_t* n) {
  if (!s || !events || !n) return VIGIL_RC_FAILURE;
  *n = 0;
  *events = nullptr;
  try {
    s->batch.clear();
    s->events.clear();
    s->source->next(std::min(max, VIGIL_PLUGIN_MAX_BATCH), timeout_ms, s->batch);
    s->events.reserve(s->batch.size());
    for (const OutEvent& e : s->batch) {
      vigil_event ev{};
      ev.ts_ns = e.ts_ns;
      ev.pid = e.pid;
      ev.tid = e.tid;
      ev.gpu_minor = -1;  // a CUDA device ordinal is not a device minor (README)
      ev.data_len = static_cast<std::uint32_t>(e.data.size());
      ev.name = e.name;
      ev.data = reinterpret_cast<const uint8_t*>(e.data.data());
      s->events.push_back(ev);
    }
  } catch (const std::exception& e) {
    s->last_error = std::string("next_batch: ") + e.what();
    return VIGIL_RC_FAILURE;
  }
  *events = s->events.data();
  *n = static_cast<std::uint32_t>(s->events.size());
  return *n ? VIGIL_RC_OK : VIGIL_RC_TIMEOUT;
}

VIGIL_PLUGIN_EXPORT const vigil_field_info* vigil_plugin_get_fields(uint32_t* n) {
  if (n) *n = kFieldCount;
  return kFields.data();
}

VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_extract(vigil_plugin_state* s, const vigil_event* ev,
                                                  vigil_extract_request* reqs, uint32_t n) {
  if (!s || !ev || (!reqs && n)) return VIGIL_RC_FAILURE;
  try {
    s->values.clear();
    s->values.reserve(n);
    std::optional<Record> r;
    if (ev->data && ev->data_len <= VIGIL_PLUGIN_MAX_EVENT_DATA) r = decode({ev->data, ev->data_len});
    for (uint32_t i = 0; i < n; ++i) {
      vigil_extract_request& q = reqs[i];
      q.has_value = 0;
      if (!r) continue;
      auto str = [&](std::string v) {
        s->values.push_back(std::move(v));
        q.value.str = s->values.back().c_str();
        q.has_value = 1;
      };
      auto u64 = [&](std::uint64_t v) {
        q.value.u64 = v;
        q.has_value = 1;
      };
      auto call = call_by_id(r->call);
      switch (q.field) {
        case kCall:
          if (r->kind == Kind::kCall && call) str(std::string(call->symbol));
          break;
        case kCategory:
          if (r->kind == Kind::kCall && call) str(std::string(category_name(call->category)));
          if (r->kind == Kind::kLaunches) str("launch");
          break;
        case kDevice:
          if (r->present & Record::kHasDevice) {
            q.value.i64 = r->device;
            q.has_value = 1;
          }
          break;
        case kAllocSize:
          if (r->present & Record::kHasSize) u64(r->size);
          break;
        case kPtr:
          if (r->present & Record::kHasPtr) u64(r->ptr);
          break;
        case kModulePath:
          if (r->kind == Kind::kCall && !r->detail.empty()) str(r->detail);
          break;
        case kModuleKind:
          if (!r->module_kind.empty()) str(r->module_kind);
          break;
        case kLaunches:
          if (r->present & Record::kHasLaunches) u64(r->launches);
          break;
        case kGraphLaunches:
          if (r->present & Record::kHasLaunches) u64(r->graph_launches);
          break;
        case kIntervalMs:
          if (r->present & Record::kHasLaunches) u64(r->interval_ms);
          break;
        case kLibrary:
          if (!r->library.empty()) str(r->library);
          break;
        case kProbes:
          if (r->present & Record::kHasProbes) u64(r->probes);
          break;
        case kMissing:
          if (r->kind == Kind::kLibrary) str(r->detail);
          break;
        case kDropsCalls:
          if (r->present & Record::kHasDrops) u64(r->drops_calls);
          break;
        case kDropsLaunches:
          if (r->present & Record::kHasDrops) u64(r->drops_launches);
          break;
        default: break;
      }
    }
  } catch (const std::exception& e) {
    s->last_error = std::string("extract: ") + e.what();
    return VIGIL_RC_FAILURE;
  }
  return VIGIL_RC_OK;
}

}  // extern "C"
