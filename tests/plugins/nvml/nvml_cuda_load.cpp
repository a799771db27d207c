// nvml_cuda_load: a GPU process for nvml_probe to see, without the CUDA
// toolkit: it loads libcuda.so.1 with dlopen, allocates GPU memory and keeps
// the SMs busy with a small PTX kernel (JIT-compiled by the driver) for a
// while. Exits 77 when there is no CUDA driver.
//
//   nvml_cuda_load [seconds=10] [mebibytes=512] [device=0]
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUdeviceptr = unsigned long long;

// A spin loop of fused multiply-adds; thread 0 of each block stores its result.
const char kPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 iters)
{
  .reg .u32 %r<4>;
  .reg .u64 %rd<3>;
  .reg .pred %p;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, 0;
  mov.f32 %f1, 0f3F800000;
LOOP:
  fma.rn.f32 %f1, %f1, 0f3F7FBE77, 0f3A83126F;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p, %r2, %r1;
  @%p bra LOOP;
  cvta.to.global.u64 %rd2, %rd1;
  st.global.f32 [%rd2], %f1;
  ret;
}
)";

template <class Fn>
Fn sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "nvml_cuda_load: libcuda.so.1 has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

#define CHECK(call)                                                                 \
  do {                                                                              \
    CUresult rc_ = (call);                                                          \
    if (rc_ != 0) {                                                                 \
      std::fprintf(stderr, "nvml_cuda_load: %s failed: CUresult %d\n", #call, rc_); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 10;
  int mib = argc > 2 ? std::atoi(argv[2]) : 512;
  int ordinal = argc > 3 ? std::atoi(argv[3]) : 0;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "nvml_cuda_load: no CUDA driver (%s); skipped\n", dlerror());
    return 77;
  }
  auto cu_init = sym<CUresult (*)(unsigned)>(lib, "cuInit");
  auto device_get = sym<CUresult (*)(CUdevice*, int)>(lib, "cuDeviceGet");
  auto ctx_create = sym<CUresult (*)(CUcontext*, unsigned, CUdevice)>(lib, "cuCtxCreate_v2");
  auto module_load = sym<CUresult (*)(CUmodule*, const void*)>(lib, "cuModuleLoadData");
  auto get_function = sym<CUresult (*)(CUfunction*, CUmodule, const char*)>(lib, "cuModuleGetFunction");
  auto mem_alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto launch = sym<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 void*, void**, void**)>(lib, "cuLaunchKernel");
  auto synchronize = sym<CUresult (*)()>(lib, "cuCtxSynchronize");

  CHECK(cu_init(0));
  CUdevice dev = 0;
  CHECK(device_get(&dev, ordinal));
  CUcontext ctx = nullptr;
  CHECK(ctx_create(&ctx, 0, dev));
  CUmodule mod = nullptr;
  CHECK(module_load(&mod, kPtx));
  CUfunction fn = nullptr;
  CHECK(get_function(&fn, mod, "spin"));
  CUdeviceptr buf = 0;
  CHECK(mem_alloc(&buf, static_cast<size_t>(mib) << 20));
  std::printf("nvml_cuda_load: pid %d busy on device %d with %d MiB for %d s\n", static_cast<int>(getpid()), ordinal,
              mib, seconds);
  std::fflush(stdout);
  unsigned iters = 200000;
  void* params[] = {&buf, &iters};
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    CHECK(launch(fn, 4096, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    CHECK(synchronize());
  }
  return 0;
}
