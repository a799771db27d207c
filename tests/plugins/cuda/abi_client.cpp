#include "tests/plugins/cuda/abi_client.h"

#include <cstring>

namespace vigil::cuda::test {

namespace {

template <class F>
bool resolve(void* dl, const char* name, F& out, std::string& err) {
  out = reinterpret_cast<F>(dlsym(dl, name));
  if (!out && err.empty()) err = std::string("the plugin lacks ") + name;
  return out != nullptr;
}

}  // namespace

AbiClient::AbiClient(const std::string& path) {
  dl_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl_) {
    const char* e = dlerror();
    error_ = std::string("dlopen ") + path + ": " + (e ? e : "unknown error");
    return;
  }
  resolve(dl_, "vigil_plugin_get_required_api_version", get_api_, error_);
  resolve(dl_, "vigil_plugin_get_name", get_name_, error_);
  resolve(dl_, "vigil_plugin_get_event_source", get_source_, error_);
  resolve(dl_, "vigil_plugin_init", init_, error_);
  resolve(dl_, "vigil_plugin_destroy", destroy_, error_);
  resolve(dl_, "vigil_plugin_get_last_error", last_error_, error_);
  resolve(dl_, "vigil_plugin_next_batch", next_batch_, error_);
  resolve(dl_, "vigil_plugin_get_fields", get_fields_, error_);
  resolve(dl_, "vigil_plugin_extract", extract_, error_);
  if (!error_.empty()) return;
  if (std::strcmp(get_api_(), VIGIL_PLUGIN_API_VERSION_STRING) != 0)
    error_ = std::string("ABI version ") + get_api_() + ", this client has " + VIGIL_PLUGIN_API_VERSION_STRING;
  fields_ = get_fields_(&nfields_);
}

AbiClient::~AbiClient() {
  if (state_ && destroy_) destroy_(state_);
  if (dl_) dlclose(dl_);
}

void AbiClient::on_log(void* ctx, vigil_log_level level, const char* msg) {
  static constexpr const char* kLevel[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  auto* self = static_cast<AbiClient*>(ctx);
  self->logs.push_back(std::string(kLevel[level & 3]) + " " + msg);
}

bool AbiClient::init(const std::string& config_json) {
  if (!ok()) return false;
  host_.size = sizeof(host_);
  host_.ctx = this;
  host_.log = &AbiClient::on_log;
  char err[512] = {};
  state_ = init_(&host_, config_json.c_str(), err, sizeof(err));
  if (!state_) error_ = std::string("init: ") + err;
  return state_ != nullptr;
}

int AbiClient::next(std::uint32_t timeout_ms, std::vector<Extracted>& out) {
  const vigil_event* evs = nullptr;
  std::uint32_t n = 0;
  vigil_rc rc = next_batch_(state_, VIGIL_PLUGIN_MAX_BATCH, timeout_ms, &evs, &n);
  if (rc == VIGIL_RC_FAILURE) {
    error_ = std::string("next_batch: ") + last_error_(state_);
    return rc;
  }
  std::vector<vigil_extract_request> reqs(nfields_);
  for (std::uint32_t i = 0; i < n; ++i) {
    const vigil_event& ev = evs[i];
    Extracted x;
    x.name = ev.name;
    x.ts_ns = ev.ts_ns;
    x.pid = ev.pid;
    x.tid = ev.tid;
    x.gpu_minor = ev.gpu_minor;
    for (std::uint32_t f = 0; f < nfields_; ++f) reqs[f] = vigil_extract_request{f, nullptr, 0, {}};
    if (extract_(state_, &ev, reqs.data(), nfields_) != VIGIL_RC_OK) {
      error_ = std::string("extract: ") + last_error_(state_);
      return VIGIL_RC_FAILURE;
    }
    for (std::uint32_t f = 0; f < nfields_; ++f) {
      if (!reqs[f].has_value) continue;
      switch (fields_[f].type) {
        case VIGIL_FIELD_STRING: x.fields[fields_[f].name] = std::string(reqs[f].value.str); break;
        case VIGIL_FIELD_UINT64: x.fields[fields_[f].name] = reqs[f].value.u64; break;
        case VIGIL_FIELD_INT64: x.fields[fields_[f].name] = reqs[f].value.i64; break;
        case VIGIL_FIELD_BOOL: x.fields[fields_[f].name] = reqs[f].value.u64 != 0; break;
      }
    }
    out.push_back(std::move(x));
  }
  return rc;
}

}  // namespace vigil::cuda::test
