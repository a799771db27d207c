/* A stand-in libcuda.so for the CUDA probe tests: it exports the driver API
 * entry points the plugin probes, with the real signatures, and bodies that
 * only count and return CUDA_SUCCESS. It is a probe target, not a GPU.
 *
 * Built twice: in full, and with FAKE_CUDA_MINIMAL (an older driver: no
 * cuCtxCreate_v3/v4, cuLaunchKernelEx*, cuLibrary*, cuGraphLaunch*, and
 * cuLaunchCooperativeKernel exported as data, not as a function) so that the
 * tests see absent and unusable symbols. */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default"), noinline))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUlib_st* CUlibrary;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUlaunchConfig_st CUlaunchConfig;

/* One counter per entry point: distinct bodies, so that no two exported
 * names share an address. */
__attribute__((visibility("default"))) volatile unsigned long long fake_cuda_calls[32];
static unsigned long long next_ptr = 0x700000000000ull;

#define COUNT(i) (fake_cuda_calls[i] += (i) + 1)

EXPORT CUresult cuInit(unsigned flags) {
  COUNT(0);
  return 0;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned flags, CUdevice dev) {
  COUNT(1);
  if (pctx) *pctx = (CUcontext)(uintptr_t)(0x1000 + dev);
  return 0;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  COUNT(2);
  if (pctx) *pctx = (CUcontext)(uintptr_t)(0x2000 + dev);
  return 0;
}
EXPORT CUresult cuModuleLoad(CUmodule* m, const char* fname) {
  COUNT(3);
  return 0;
}
EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  COUNT(4);
  return 0;
}
EXPORT CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned n, void* opts, void** vals) {
  COUNT(5);
  return 0;
}
EXPORT CUresult cuModuleLoadFatBinary(CUmodule* m, const void* fat) {
  COUNT(6);
  return 0;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  COUNT(7);
  if (dptr) *dptr = next_ptr;
  next_ptr += 0x100000;
  return 0;
}
EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned flags) {
  COUNT(8);
  if (dptr) *dptr = next_ptr;
  next_ptr += 0x100000;
  return 0;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  COUNT(9);
  return 0;
}
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  COUNT(10);
  return 0;
}
EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  COUNT(11);
  return 0;
}

#ifndef FAKE_CUDA_MINIMAL
EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, void* params, int n, unsigned flags, CUdevice dev) {
  COUNT(12);
  return 0;
}
EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, void* params, unsigned flags, CUdevice dev) {
  COUNT(13);
  if (pctx) *pctx = (CUcontext)(uintptr_t)(0x4000 + dev);
  return 0;
}
EXPORT CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, void* jo, void** jv, unsigned nj, void* lo,
                                  void** lv, unsigned nl) {
  COUNT(14);
  return 0;
}
EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* lib, const char* file, void* jo, void** jv, unsigned nj, void* lo,
                                      void** lv, unsigned nl) {
  COUNT(15);
  return 0;
}
EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream s) {
  COUNT(16);
  if (dptr) *dptr = next_ptr;
  next_ptr += 0x100000;
  return 0;
}
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra) {
  COUNT(17);
  return 0;
}
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra) {
  COUNT(18);
  return 0;
}
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream s, void** params) {
  COUNT(19);
  return 0;
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream s) {
  COUNT(20);
  if (dptr) *dptr = next_ptr;
  next_ptr += 0x100000;
  return 0;
}
EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  COUNT(21);
  return 0;
}
EXPORT CUresult cuGraphLaunch(void* exec, CUstream s) {
  COUNT(22);
  return 0;
}
EXPORT CUresult cuGraphLaunch_ptsz(void* exec, CUstream s) {
  COUNT(23);
  return 0;
}
#else
__attribute__((visibility("default"))) volatile unsigned long long cuLaunchCooperativeKernel = 0;
#endif
