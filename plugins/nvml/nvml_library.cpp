#include "nvml_library.h"

#include <dlfcn.h>

#include <cstring>

namespace vigil::nvml {

namespace {

constexpr std::size_t kMaxMessage = 160;

// Keeps printable ASCII of a foreign string, at most kMaxMessage bytes.
std::string printable(const char* s) {
  std::string out;
  if (s == nullptr) return out;
  for (std::size_t i = 0; s[i] != '\0' && i < kMaxMessage; ++i) {
    char c = s[i];
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& missing) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    if (missing.empty()) missing = name;
    return false;
  }
  out = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(const std::string& path, std::string& why) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    why = "cannot load " + path + ": " + printable(dlerror());
    return nullptr;
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  NvmlFunctions& f = lib->fn_;
  std::string missing;
  resolve(handle, "nvmlInit_v2", f.init, missing);
  resolve(handle, "nvmlShutdown", f.shutdown, missing);
  resolve(handle, "nvmlErrorString", f.error_string, missing);
  resolve(handle, "nvmlDeviceGetCount_v2", f.device_get_count, missing);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", f.device_get_handle_by_index, missing);
  resolve(handle, "nvmlDeviceGetUUID", f.device_get_uuid, missing);
  resolve(handle, "nvmlDeviceGetMinorNumber", f.device_get_minor_number, missing);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", f.device_get_pci_info, missing);
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", f.device_get_compute_running_processes, missing);
  resolve(handle, "nvmlDeviceGetProcessUtilization", f.device_get_process_utilization, missing);
  resolve(handle, "nvmlDeviceGetMemoryInfo", f.device_get_memory_info, missing);
  std::string optional;
  resolve(handle, "nvmlDeviceGetEccMode", f.device_get_ecc_mode, optional);
  if (!missing.empty()) {
    why = path + " has no symbol " + missing + " (NVML too old, or not NVML)";
    return nullptr;  // the destructor unloads it; NVML was not initialised
  }
  api::Return rc = f.init();
  if (rc != api::kSuccess) {
    why = "nvmlInit_v2 in " + path + " failed: " + lib->error(rc);
    return nullptr;
  }
  lib->initialised_ = true;
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_ && fn_.shutdown != nullptr) fn_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::error(api::Return rc) const {
  std::string text = fn_.error_string != nullptr ? printable(fn_.error_string(rc)) : std::string();
  if (text.empty()) text = "NVML error";
  return text + " (" + std::to_string(rc) + ")";
}

}  // namespace vigil::nvml
