// The nvml plugin seen the way vigil sees it: the shared object opened with
// dlopen and driven through the C ABI of plugins/include/vigil/plugin_api.h,
// with a host that records what the plugin logs. Used by the plugin tests and
// by nvml_probe (the real-NVML smoke program).
#pragma once

#include <vigil/plugin_api.h>

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace vigil::nvml::test {

struct LogLine {
  vigil_log_level level;
  std::string msg;
};

// Records the plugin's log lines (any thread).
class RecordingHost {
 public:
  RecordingHost() {
    host_.size = sizeof(vigil_host);
    host_.ctx = this;
    host_.log = [](void* ctx, vigil_log_level level, const char* msg) {
      auto* self = static_cast<RecordingHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu_);
      self->lines_.push_back({level, msg != nullptr ? msg : ""});
    };
  }
  const vigil_host* host() const { return &host_; }
  std::vector<LogLine> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const auto& l : lines()) {
      if (l.level == VIGIL_LOG_WARN) out.push_back(l.msg);
    }
    return out;
  }

 private:
  vigil_host host_{};
  mutable std::mutex mu_;
  std::vector<LogLine> lines_;
};

// The plugin's exported functions. ok() is false, and error() says why, when
// the library or one of its symbols could not be had.
class PluginLib {
 public:
  explicit PluginLib(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      error_ = e != nullptr ? e : "dlopen failed";
      return;
    }
    sym("vigil_plugin_get_required_api_version", get_required_api_version);
    sym("vigil_plugin_get_name", get_name);
    sym("vigil_plugin_get_version", get_version);
    sym("vigil_plugin_get_description", get_description);
    sym("vigil_plugin_init", init);
    sym("vigil_plugin_destroy", destroy);
    sym("vigil_plugin_get_last_error", get_last_error);
    sym("vigil_plugin_get_event_source", get_event_source);
    sym("vigil_plugin_next_batch", next_batch);
    sym("vigil_plugin_get_fields", get_fields);
    sym("vigil_plugin_extract", extract);
  }
  ~PluginLib() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  PluginLib(const PluginLib&) = delete;
  PluginLib& operator=(const PluginLib&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  const char* (*get_required_api_version)() = nullptr;
  const char* (*get_name)() = nullptr;
  const char* (*get_version)() = nullptr;
  const char* (*get_description)() = nullptr;
  vigil_plugin_state* (*init)(const vigil_host*, const char*, char*, size_t) = nullptr;
  void (*destroy)(vigil_plugin_state*) = nullptr;
  const char* (*get_last_error)(vigil_plugin_state*) = nullptr;
  const char* (*get_event_source)() = nullptr;
  vigil_rc (*next_batch)(vigil_plugin_state*, uint32_t, uint32_t, const vigil_event**, uint32_t*) = nullptr;
  const vigil_field_info* (*get_fields)(uint32_t*) = nullptr;
  vigil_rc (*extract)(vigil_plugin_state*, const vigil_event*, vigil_extract_request*, uint32_t) = nullptr;

  // The index of field `name` in the plugin's table; -1 when absent.
  int field_index(const std::string& name) const {
    uint32_t n = 0;
    const vigil_field_info* f = get_fields(&n);
    for (uint32_t i = 0; i < n; ++i) {
      if (name == f[i].name) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  template <class Fn>
  void sym(const char* name, Fn& out) {
    void* p = dlsym(handle_, name);
    if (p == nullptr && error_.empty()) error_ = std::string("missing symbol ") + name;
    out = reinterpret_cast<Fn>(p);
  }

  void* handle_ = nullptr;
  std::string error_;
};

// An event copied out of the plugin's batch (the batch is only valid until
// the next call).
struct OwnedEvent {
  uint64_t ts_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t gpu_minor = -1;
  std::string name;
  std::vector<uint8_t> data;

  vigil_event view() const {
    vigil_event e{};
    e.ts_ns = ts_ns;
    e.pid = pid;
    e.tid = tid;
    e.gpu_minor = gpu_minor;
    e.data_len = static_cast<uint32_t>(data.size());
    e.name = name.c_str();
    e.data = data.data();
    return e;
  }
};

inline OwnedEvent copy_event(const vigil_event& e) {
  OwnedEvent o;
  o.ts_ns = e.ts_ns;
  o.pid = e.pid;
  o.tid = e.tid;
  o.gpu_minor = e.gpu_minor;
  o.name = e.name != nullptr ? e.name : "";
  if (e.data != nullptr) o.data.assign(e.data, e.data + e.data_len);
  return o;
}

}  // namespace vigil::nvml::test
