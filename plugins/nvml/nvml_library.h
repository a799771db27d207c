// NvmlLibrary: libnvidia-ml loaded with dlopen, its entry points resolved and
// NVML initialised; the destructor shuts NVML down and unloads it.
//
// Owned by the plugin state. Thread-safety: the functions are NVML's own,
// which NVML documents as thread-safe; the object itself is immutable after
// open().
#pragma once

#include "nvml_api.h"

#include <memory>
#include <string>

namespace vigil::nvml {

struct NvmlFunctions {
  api::InitFn init = nullptr;
  api::ShutdownFn shutdown = nullptr;
  api::ErrorStringFn error_string = nullptr;
  api::DeviceGetCountFn device_get_count = nullptr;
  api::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  api::DeviceGetUuidFn device_get_uuid = nullptr;
  api::DeviceGetMinorNumberFn device_get_minor_number = nullptr;
  api::DeviceGetPciInfoFn device_get_pci_info = nullptr;
  api::DeviceGetComputeRunningProcessesFn device_get_compute_running_processes = nullptr;
  api::DeviceGetProcessUtilizationFn device_get_process_utilization = nullptr;
  api::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  // Optional: null when the library lacks it (the GPUs' ECC mode is then unknown).
  api::DeviceGetEccModeFn device_get_ecc_mode = nullptr;
};

class NvmlLibrary {
 public:
  // Loads `path` (a name the dynamic loader searches for, or a path),
  // resolves every entry point (nvmlDeviceGetEccMode may be missing) and
  // calls nvmlInit_v2. On failure returns
  // nullptr and sets `why` to one line naming the library and the cause (the
  // loader's message, the missing symbol, or NVML's error).
  static std::unique_ptr<NvmlLibrary> open(const std::string& path, std::string& why);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return fn_; }
  const std::string& path() const { return path_; }

  // "Not Supported (3)": NVML's text for rc, made printable and bounded.
  std::string error(api::Return rc) const;

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
  NvmlFunctions fn_;
  bool initialised_ = false;
};

}  // namespace vigil::nvml
