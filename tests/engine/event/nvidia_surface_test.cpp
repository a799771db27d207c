// The driver surface table (engine/event/nvidia_surface.tsv): what it knows,
// which surface each call belongs to, and that it agrees with the decoder's
// own name tables.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "engine/event/nvidia.h"

namespace vigil::event::nvidia {
namespace {

std::string_view surface_of(Part part, std::uint32_t v) {
  const auto* r = surface_row(part, v);
  return r ? r->surface : std::string_view{"(unknown)"};
}

// What a CUDA process does from start-up to its first kernel (reference
// §3.5), and what PyTorch's start-up did on a real H200 with driver
// 580.159.04 (a MIG config and monitor session, a debugger object, a perf
// boost): every call a workload may make.
TEST(NvidiaSurface, ACudaStartUpIsAllWorkload) {
  for (std::uint32_t nr : {0xD2u, 0xC8u, 0x2Bu, 0x2Au, 0xC9u, 0xD4u, 0xD6u, 0xD7u, 0x4Eu, 0x29u, 0x34u, 0xCEu, 0xDAu}) {
    EXPECT_EQ(surface_of(Part::kEscape, nr), "workload") << escape_name(nr);
  }
  for (std::uint32_t cmd : {0x30000001u, 37u, 25u, 27u, 33u, 34u, 51u}) {
    EXPECT_EQ(surface_of(Part::kUvm, cmd), "workload") << uvm_ioctl_name(cmd);
  }
  for (std::uint32_t cls : {0x41u, 0x80u, 0x2080u, 0x90F1u, 0xA06Cu, 0x9067u, 0xC86Fu, 0xCBC0u, 0xC8B5u, 0x40u, 0x3Eu,
                            0xC639u, 0xC640u, 0x83DEu}) {
    EXPECT_EQ(surface_of(Part::kClass, cls), "workload") << class_name(cls);
  }
  for (std::uint32_t ctl : {0x201u, 0x202u, 0x214u, 0x800201u, 0x20800102u, 0x2080200Au}) {
    EXPECT_EQ(surface_of(Part::kControl, ctl), "workload") << control_name(ctl);
  }
}

TEST(NvidiaSurface, ProfilersDebuggersAndMigHaveTheirOwnSurfaces) {
  EXPECT_EQ(surface_of(Part::kClass, 0x90CC), "profiler");        // GF100_PROFILER
  EXPECT_EQ(surface_of(Part::kClass, 0xB1CC), "profiler");        // MAXWELL_PROFILER_CONTEXT
  EXPECT_EQ(surface_of(Part::kClass, 0xB2CC), "profiler");        // MAXWELL_PROFILER_DEVICE
  EXPECT_EQ(surface_of(Part::kClass, 0xCBCA), "profiler");        // NV_COUNTER_COLLECTION_UNIT
  EXPECT_EQ(surface_of(Part::kControl, 0x20800122), "profiler");  // NV2080_CTRL_CMD_GPU_EXEC_REG_OPS
  EXPECT_EQ(surface_of(Part::kControl, 0xB0CC010A), "profiler");  // NVB0CC_CTRL_CMD_EXEC_REG_OPS
  EXPECT_EQ(surface_of(Part::kControl, 0x83DE0315), "debugger");  // NV83DE_CTRL_CMD_DEBUG_READ_MEMORY
  EXPECT_EQ(surface_of(Part::kControl, 0x83DE031D), "debugger");  // NV83DE_CTRL_CMD_DEBUG_EXEC_REG_OPS
  EXPECT_EQ(surface_of(Part::kControl, 0x83DE0326), "debugger");  // NV83DE_CTRL_CMD_DEBUG_READ_BATCH_MEMORY
  // The debugger object's error-state controls are CUDA's own (gVisor gives
  // them to compute): not a debugger session.
  EXPECT_EQ(surface_of(Part::kControl, 0x83DE0309), "workload");    // NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK
  EXPECT_EQ(surface_of(Part::kUvm, 62), "debugger");                // UVM_TOOLS_READ_PROCESS_MEMORY
  EXPECT_EQ(surface_of(Part::kUvm, 56), "profiler");                // UVM_TOOLS_INIT_EVENT_TRACKER
  EXPECT_EQ(surface_of(Part::kControl, 0x20800174), "mig");         // NV2080_CTRL_CMD_GPU_SET_PARTITIONS
  EXPECT_EQ(surface_of(Part::kControl, 0x20800183), "mig");         // NV2080_CTRL_CMD_GPU_SET_PARTITIONING_MODE
  EXPECT_EQ(surface_of(Part::kControl, 0xC6370101), "mig");         // NVC637_CTRL_CMD_EXEC_PARTITIONS_CREATE
  EXPECT_EQ(surface_of(Part::kControl, 0x20800175), "management");  // GET_PARTITIONS: a read
  EXPECT_EQ(surface_of(Part::kControl, 0x20803403), "management");  // NV2080_CTRL_CMD_ECC_INJECT_ERROR
  EXPECT_EQ(surface_of(Part::kEscape, 0x56), "internal");           // NV_ESC_RM_ADD_VBLANK_CALLBACK
}

TEST(NvidiaSurface, UnknownNumbersHaveNoRow) {
  EXPECT_EQ(surface_row(Part::kEscape, 0x26), nullptr);
  EXPECT_EQ(surface_row(Part::kEscape, 0xDB), nullptr);
  EXPECT_EQ(surface_row(Part::kEscape, 0xC030462B), nullptr);  // a full cmd is not an escape number
  EXPECT_EQ(surface_row(Part::kUvm, 8), nullptr);
  EXPECT_EQ(surface_row(Part::kUvm, 200), nullptr);  // UVM_TEST_*: named, never in the table
  EXPECT_EQ(uvm_ioctl_name(200), "UVM_TEST");
  EXPECT_EQ(surface_row(Part::kClass, 0x3), nullptr);
  EXPECT_EQ(surface_row(Part::kClass, 0xC6C00000), nullptr);
  EXPECT_EQ(surface_row(Part::kControl, 0x20801000), nullptr);
  EXPECT_EQ(surface_row(Part::kControl, 0), nullptr);
}

TEST(NvidiaSurface, WorkloadSurfacesAreTheContainerCapabilities) {
  for (std::string_view s : {"workload", "graphics", "video", "rdma"})
    EXPECT_TRUE(surface_allowed_for_workload(s)) << s;
  for (std::string_view s : {"profiler", "debugger", "mig", "management", "fabric", "internal", "other", ""}) {
    EXPECT_FALSE(surface_allowed_for_workload(s)) << s;
  }
}

// Every row: a surface of the documented set, branches, a name once per kind,
// and the row found again by its number and by its name.
TEST(NvidiaSurface, EveryRowIsWellFormed) {
  const std::set<std::string_view> surfaces = {"workload", "graphics", "video",      "rdma",     "fabric", "profiler",
                                               "debugger", "mig",      "management", "internal", "other"};
  std::size_t total = 0;
  for (Part part : {Part::kEscape, Part::kUvm, Part::kClass, Part::kControl}) {
    std::set<std::string_view> names;
    for (const auto& r : surface_rows(part)) {
      ++total;
      EXPECT_TRUE(surfaces.count(r.surface)) << r.name << " " << r.surface;
      EXPECT_FALSE(r.branches.empty()) << r.name;
      EXPECT_TRUE(names.insert(r.name).second) << "twice: " << r.name;
      EXPECT_EQ(surface_row(part, r.value), &r) << r.name;
    }
  }
  EXPECT_GT(total, 450u);
}

// The sensor keeps the table's classes as a bitmap of ids 0..0xFFFF
// (nv_classes, bpf/progs/fd/nvidia_ioctl.bpf.c): a larger id would be taken
// for an unknown class and sent at every allocation.
TEST(NvidiaSurface, EveryClassFitsTheSensorsBitmap) {
  for (const auto& r : surface_rows(Part::kClass)) EXPECT_LE(r.value, 0xFFFFu) << r.name;
}

// The decoder's names (escape_name, class_name, control_name, uvm_ioctl_name)
// and the table agree on every number both know, and every number the
// decoder names is in the table: one set of facts.
TEST(NvidiaSurface, AgreesWithTheDecoderTables) {
  for (const auto& r : surface_rows(Part::kEscape)) EXPECT_EQ(escape_name(r.value), r.name);
  for (const auto& r : surface_rows(Part::kUvm)) EXPECT_EQ(uvm_ioctl_name(r.value), r.name);
  for (const auto& r : surface_rows(Part::kClass)) {
    EXPECT_EQ(class_name(r.value), r.name);
    EXPECT_EQ(class_from_name(r.name), r.value) << r.name;
  }
  for (const auto& r : surface_rows(Part::kControl)) EXPECT_EQ(control_name(r.value), r.name);

  for (std::uint32_t nr = 0; nr <= 0xFF; ++nr) {
    if (!escape_name(nr).empty()) {
      EXPECT_NE(surface_row(Part::kEscape, nr), nullptr) << escape_name(nr);
    }
  }
  for (std::uint32_t cmd = 0; cmd <= 2047; ++cmd) {
    auto n = uvm_ioctl_name(cmd);
    if (!n.empty() && n != "UVM_TEST") {
      EXPECT_NE(surface_row(Part::kUvm, cmd), nullptr) << n;
    }
  }
  for (std::uint32_t cls = 0; cls <= 0xFFFF; ++cls) {
    if (!class_kind(cls).empty()) {
      EXPECT_NE(surface_row(Part::kClass, cls), nullptr) << class_name(cls);
    }
  }
  // Controls the decoder classifies, by the interfaces it knows of.
  for (std::uint32_t iface : {0x0000u, 0x0080u, 0x00E0u, 0x00FDu, 0x2080u, 0x83DEu}) {
    for (std::uint32_t low = 0; low <= 0xFFFF; ++low) {
      const std::uint32_t cmd = (iface << 16) | low;
      if (!control_kind(cmd).empty()) {
        EXPECT_NE(surface_row(Part::kControl, cmd), nullptr) << control_name(cmd);
      }
    }
  }
}

}  // namespace
}  // namespace vigil::event::nvidia
