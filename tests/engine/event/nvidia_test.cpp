#include "engine/event/nvidia.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil::event::nvidia {
namespace {

TEST(NvidiaEscape, NamesTheEscapesCudaIssues) {
  EXPECT_EQ(escape_name(kEscRmAlloc), "NV_ESC_RM_ALLOC");
  EXPECT_EQ(escape_name(kEscRmControl), "NV_ESC_RM_CONTROL");
  EXPECT_EQ(escape_name(kEscXferCmd), "NV_ESC_IOCTL_XFER_CMD");
  EXPECT_EQ(escape_name(0x27), "NV_ESC_RM_ALLOC_MEMORY");
  EXPECT_EQ(escape_name(0x4E), "NV_ESC_RM_MAP_MEMORY");
  EXPECT_EQ(escape_name(0xC9), "NV_ESC_REGISTER_FD");
  EXPECT_EQ(escape_name(0xD2), "NV_ESC_CHECK_VERSION_STR");
  EXPECT_EQ(escape_name(0xD7), "NV_ESC_NUMA_INFO");
  EXPECT_EQ(escape_name(0xDA), "NV_ESC_WAIT_OPEN_COMPLETE");
}

TEST(NvidiaEscape, UnknownNumbersHaveNoName) {
  EXPECT_EQ(escape_name(0), "");
  EXPECT_EQ(escape_name(0x26), "");
  EXPECT_EQ(escape_name(0xDB), "");
  EXPECT_EQ(escape_name(0xFFFFFFFF), "");
  // A full _IOWR cmd is not an escape number: callers must pass cmd & 0xff.
  EXPECT_EQ(escape_name(0xC030462B), "");
}

TEST(NvidiaEscape, EveryNamedEscapeRoundTrips) {
  int named = 0;
  for (std::uint32_t nr = 0; nr < 256; ++nr) {
    auto name = escape_name(nr);
    if (name.empty()) continue;
    ++named;
    EXPECT_EQ(name.substr(0, 7), "NV_ESC_") << nr;
    auto back = escape_from_name(name);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, nr) << name;
  }
  EXPECT_EQ(named, 37);  // every NV_ESC_* of the reference's escape table
}

TEST(NvidiaEscape, FromNameIsCaseInsensitiveAndRejectsUnknown) {
  EXPECT_EQ(escape_from_name("nv_esc_rm_alloc"), kEscRmAlloc);
  EXPECT_FALSE(escape_from_name("NV_ESC_RM_ALLOCX").has_value());
  EXPECT_FALSE(escape_from_name("").has_value());
}

TEST(NvidiaUvm, NamesRawUvmCommands) {
  EXPECT_EQ(uvm_ioctl_name(0x30000001), "UVM_INITIALIZE");
  EXPECT_EQ(uvm_ioctl_name(0x30000002), "UVM_DEINITIALIZE");
  EXPECT_EQ(uvm_ioctl_name(37), "UVM_REGISTER_GPU");
  EXPECT_EQ(uvm_ioctl_name(25), "UVM_REGISTER_GPU_VASPACE");
  EXPECT_EQ(uvm_ioctl_name(51), "UVM_MIGRATE");
  EXPECT_EQ(uvm_ioctl_name(56), "UVM_TOOLS_INIT_EVENT_TRACKER");
  EXPECT_EQ(uvm_ioctl_name(62), "UVM_TOOLS_READ_PROCESS_MEMORY");
  EXPECT_EQ(uvm_ioctl_name(63), "UVM_TOOLS_WRITE_PROCESS_MEMORY");
  EXPECT_EQ(uvm_ioctl_name(80), "UVM_DISCARD");
  EXPECT_EQ(uvm_ioctl_name(2047), "UVM_IS_8_SUPPORTED");
}

TEST(NvidiaUvm, TestIoctlsAreFlaggedAndGapsAreUnknown) {
  EXPECT_EQ(uvm_ioctl_name(200), "UVM_TEST");
  EXPECT_EQ(uvm_ioctl_name(250), "UVM_TEST");
  EXPECT_EQ(uvm_ioctl_name(0), "");
  EXPECT_EQ(uvm_ioctl_name(8), "");
  EXPECT_EQ(uvm_ioctl_name(32), "");
  EXPECT_EQ(uvm_ioctl_name(81), "");
  EXPECT_EQ(uvm_ioctl_name(0x30000003), "");
}

