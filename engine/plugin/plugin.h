// One loaded plugin: a shared object that follows plugins/include/vigil/plugin_api.h.
//
//   auto p = plugin::Plugin::open("nvml", "/usr/lib/vigil/plugins/libvigil_nvml.so");
//   if (!p) return fail(p.error());            // bad input: exit 2
//   if (Status s = (*p)->init(R"({"interval":"1s"})", log); !s) ...
//
// open() checks everything that can be checked without running the plugin's
// code beyond its info functions: the file loads, the ABI version is one this
// vigil speaks, each capability's symbols are all there (a partial group is
// refused naming the missing symbol), the name and source are well formed,
// and the field table is sane (names under the plugin's prefix, known types,
// bounded count). Errors name the plugin and the file.
//
// init() runs the plugin's init with a crash guard: a plugin that dies of a
// signal inside init is reported by name on stderr before vigil exits with it.
//
// Thread-safety: next_batch() on the source thread, extract() on the pipeline
// thread (the ABI allows both at once); init/destroy with neither running.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/util/result.h"
#include "plugins/include/vigil/plugin_api.h"

namespace spdlog {
class logger;
}

namespace vigil::plugin {

// A field as the plugin declared it, copied out of the library.
struct FieldInfo {
  std::string name;
  vigil_field_type type = VIGIL_FIELD_STRING;
  vigil_field_arg arg = VIGIL_ARG_NONE;
  std::string description;
};

inline constexpr std::size_t kMaxFields = 512;
inline constexpr std::size_t kMaxNameBytes = 32;
inline constexpr std::size_t kMaxFieldValueBytes = 4096;

class Plugin {
 public:
  // `name` is the configuration's name for it (plugins[].name); the library's
  // own vigil_plugin_get_name() must agree.
  static Result<std::unique_ptr<Plugin>> open(const std::string& name, const std::string& path);
  ~Plugin();  // destroy() if initialised, then dlclose
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Runs vigil_plugin_init(config_json). A failure (NULL state) is an
  // Error::runtime naming the plugin and its reason. `log` receives the
  // plugin's log lines (any thread) and must outlive the plugin.
  Status init(const std::string& config_json, std::shared_ptr<spdlog::logger> log);
  bool initialised() const { return state_ != nullptr; }

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }
  bool is_source() const { return next_batch_ != nullptr; }
  bool is_extractor() const { return extract_ != nullptr; }
  const std::string& event_source() const { return source_; }  // "" when not a source
  const std::vector<FieldInfo>& fields() const { return fields_; }
  // The sources whose events its fields read (its own when it declared none).
  const std::vector<std::string>& extract_sources() const { return extract_sources_; }
  // Its fields every alert about those sources should carry (ABI 1.1,
  // optional): names of fields(), in the plugin's order.
  const std::vector<std::string>& suggested_output_fields() const { return suggested_; }

  // The ABI calls, on an initialised plugin.
  vigil_rc next_batch(std::uint32_t max, std::uint32_t timeout_ms, const vigil_event** events, std::uint32_t* n);
  vigil_rc extract(const vigil_event& ev, vigil_extract_request* reqs, std::uint32_t n);
  std::string last_error();

  // Releases the plugin's state now (vigil_plugin_destroy). Idempotent.
  void destroy();

  // A thread is stuck inside the plugin: never destroy, unload or free it
  // (its owner leaks the object instead; see Host).
  void abandon() { abandoned_.store(true); }
  bool abandoned() const { return abandoned_.load(); }

 private:
  Plugin() = default;
  Status check_and_copy_info();

  std::string name_, path_, version_, description_, source_;
  std::vector<FieldInfo> fields_;
  std::vector<std::string> extract_sources_;
  std::vector<std::string> suggested_;
  void* handle_ = nullptr;
  std::atomic<bool> abandoned_{false};
  vigil_plugin_state* state_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
  vigil_host host_{};

  // Resolved symbols.
  const char* (*api_version_)() = nullptr;
  const char* (*get_name_)() = nullptr;
  const char* (*get_version_)() = nullptr;
  const char* (*get_description_)() = nullptr;
  vigil_plugin_state* (*init_)(const vigil_host*, const char*, char*, size_t) = nullptr;
  void (*destroy_)(vigil_plugin_state*) = nullptr;
  const char* (*last_error_)(vigil_plugin_state*) = nullptr;
  const char* (*event_source_)() = nullptr;
  vigil_rc (*next_batch_)(vigil_plugin_state*, uint32_t, uint32_t, const vigil_event**, uint32_t*) = nullptr;
  const vigil_field_info* (*get_fields_)(uint32_t*) = nullptr;
  const char* const* (*extract_sources_fn_)() = nullptr;
  const char* const* (*suggested_fn_)() = nullptr;
  vigil_rc (*extract_)(vigil_plugin_state*, const vigil_event*, vigil_extract_request*, uint32_t) = nullptr;
};

// "1.0" → {1, 0}; false when it is not two dot-separated numbers.
bool parse_api_version(const char* s, unsigned& major, unsigned& minor);
// [a-z0-9_]+ of 1..kMaxNameBytes bytes.
bool valid_name(const std::string& s);

}  // namespace vigil::plugin
