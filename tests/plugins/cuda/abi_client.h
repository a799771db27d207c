// A minimal client of the plugin C ABI for the CUDA plugin's tests, benchmark
// and cuda_probe_check: dlopens a plugin, resolves its functions, and turns
// each event into its name, envelope and extracted fields.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "vigil/plugin_api.h"

namespace vigil::cuda::test {

using FieldValue = std::variant<std::string, std::uint64_t, std::int64_t, bool>;

struct Extracted {
  std::string name;
  std::uint64_t ts_ns = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::int32_t gpu_minor = -1;
  std::map<std::string, FieldValue> fields;  // only fields with a value

  bool has(const std::string& f) const { return fields.count(f) != 0; }
  std::string str(const std::string& f) const {
    auto it = fields.find(f);
    return it != fields.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second)
                                                                                 : std::string();
  }
  std::uint64_t u64(const std::string& f) const {
    auto it = fields.find(f);
    return it != fields.end() && std::holds_alternative<std::uint64_t>(it->second) ? std::get<std::uint64_t>(it->second)
                                                                                   : 0;
  }
  std::int64_t i64(const std::string& f) const {
    auto it = fields.find(f);
    return it != fields.end() && std::holds_alternative<std::int64_t>(it->second) ? std::get<std::int64_t>(it->second)
                                                                                  : INT64_MIN;
  }
};

class AbiClient {
 public:
  // Loads the plugin; error() says why when !ok().
  explicit AbiClient(const std::string& path);
  ~AbiClient();
  AbiClient(const AbiClient&) = delete;
  AbiClient& operator=(const AbiClient&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // Creates the plugin's state; false with error() on failure.
  bool init(const std::string& config_json);
  // One next_batch call; the events it returned, with every field extracted.
  // Returns the vigil_rc.
  int next(std::uint32_t timeout_ms, std::vector<Extracted>& out);
  // Log lines the plugin wrote ("LEVEL message").
  std::vector<std::string> logs;
  const char* name() const { return get_name_ ? get_name_() : ""; }
  const char* source() const { return get_source_ ? get_source_() : ""; }

 private:
  static void on_log(void* ctx, vigil_log_level level, const char* msg);

  void* dl_ = nullptr;
  std::string error_;
  vigil_host host_{};
  vigil_plugin_state* state_ = nullptr;
  const vigil_field_info* fields_ = nullptr;
  std::uint32_t nfields_ = 0;
  decltype(&vigil_plugin_get_required_api_version) get_api_ = nullptr;
  decltype(&vigil_plugin_get_name) get_name_ = nullptr;
  decltype(&vigil_plugin_get_event_source) get_source_ = nullptr;
  decltype(&vigil_plugin_init) init_ = nullptr;
  decltype(&vigil_plugin_destroy) destroy_ = nullptr;
  decltype(&vigil_plugin_get_last_error) last_error_ = nullptr;
  decltype(&vigil_plugin_next_batch) next_batch_ = nullptr;
  decltype(&vigil_plugin_get_fields) get_fields_ = nullptr;
  decltype(&vigil_plugin_extract) extract_ = nullptr;
};

}  // namespace vigil::cuda::test