TEST(NvidiaClass, ComputeClassesOfEveryArchitecture) {
  for (std::uint32_t cls : {0xC5C0u, 0xC6C0u, 0xC7C0u, 0xC9C0u, 0xCBC0u, 0xCDC0u, 0xCEC0u}) {
    EXPECT_EQ(class_kind(cls), "compute") << std::hex << cls;
    EXPECT_TRUE(is_compute_or_channel(cls)) << std::hex << cls;
  }
  EXPECT_EQ(class_name(0xC6C0), "AMPERE_COMPUTE_A");
  EXPECT_EQ(class_name(0xCBC0), "HOPPER_COMPUTE_A");
  EXPECT_EQ(class_name(0xCEC0), "BLACKWELL_COMPUTE_B");
}

TEST(NvidiaClass, KindsFollowTheReference) {
  EXPECT_EQ(class_kind(0x41), "client");
  EXPECT_EQ(class_kind(0x80), "device");
  EXPECT_EQ(class_kind(0x2080), "device");
  EXPECT_EQ(class_kind(0x40), "memory");
  EXPECT_EQ(class_kind(0x90F1), "memory");
  EXPECT_EQ(class_kind(0xA06C), "channel");
  EXPECT_EQ(class_kind(0xC56F), "channel");
  EXPECT_EQ(class_kind(0xC697), "graphics");
  EXPECT_EQ(class_kind(0xC6B5), "copy");
  EXPECT_EQ(class_kind(0xC7B0), "video");
  EXPECT_EQ(class_kind(0xC7B7), "video");
  EXPECT_EQ(class_kind(0xC637), "mig");
  EXPECT_EQ(class_kind(0xC639), "mig");
  EXPECT_EQ(class_kind(0x83DE), "debugger");
  EXPECT_EQ(class_kind(0xB1CC), "profiler");
  EXPECT_EQ(class_kind(0xCBCA), "profiler");
  EXPECT_EQ(class_kind(0x503C), "p2p");
  EXPECT_EQ(class_kind(0x79), "event");
  EXPECT_EQ(class_kind(0xCB33), "other");
  EXPECT_EQ(class_name(0x83DE), "GT200_DEBUGGER");
  EXPECT_EQ(class_name(0xC638), "AMPERE_SMC_EXEC_PARTITION_REF");
}

TEST(NvidiaClass, MemoryAndEngineObjectsAreNotCompute) {
  EXPECT_FALSE(is_compute_or_channel(0x40));     // VRAM allocation
  EXPECT_FALSE(is_compute_or_channel(0x41));     // client
  EXPECT_FALSE(is_compute_or_channel(0xC6B5));   // copy engine
  EXPECT_FALSE(is_compute_or_channel(0x83DE));   // debugger
  EXPECT_FALSE(is_compute_or_channel(0x12345));  // unknown
}

