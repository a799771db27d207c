#include "plugins/cuda/calls.h"

#include <array>

namespace vigil::cuda {

namespace {

constexpr std::array<CallInfo, CUDA_CALL_MAX - 1> kCalls{{
    // cuCtxCreate_v2(CUcontext*, unsigned flags, CUdevice dev)
    {CUDA_CALL_CTX_CREATE_V2, "cuCtxCreate_v2", Category::kContext, 3, 0, 0},
    // cuCtxCreate_v3(CUcontext*, CUexecAffinityParam*, int n, unsigned flags, CUdevice dev)
    {CUDA_CALL_CTX_CREATE_V3, "cuCtxCreate_v3", Category::kContext, 5, 0, 0},
    // cuCtxCreate_v4(CUcontext*, CUctxCreateParams*, unsigned flags, CUdevice dev)
    {CUDA_CALL_CTX_CREATE_V4, "cuCtxCreate_v4", Category::kContext, 4, 0, 0},
    // cuDevicePrimaryCtxRetain(CUcontext*, CUdevice dev)
    {CUDA_CALL_PRIMARY_CTX_RETAIN, "cuDevicePrimaryCtxRetain", Category::kContext, 2, 0, 0},
    // cuModuleLoad(CUmodule*, const char* fname)
    {CUDA_CALL_MODULE_LOAD, "cuModuleLoad", Category::kModule, 0, 0, 0},
    // cuLibraryLoadFromFile(CUlibrary*, const char* fileName, ...)
    {CUDA_CALL_LIBRARY_LOAD_FROM_FILE, "cuLibraryLoadFromFile", Category::kModule, 0, 0, 0},
    // cuModuleLoadData(CUmodule*, const void* image)
    {CUDA_CALL_MODULE_LOAD_DATA, "cuModuleLoadData", Category::kModule, 0, 0, 0},
    // cuModuleLoadDataEx(CUmodule*, const void* image, unsigned n, CUjit_option*, void**)
    {CUDA_CALL_MODULE_LOAD_DATA_EX, "cuModuleLoadDataEx", Category::kModule, 0, 0, 0},
    // cuModuleLoadFatBinary(CUmodule*, const void* fatCubin)
    {CUDA_CALL_MODULE_LOAD_FAT_BINARY, "cuModuleLoadFatBinary", Category::kModule, 0, 0, 0},
    // cuLibraryLoadData(CUlibrary*, const void* code, ...)
    {CUDA_CALL_LIBRARY_LOAD_DATA, "cuLibraryLoadData", Category::kModule, 0, 0, 0},
    // cuMemAlloc_v2(CUdeviceptr*, size_t bytesize)
    {CUDA_CALL_MEM_ALLOC_V2, "cuMemAlloc_v2", Category::kMemory, 0, 2, 0},
    // cuMemAllocManaged(CUdeviceptr*, size_t bytesize, unsigned flags)
    {CUDA_CALL_MEM_ALLOC_MANAGED, "cuMemAllocManaged", Category::kMemory, 0, 2, 0},
    // cuMemAllocAsync(CUdeviceptr*, size_t bytesize, CUstream)
    {CUDA_CALL_MEM_ALLOC_ASYNC, "cuMemAllocAsync", Category::kMemory, 0, 2, 0},
    {CUDA_CALL_MEM_ALLOC_ASYNC_PTSZ, "cuMemAllocAsync_ptsz", Category::kMemory, 0, 2, 0},
    // cuMemFree_v2(CUdeviceptr dptr)
    {CUDA_CALL_MEM_FREE_V2, "cuMemFree_v2", Category::kMemory, 0, 0, 1},
    // Kernel launches: counted, arguments not read.
    {CUDA_CALL_LAUNCH_KERNEL, "cuLaunchKernel", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_LAUNCH_KERNEL_PTSZ, "cuLaunchKernel_ptsz", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_LAUNCH_KERNEL_EX, "cuLaunchKernelEx", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_LAUNCH_KERNEL_EX_PTSZ, "cuLaunchKernelEx_ptsz", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_LAUNCH_COOPERATIVE, "cuLaunchCooperativeKernel", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_LAUNCH_COOPERATIVE_PTSZ, "cuLaunchCooperativeKernel_ptsz", Category::kLaunch, 0, 0, 0},
    // cuGraphLaunch(CUgraphExec, CUstream): counted apart from kernel launches.
    {CUDA_CALL_GRAPH_LAUNCH, "cuGraphLaunch", Category::kLaunch, 0, 0, 0},
    {CUDA_CALL_GRAPH_LAUNCH_PTSZ, "cuGraphLaunch_ptsz", Category::kLaunch, 0, 0, 0},
}};

constexpr bool ids_in_order() {
  for (std::size_t i = 0; i < kCalls.size(); ++i)
    if (static_cast<std::size_t>(kCalls[i].id) != i + 1) return false;
  return true;
}
static_assert(ids_in_order(), "kCalls must list every cuda_call_id in order");

}  // namespace

std::string_view category_name(Category c) {
  switch (c) {
    case Category::kContext: return "context";
    case Category::kModule: return "module";
    case Category::kMemory: return "memory";
    case Category::kLaunch: return "launch";
  }
  return "unknown";
}

std::span<const CallInfo> all_calls() { return kCalls; }

std::optional<CallInfo> call_by_id(std::uint32_t id) {
  if (id == CUDA_CALL_NONE || id >= CUDA_CALL_MAX) return std::nullopt;
  return kCalls[id - 1];
}

std::optional<Category> category_by_name(std::string_view name) {
  for (Category c : {Category::kContext, Category::kModule, Category::kMemory, Category::kLaunch})
    if (category_name(c) == name) return c;
  return std::nullopt;
}

}  // namespace vigil::cuda
