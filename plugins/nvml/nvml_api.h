// The part of NVIDIA's management library (NVML) the nvml plugin uses:
// return codes, the few structures it reads, and the signatures of its entry
// points. No NVML header is needed to build the plugin: these are interface
// facts of libnvidia-ml.so.1, declared here and resolved with dlsym at run
// time. Shared with the stand-in NVML the tests build
// (tests/plugins/nvml/fake_nvml.cpp), which must match them exactly.
#pragma once

#include <cstdint>

namespace vigil::nvml::api {

// nvmlReturn_t: the codes the plugin tells apart (every other one is an error
// it reports through nvmlErrorString).
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorUnknown = 999;

// nvmlDevice_t: an opaque handle.
struct DeviceSt;
using Device = DeviceSt*;

// Buffer sizes NVML documents for its string results.
inline constexpr unsigned kUuidBufferSize = 96;      // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kPciBusIdBufferSize = 32;  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[kPciBusIdBufferSize];
};
static_assert(sizeof(PciInfo) == 68);

// nvmlMemory_t (version 1, as nvmlDeviceGetMemoryInfo fills it).
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24);

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it.
// The element size is not the same on every driver: most write 24-byte
// entries (pid, usedGpuMemory, gpuInstanceId, computeInstanceId), some R535
// drivers write 32-byte ones (usedGpuCcProtectedMemory appended), and some
// have been seen writing 16-byte ones (pid, usedGpuMemory). The plugin detects
// the size the library used (process_table.h); these are the common prefix.
struct ProcessInfoPrefix {
  unsigned pid;
  unsigned long long used_gpu_memory;
};
static_assert(sizeof(ProcessInfoPrefix) == 16);
inline constexpr unsigned kProcessInfoMaxStride = 32;
// usedGpuMemory when the driver cannot tell (NVML_VALUE_NOT_AVAILABLE).
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

// nvmlProcessUtilizationSample_t.
struct ProcessUtilizationSample {
  unsigned pid;
  unsigned long long time_stamp;  // CPU time stamp, microseconds
  unsigned sm_util;               // percent
  unsigned mem_util;              // percent (frame buffer read/write)
  unsigned enc_util;
  unsigned dec_util;
};
static_assert(sizeof(ProcessUtilizationSample) == 32);

// nvmlEnableState_t, as nvmlDeviceGetEccMode reports a GPU's current and
// pending ECC mode (pending: what the GPU takes at its next reboot).
using EnableState = int;
inline constexpr EnableState kFeatureDisabled = 0;
inline constexpr EnableState kFeatureEnabled = 1;

// The entry points, by the names the library exports.
using InitFn = Return (*)();                                     // nvmlInit_v2
using ShutdownFn = Return (*)();                                 // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                   // nvmlErrorString
using DeviceGetCountFn = Return (*)(unsigned*);                  // nvmlDeviceGetCount_v2
using DeviceGetHandleByIndexFn = Return (*)(unsigned, Device*);  // nvmlDeviceGetHandleByIndex_v2
using DeviceGetUuidFn = Return (*)(Device, char*, unsigned);     // nvmlDeviceGetUUID
using DeviceGetMinorNumberFn = Return (*)(Device, unsigned*);    // nvmlDeviceGetMinorNumber
using DeviceGetPciInfoFn = Return (*)(Device, PciInfo*);         // nvmlDeviceGetPciInfo_v3
using DeviceGetComputeRunningProcessesFn = Return (*)(Device, unsigned*, void*);
// nvmlDeviceGetComputeRunningProcesses_v3
using DeviceGetProcessUtilizationFn = Return (*)(Device, ProcessUtilizationSample*, unsigned*, unsigned long long);
// nvmlDeviceGetProcessUtilization
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);  // nvmlDeviceGetMemoryInfo
using DeviceGetEccModeFn = Return (*)(Device, EnableState*, EnableState*);
// nvmlDeviceGetEccMode(device, current, pending); NVML_ERROR_NOT_SUPPORTED
// when the GPU has no ECC memory

}  // namespace vigil::nvml::api
