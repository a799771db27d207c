/* A small, real CUDA driver API workload for checking the probes on a
 * machine with an NVIDIA GPU (device_check.sh): it dlopens libcuda.so.1 (no
 * CUDA headers or toolkit needed), creates a context, allocates and frees,
 * JIT-loads a one-instruction PTX kernel and launches it a known number of
 * times, and prints what it did, so the plugin's events can be compared:
 *
 *   cuda_driver_workload [launches] [--sleep-ms N]
 *
 * --sleep-ms waits after loading the library and before the first call, so
 * that the plugin finds the library by its maps scan or mmap watch. Exit
 * status 0 when every call succeeded. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;

static const char kPtx[] =
    "//\n"
    "// vigil probe check: an empty kernel\n"
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry vigil_noop()\n"
    "{\n"
    "  ret;\n"
    "}\n";

static void* h;
static int failures;

static void* need(const char* name) {
  void* p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "libcuda lacks %s\n", name);
    exit(1);
  }
  return p;
}

static void check(const char* what, CUresult r) {
  if (r != 0) {
    printf("%s -> CUresult %d\n", what, r);
    ++failures;
  }
}

int main(int argc, char** argv) {
  long launches = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
  long sleep_ms = 0;
  for (int i = 2; i + 1 < argc; ++i)
    if (strcmp(argv[i], "--sleep-ms") == 0) sleep_ms = strtol(argv[i + 1], NULL, 10);
  if (launches < 1 || launches > 100000000) return 2;
  h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  if (sleep_ms > 0) {
    struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  CUresult (*cuInit)(unsigned) = need("cuInit");
  CUresult (*cuDeviceGet)(int*, int) = need("cuDeviceGet");
  CUresult (*cuCtxCreate_v2)(void**, unsigned, int) = need("cuCtxCreate_v2");
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int) = need("cuDevicePrimaryCtxRetain");
  CUresult (*cuDevicePrimaryCtxRelease_v2)(int) = need("cuDevicePrimaryCtxRelease_v2");
  CUresult (*cuCtxDestroy_v2)(void*) = need("cuCtxDestroy_v2");
  CUresult (*cuMemAlloc_v2)(unsigned long long*, size_t) = need("cuMemAlloc_v2");
  CUresult (*cuMemFree_v2)(unsigned long long) = need("cuMemFree_v2");
  CUresult (*cuModuleLoadData)(void**, const void*) = need("cuModuleLoadData");
  CUresult (*cuModuleGetFunction)(void**, void*, const char*) = need("cuModuleGetFunction");
  CUresult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                             void**) = need("cuLaunchKernel");
  CUresult (*cuCtxSynchronize)(void) = need("cuCtxSynchronize");

  int dev = 0;
  void *ctx = NULL, *pctx = NULL, *mod = NULL, *fn = NULL;
  check("cuInit", cuInit(0));
  check("cuDeviceGet", cuDeviceGet(&dev, 0));
  check("cuCtxCreate_v2", cuCtxCreate_v2(&ctx, 0, dev));
  unsigned long long ptrs[8];
  for (int i = 0; i < 8; ++i) check("cuMemAlloc_v2", cuMemAlloc_v2(&ptrs[i], (size_t)(1u << 20) * (i + 1)));
  for (int i = 0; i < 8; ++i) check("cuMemFree_v2", cuMemFree_v2(ptrs[i]));
  check("cuModuleLoadData", cuModuleLoadData(&mod, kPtx));
  check("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "vigil_noop"));
  for (long i = 0; i < launches && fn; ++i)
    check("cuLaunchKernel", cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  check("cuCtxSynchronize", cuCtxSynchronize());
  check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&pctx, dev));
  check("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease_v2(dev));
  check("cuCtxDestroy_v2", cuCtxDestroy_v2(ctx));
  printf(
      "pid %d device %d: 1 cuCtxCreate_v2, 8 cuMemAlloc_v2 (1..8 MiB), 8 cuMemFree_v2, 1 cuModuleLoadData (ptx), "
      "%ld cuLaunchKernel, 1 cuDevicePrimaryCtxRetain; %d failed calls\n",
      (int)getpid(), dev, fn ? launches : 0L, failures);
  return failures ? 1 : 0;
}
