// gpu.ioctl.known / gpu.ioctl.surface / gpu.ioctl.allowed and
// gpu.usage.unknown: an ioctl judged by the driver surface table from what the
// sensor decoded (escape, UVM command, RM class, RM control).
#include <gtest/gtest.h>

#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::fires;
using testing::World;

void control(World& w, std::uint32_t cmd) {
  w.ioctl(0x2A);
  std::get<event::IoctlData>(w.ev.data).rm_control = cmd;
}
void uvm(World& w, std::uint32_t cmd) {
  w.ioctl(cmd, 0, 0);
  auto& d = std::get<event::IoctlData>(w.ev.data);
  d.uvm = true;
  d.cmd = cmd;
  d.dev_major = 508;
}

TEST(GpuSurfaceFields, ACudaAllocationIsAKnownWorkloadCall) {
  World w;
  w.ioctl(0x2B, 0xCBC0);  // NV_ESC_RM_ALLOC of HOPPER_COMPUTE_A
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = true and gpu.ioctl.allowed = true and gpu.ioctl.surface = workload"));
  w.ioctl(0x2B, 0x83DE);  // GT200_DEBUGGER: CUDA 580 allocates one at every start-up
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = workload and gpu.ioctl.allowed = true"));
  w.ioctl(0xD2);  // NV_ESC_CHECK_VERSION_STR
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = workload and gpu.ioctl.known = true"));
}

TEST(GpuSurfaceFields, TheClassOrControlDecidesTheSurface) {
  World w;
  w.ioctl(0x2B, 0xB2CC);  // MAXWELL_PROFILER_DEVICE
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = profiler and gpu.ioctl.allowed = false and gpu.ioctl.known = true"));
  control(w, 0x20800122);  // NV2080_CTRL_CMD_GPU_EXEC_REG_OPS
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = profiler and gpu.control.name = NV2080_CTRL_CMD_GPU_EXEC_REG_OPS"));
  control(w, 0x83DE0315);  // NV83DE_CTRL_CMD_DEBUG_READ_MEMORY
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = debugger and gpu.ioctl.allowed = false"));
  control(w, 0x20800183);  // NV2080_CTRL_CMD_GPU_SET_PARTITIONING_MODE
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = mig"));
  control(w, 0x2080200A);  // NV2080_CTRL_CMD_PERF_BOOST
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = workload and gpu.ioctl.allowed = true"));
  uvm(w, 62);  // UVM_TOOLS_READ_PROCESS_MEMORY
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = debugger and gpu.ioctl = UVM_TOOLS_READ_PROCESS_MEMORY"));
  uvm(w, 0x30000001);  // UVM_INITIALIZE
  EXPECT_TRUE(fires(w, "gpu.ioctl.surface = workload"));
}

TEST(GpuSurfaceFields, UnknownCallsAreNotKnownAndHaveNoSurface) {
  World w;
  w.ioctl(0x26);  // no such escape
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = false and gpu.ioctl.allowed = false and not gpu.ioctl.surface exists"));
  w.ioctl(0x2B, 0xBEEF);  // an escape the table knows, allocating a class it does not
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = false and gpu.ioctl.allowed = false and not gpu.ioctl.surface exists"));
  control(w, 0x20801000);  // a control the table does not know
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = false"));
  uvm(w, 205);  // UVM_TEST_*: named, never allowed
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = false and gpu.ioctl = UVM_TEST"));
  // An RM call whose class or control the sensor did not read is judged by
  // its escape.
  w.ioctl(0x2A);
  EXPECT_TRUE(fires(w, "gpu.ioctl.known = true and gpu.ioctl.surface = workload"));
}

TEST(GpuSurfaceFields, OnlyIoctlsHaveThem) {
  World w;
  w.open_dev("/dev/nvidia0", 195, 0);
  EXPECT_FALSE(fires(w, "gpu.ioctl.known exists"));
  EXPECT_FALSE(fires(w, "gpu.ioctl.surface exists"));
  EXPECT_FALSE(fires(w, "gpu.ioctl.allowed exists"));
}

TEST(GpuSurfaceFields, UsageReportsCountUnknownEscapes) {
  World w;
  w.ev.hdr.type = event::Type::kGpuUsage;
  event::GpuUsageData d;
  d.entries.push_back({195, 255, 0x2A, 900});  // NV_ESC_RM_CONTROL
  d.entries.push_back({195, 0, 0x26, 3});      // unknown escape
  d.entries.push_back({508, 0, 37, 1});        // UVM_REGISTER_GPU on nvidia-uvm's major
  d.entries.push_back({508, 0, 1999, 2});      // neither an escape nor a UVM command
  w.ev.data = d;
  EXPECT_TRUE(fires(w, "gpu.usage.unknown = 5 and gpu.usage.count = 906"));
  std::get<event::GpuUsageData>(w.ev.data).entries.resize(1);
  EXPECT_TRUE(fires(w, "gpu.usage.unknown = 0"));
}

}  // namespace
}  // namespace vigil::rules