TEST(NvidiaClass, UnknownClassesHaveNoNameOrKind) {
  EXPECT_EQ(class_name(0x3), "");
  EXPECT_EQ(class_kind(0x3), "");
  EXPECT_EQ(class_name(0xFFFF), "");
  EXPECT_EQ(class_name(0xC6C0'0000), "");  // shifted class id: no false match
}

TEST(NvidiaClass, NamesRoundTrip) {
  for (std::uint32_t cls : {0x0u, 0x41u, 0x2080u, 0xC6C0u, 0xC637u, 0x83DEu, 0xD1B7u}) {
    auto name = class_name(cls);
    ASSERT_FALSE(name.empty()) << std::hex << cls;
    EXPECT_EQ(class_from_name(name), cls) << name;
  }
  EXPECT_EQ(class_from_name("ampere_compute_a"), 0xC6C0u);
  EXPECT_FALSE(class_from_name("AMPERE_COMPUTE_Z").has_value());
  EXPECT_FALSE(class_from_name("").has_value());
}

// Every class id up to 0xFFFF: the named ones (the decoder's 99 and the
// driver surface table's, 128 in all) round trip through their names, so the
// table search finds each entry and no neighbour of one.
TEST(NvidiaClass, EveryNamedClassRoundTrips) {
  int named = 0;
  for (std::uint32_t cls = 0; cls <= 0xFFFF; ++cls) {
    auto name = class_name(cls);
    if (name.empty()) {
      EXPECT_EQ(class_kind(cls), "") << std::hex << cls;
      continue;
    }
    ++named;
    EXPECT_EQ(class_from_name(name), cls) << name;
  }
  EXPECT_EQ(named, 128);
}

TEST(NvidiaControl, ManagementControlsHaveTheirKind) {
  EXPECT_EQ(control_kind(0x20800134), "ecc");    // SET_ECC_CONFIGURATION
  EXPECT_EQ(control_kind(0x20800136), "ecc");    // RESET_ECC_ERROR_STATUS
  EXPECT_EQ(control_kind(0x20803403), "ecc");    // ECC_INJECT_ERROR
  EXPECT_EQ(control_kind(0x20800112), "power");  // GPU_SET_POWER
  EXPECT_EQ(control_kind(0x2080205B), "power");  // PERF_SET_POWERSTATE
  EXPECT_EQ(control_kind(0x2080206F), "power");  // PERF_RATED_TDP_SET_CONTROL
  EXPECT_EQ(control_kind(0x2080200A), "clock");  // PERF_BOOST
  EXPECT_EQ(control_kind(0x208001A9), "reset");  // MARK_DEVICE_FOR_RESET
  EXPECT_EQ(control_kind(0x208001AC), "reset");  // MARK_DEVICE_FOR_DRAIN_AND_RESET
  EXPECT_EQ(control_kind(0x00000278), "reset");  // MODIFY_DRAIN_STATE
  EXPECT_EQ(control_kind(0x20800183), "mig");    // SET_PARTITIONING_MODE
  EXPECT_EQ(control_kind(0x20800174), "mig");    // SET_PARTITIONS
  EXPECT_EQ(control_name(0x2080205B), "NV2080_CTRL_CMD_PERF_SET_POWERSTATE");
  EXPECT_EQ(control_name(0x20803403), "NV2080_CTRL_CMD_ECC_INJECT_ERROR");
}

TEST(NvidiaControl, QueriesEveryCudaProcessMakesAreOther) {
  // These run at every CUDA/NVML start-up; a rule on "changes" must not see them.
  for (std::uint32_t cmd : {0x201u, 0x202u, 0x214u, 0x800201u, 0x20800102u, 0x20800110u, 0x2080012Fu, 0x20800133u,
                            0x20800175u, 0x208001ABu, 0x20803401u}) {
    EXPECT_EQ(control_kind(cmd), "other") << std::hex << cmd;
    EXPECT_FALSE(control_name(cmd).empty()) << std::hex << cmd;
  }
}

TEST(NvidiaControl, UnknownCommandsHaveNoNameOrKind) {
  EXPECT_EQ(control_name(0x20801000), "");
  EXPECT_EQ(control_kind(0x20801000), "");
  EXPECT_EQ(control_name(0), "");
  EXPECT_EQ(control_kind(0xFFFFFFFF), "");
}

TEST(NvidiaDevice, PathsForDeviceNumbers) {
  constexpr std::uint32_t kUvm = 508;
  EXPECT_EQ(device_path(195, 0, kUvm), "/dev/nvidia0");
  EXPECT_EQ(device_path(195, 7, kUvm), "/dev/nvidia7");
  EXPECT_EQ(device_path(195, 247, kUvm), "/dev/nvidia247");
  EXPECT_EQ(device_path(195, 255, kUvm), "/dev/nvidiactl");
  EXPECT_EQ(device_path(195, 254, kUvm), "/dev/nvidia-modeset");
  EXPECT_EQ(device_path(kUvm, 0, kUvm), "/dev/nvidia-uvm");
  EXPECT_EQ(device_path(kUvm, 1, kUvm), "/dev/nvidia-uvm-tools");
}

TEST(NvidiaDevice, NonNvidiaNumbersHaveNoPath) {
  EXPECT_EQ(device_path(195, 248, 508), "");  // unused minors
  EXPECT_EQ(device_path(195, 253, 508), "");
  EXPECT_EQ(device_path(1, 3, 508), "");  // /dev/null
  EXPECT_EQ(device_path(508, 2, 508), "");
  // No UVM driver loaded: major 0 must never match a real device.
  EXPECT_EQ(device_path(0, 0, 0), "");
  EXPECT_EQ(device_path(0, 1, 0), "");
}

TEST(NvidiaDevice, GpuIndexFromPath) {
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia0"), 0);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia3"), 3);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia247"), 247);
  for (int i = 0; i <= 247; i += 13) {
    EXPECT_EQ(gpu_index_from_path(device_path(195, static_cast<std::uint32_t>(i), 0)), i);
  }
}

TEST(NvidiaDevice, GpuIndexRejectsOtherNodesAndHostileInput) {
  EXPECT_EQ(gpu_index_from_path("/dev/nvidiactl"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia-uvm"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia-modeset"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia-caps/nvidia-cap1"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia248"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia01"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia-1"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia+1"), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia0 "), -1);
  EXPECT_EQ(gpu_index_from_path("/dev/nvidia99999999999999999999"), -1);
  EXPECT_EQ(gpu_index_from_path("/tmp/dev/nvidia0"), -1);
  EXPECT_EQ(gpu_index_from_path(""), -1);
  EXPECT_EQ(gpu_index_from_path(std::string("/dev/nvidia0\0", 13)), -1);
}

}  // namespace
}  // namespace vigil::event::nvidia
