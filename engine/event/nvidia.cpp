// NVIDIA number -> name tables. Every number here is from
// ../shared/reference/nvidia.md (escape table §2.2, RM classes §3.1, RM controls
// §3.3, UVM ioctls §4, device numbers §1.1). Tables are sorted by number (a
// static_assert keeps them sorted) and looked up through a hash index built
// at compile time.
#include "engine/event/nvidia.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>

namespace vigil::event::nvidia {
namespace {

struct Named {
  std::uint32_t value;
  std::string_view name;
};

struct Kinded {
  std::uint32_t value;
  std::string_view name;
  std::string_view kind;
};

template <typename T, std::size_t N>
constexpr bool sorted_unique(const std::array<T, N>& a) {
  for (std::size_t i = 1; i < N; ++i) {
    if (!(a[i - 1].value < a[i].value)) return false;
  }
  return true;
}

// A table's entries by number, found through an open-addressing hash of
// the number (at most a quarter full), built when vigil compiles: one or
// two probes, where a binary search took six or seven data-dependent
// branches (the rule engine's ioctl guards look up every ioctl's escape,
// control name and control kind).
constexpr unsigned index_bits(std::size_t n) {
  unsigned b = 0;
  while ((std::size_t{1} << b) < 4 * n) ++b;
  return b;
}
constexpr std::uint32_t index_slot(std::uint32_t v, unsigned bits) { return (v * 0x9E3779B1u) >> (32 - bits); }

template <typename T, std::size_t N>
class Indexed {
 public:
  constexpr explicit Indexed(const std::array<T, N>& a) : table_(&a) {
    for (std::size_t k = 0; k < N; ++k) {
      std::uint32_t i = index_slot(a[k].value, kBits);
      while (slots_[i] != 0) i = (i + 1) & kMask;
      slots_[i] = static_cast<std::uint16_t>(k + 1);
    }
  }
  const T* find(std::uint32_t value) const noexcept {
    for (std::uint32_t i = index_slot(value, kBits);; i = (i + 1) & kMask) {
      const std::uint16_t s = slots_[i];
      if (s == 0) return nullptr;
      const T& e = (*table_)[s - 1];
      if (e.value == value) return &e;
    }
  }

 private:
  static constexpr unsigned kBits = index_bits(N);
  static constexpr std::uint32_t kMask = (1u << kBits) - 1;
  const std::array<T, N>* table_;
  std::array<std::uint16_t, std::size_t{1} << kBits> slots_{};  // entry + 1; 0: empty
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 'a' + 'A');
    if (y >= 'a' && y <= 'z') y = static_cast<char>(y - 'a' + 'A');
    if (x != y) return false;
  }
  return true;
}

template <typename T, std::size_t N>
std::optional<std::uint32_t> find_name(const std::array<T, N>& a, std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (const auto& e : a) {
    if (iequals(e.name, name)) return e.value;
  }
  return std::nullopt;
}

// §2.2: every NV_ESC_* escape (nv_escape.h, nv-ioctl-numbers.h, nv-ioctl-numa.h).
constexpr std::array<Named, 37> kEscapes = {{
    {0x27, "NV_ESC_RM_ALLOC_MEMORY"},
    {0x28, "NV_ESC_RM_ALLOC_OBJECT"},
    {0x29, "NV_ESC_RM_FREE"},
    {0x2A, "NV_ESC_RM_CONTROL"},
    {0x2B, "NV_ESC_RM_ALLOC"},
    {0x34, "NV_ESC_RM_DUP_OBJECT"},
    {0x35, "NV_ESC_RM_SHARE"},
    {0x39, "NV_ESC_RM_I2C_ACCESS"},
    {0x41, "NV_ESC_RM_IDLE_CHANNELS"},
    {0x4A, "NV_ESC_RM_VID_HEAP_CONTROL"},
    {0x4D, "NV_ESC_RM_ACCESS_REGISTRY"},
    {0x4E, "NV_ESC_RM_MAP_MEMORY"},
    {0x4F, "NV_ESC_RM_UNMAP_MEMORY"},
    {0x52, "NV_ESC_RM_GET_EVENT_DATA"},
    {0x54, "NV_ESC_RM_ALLOC_CONTEXT_DMA2"},
    {0x56, "NV_ESC_RM_ADD_VBLANK_CALLBACK"},
    {0x57, "NV_ESC_RM_MAP_MEMORY_DMA"},
    {0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA"},
    {0x59, "NV_ESC_RM_BIND_CONTEXT_DMA"},
    {0x5C, "NV_ESC_RM_EXPORT_OBJECT_TO_FD"},
    {0x5D, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD"},
    {0x5E, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO"},
    {0x5F, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC"},
    {0xC8, "NV_ESC_CARD_INFO"},
    {0xC9, "NV_ESC_REGISTER_FD"},
    {0xCE, "NV_ESC_ALLOC_OS_EVENT"},
    {0xCF, "NV_ESC_FREE_OS_EVENT"},
    {0xD1, "NV_ESC_STATUS_CODE"},
    {0xD2, "NV_ESC_CHECK_VERSION_STR"},
    {0xD3, "NV_ESC_IOCTL_XFER_CMD"},
    {0xD4, "NV_ESC_ATTACH_GPUS_TO_FD"},
    {0xD5, "NV_ESC_QUERY_DEVICE_INTR"},
    {0xD6, "NV_ESC_SYS_PARAMS"},
    {0xD7, "NV_ESC_NUMA_INFO"},
    {0xD8, "NV_ESC_SET_NUMA_STATUS"},
    {0xD9, "NV_ESC_EXPORT_TO_DMABUF_FD"},
    {0xDA, "NV_ESC_WAIT_OPEN_COMPLETE"},
}};
static_assert(sorted_unique(kEscapes), "kEscapes must be sorted by nr");
constexpr Indexed kEscapesIndex(kEscapes);

// §4: UVM ioctls. Raw cmd values (not _IOC encoded) except INITIALIZE/DEINITIALIZE.
constexpr std::array<Named, 70> kUvm = {{
    {1, "UVM_RESERVE_VA"},
    {2, "UVM_RELEASE_VA"},
    {3, "UVM_REGION_COMMIT"},
    {4, "UVM_REGION_DECOMMIT"},
    {5, "UVM_REGION_SET_STREAM"},
    {6, "UVM_SET_STREAM_RUNNING"},
    {7, "UVM_SET_STREAM_STOPPED"},
    {10, "UVM_ADD_SESSION"},
    {12, "UVM_ENABLE_COUNTERS"},
    {13, "UVM_MAP_COUNTER"},
    {14, "UVM_CREATE_EVENT_QUEUE"},
    {15, "UVM_REMOVE_EVENT_QUEUE"},
    {16, "UVM_MAP_EVENT_QUEUE"},
    {17, "UVM_EVENT_CTRL"},
    {20, "UVM_GET_GPU_UUID_TABLE"},
    {21, "UVM_REGION_SET_BACKING"},
    {22, "UVM_REGION_UNSET_BACKING"},
    {23, "UVM_CREATE_RANGE_GROUP"},
    {24, "UVM_DESTROY_RANGE_GROUP"},
    {25, "UVM_REGISTER_GPU_VASPACE"},
    {26, "UVM_UNREGISTER_GPU_VASPACE"},
    {27, "UVM_REGISTER_CHANNEL"},
    {28, "UVM_UNREGISTER_CHANNEL"},
    {29, "UVM_ENABLE_PEER_ACCESS"},
    {30, "UVM_DISABLE_PEER_ACCESS"},
    {31, "UVM_SET_RANGE_GROUP"},
    {33, "UVM_MAP_EXTERNAL_ALLOCATION"},
    {34, "UVM_FREE"},
    {35, "UVM_MEM_MAP"},
    {37, "UVM_REGISTER_GPU"},
    {38, "UVM_UNREGISTER_GPU"},
    {39, "UVM_PAGEABLE_MEM_ACCESS"},
    {40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS"},
    {41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS"},
    {42, "UVM_SET_PREFERRED_LOCATION"},
    {43, "UVM_UNSET_PREFERRED_LOCATION"},
    {44, "UVM_ENABLE_READ_DUPLICATION"},
    {45, "UVM_DISABLE_READ_DUPLICATION"},
    {46, "UVM_SET_ACCESSED_BY"},
    {47, "UVM_UNSET_ACCESSED_BY"},
    {51, "UVM_MIGRATE"},
    {53, "UVM_MIGRATE_RANGE_GROUP"},
    {56, "UVM_TOOLS_INIT_EVENT_TRACKER"},
    {57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD"},
    {58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS"},
    {59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS"},
    {60, "UVM_TOOLS_ENABLE_COUNTERS"},
    {61, "UVM_TOOLS_DISABLE_COUNTERS"},
    {62, "UVM_TOOLS_READ_PROCESS_MEMORY"},
    {63, "UVM_TOOLS_WRITE_PROCESS_MEMORY"},
    {64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE"},
    {65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION"},
    {66, "UVM_UNMAP_EXTERNAL"},
    {67, "UVM_TOOLS_FLUSH_EVENTS"},
    {68, "UVM_ALLOC_SEMAPHORE_POOL"},
    {69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES"},
    {70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU"},
    {71, "UVM_POPULATE_PAGEABLE"},
    {72, "UVM_VALIDATE_VA_RANGE"},
    {73, "UVM_CREATE_EXTERNAL_RANGE"},
    {74, "UVM_MAP_EXTERNAL_SPARSE"},
    {75, "UVM_MM_INITIALIZE"},
    {76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2"},
    {77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2"},
    {78, "UVM_ALLOC_DEVICE_P2P"},
    {79, "UVM_CLEAR_ALL_ACCESS_COUNTERS"},
    {80, "UVM_DISCARD"},
    {2047, "UVM_IS_8_SUPPORTED"},
    {0x30000001, "UVM_INITIALIZE"},
    {0x30000002, "UVM_DEINITIALIZE"},
}};
static_assert(sorted_unique(kUvm), "kUvm must be sorted by cmd");
constexpr Indexed kUvmIndex(kUvm);

// UVM_TEST_* ioctls are 200 + i (only with uvm_enable_builtin_tests=1). The
// reference gives no upper bound; 200..1023 covers every test index with room.
constexpr std::uint32_t kUvmTestFirst = 200;
constexpr std::uint32_t kUvmTestLast = 1023;

// §3.1: RM classes and what an allocation of each means.
constexpr std::string_view kCompute = "compute";
constexpr std::string_view kChannel = "channel";
constexpr std::string_view kGraphics = "graphics";
constexpr std::string_view kCopy = "copy";
constexpr std::string_view kVideo = "video";
constexpr std::string_view kMemory = "memory";
constexpr std::string_view kDevice = "device";
constexpr std::string_view kMig = "mig";
constexpr std::string_view kDebugger = "debugger";
constexpr std::string_view kProfiler = "profiler";
constexpr std::string_view kP2p = "p2p";
constexpr std::string_view kClient = "client";
constexpr std::string_view kEvent = "event";
constexpr std::string_view kOther = "other";

constexpr std::array<Kinded, 99> kClasses = {{
    {0x00000000, "NV01_ROOT", kClient},
    {0x00000001, "NV01_ROOT_NON_PRIV", kClient},
    {0x00000005, "NV01_EVENT", kEvent},
    {0x0000000F, "FABRIC_MANAGER_SESSION", kOther},
    {0x00000020, "NV0020_GPU_MANAGEMENT", kOther},
    {0x0000003E, "NV01_MEMORY_SYSTEM", kMemory},
    {0x0000003F, "NV01_MEMORY_LOCAL_PRIVILEGED", kMemory},
    {0x00000040, "NV01_MEMORY_LOCAL_USER", kMemory},
    {0x00000041, "NV01_ROOT_CLIENT", kClient},
    {0x00000070, "NV01_MEMORY_VIRTUAL", kMemory},
    {0x00000071, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR", kMemory},
    {0x00000078, "NV01_EVENT_KERNEL_CALLBACK", kEvent},
    {0x00000079, "NV01_EVENT_OS_EVENT", kEvent},
    {0x0000007E, "NV01_EVENT_KERNEL_CALLBACK_EX", kEvent},
    {0x00000080, "NV01_DEVICE_0", kDevice},
    {0x00000081, "NV01_MEMORY_LIST_SYSTEM", kMemory},
    {0x00000082, "NV01_MEMORY_LIST_FBMEM", kMemory},
    {0x00000083, "NV01_MEMORY_LIST_OBJECT", kMemory},
    {0x000000C2, "NV01_MEMORY_LOCAL_PHYSICAL", kMemory},
    {0x000000DE, "RM_USER_SHARED_DATA", kOther},
    {0x000000E0, "NV_MEMORY_EXPORT", kMemory},
    {0x000000F1, "NV_IMEX_SESSION", kOther},
    {0x000000F8, "NV_MEMORY_FABRIC", kMemory},
    {0x000000F9, "NV_MEMORY_FABRIC_IMPORT_V2", kMemory},
    {0x000000FB, "NV_MEMORY_FABRIC_IMPORTED_REF", kMemory},
    {0x000000FD, "NV_MEMORY_MULTICAST_FABRIC", kMemory},
    {0x00002080, "NV20_SUBDEVICE_0", kDevice},
    {0x0000503B, "NV50_P2P", kP2p},
    {0x0000503C, "NV50_THIRD_PARTY_P2P", kP2p},
    {0x000050A0, "NV50_MEMORY_VIRTUAL", kMemory},
    {0x000083DE, "GT200_DEBUGGER", kDebugger},
    {0x0000900E, "MPS_COMPUTE", kCompute},
    {0x00009067, "FERMI_CONTEXT_SHARE_A", kChannel},
    {0x000090CC, "GF100_PROFILER", kProfiler},
    {0x000090CE, "NV01_MEMORY_DEVICELESS", kMemory},
    {0x000090F1, "FERMI_VASPACE_A", kMemory},
    {0x0000A06C, "KEPLER_CHANNEL_GROUP_A", kChannel},
    {0x0000A081, "NVA081_VGPU_CONFIG", kOther},
    {0x0000A084, "NVA084_KERNEL_HOST_VGPU_DEVICE", kOther},
    {0x0000B1CC, "MAXWELL_PROFILER_CONTEXT", kProfiler},
    {0x0000B2CC, "MAXWELL_PROFILER_DEVICE", kProfiler},
    {0x0000C361, "VOLTA_USERMODE_A", kOther},
    {0x0000C36F, "VOLTA_CHANNEL_GPFIFO_A", kChannel},
    {0x0000C461, "TURING_USERMODE_A", kOther},
    {0x0000C46F, "TURING_CHANNEL_GPFIFO_A", kChannel},
    {0x0000C4B0, "NVC4B0_VIDEO_DECODER", kVideo},
    {0x0000C4B7, "NVC4B7_VIDEO_ENCODER", kVideo},
    {0x0000C561, "AMPERE_USERMODE_A", kOther},
    {0x0000C56F, "AMPERE_CHANNEL_GPFIFO_A", kChannel},
    {0x0000C570, "NVC570_DISPLAY", kOther},
    {0x0000C574, "UVM_CHANNEL_RETAINER", kOther},
    {0x0000C597, "TURING_A", kGraphics},
    {0x0000C5B5, "TURING_DMA_COPY_A", kCopy},
    {0x0000C5C0, "TURING_COMPUTE_A", kCompute},
    {0x0000C637, "AMPERE_SMC_PARTITION_REF", kMig},
    {0x0000C638, "AMPERE_SMC_EXEC_PARTITION_REF", kMig},
    {0x0000C639, "AMPERE_SMC_CONFIG_SESSION", kMig},
    {0x0000C640, "AMPERE_SMC_MONITOR_SESSION", kMig},
    {0x0000C661, "HOPPER_USERMODE_A", kOther},
    {0x0000C670, "NVC670_DISPLAY", kOther},
    {0x0000C697, "AMPERE_A", kGraphics},
    {0x0000C6B0, "NVC6B0_VIDEO_DECODER", kVideo},
    {0x0000C6B5, "AMPERE_DMA_COPY_A", kCopy},
    {0x0000C6C0, "AMPERE_COMPUTE_A", kCompute},
    {0x0000C761, "BLACKWELL_USERMODE_A", kOther},
    {0x0000C770, "NVC770_DISPLAY", kOther},
    {0x0000C797, "AMPERE_B", kGraphics},
    {0x0000C7B0, "NVC7B0_VIDEO_DECODER", kVideo},
    {0x0000C7B5, "AMPERE_DMA_COPY_B", kCopy},
    {0x0000C7B7, "NVC7B7_VIDEO_ENCODER", kVideo},
    {0x0000C7C0, "AMPERE_COMPUTE_B", kCompute},
    {0x0000C86F, "HOPPER_CHANNEL_GPFIFO_A", kChannel},
    {0x0000C8B5, "HOPPER_DMA_COPY_A", kCopy},
    {0x0000C96F, "BLACKWELL_CHANNEL_GPFIFO_A", kChannel},
    {0x0000C970, "NVC970_DISPLAY", kOther},
    {0x0000C997, "ADA_A", kGraphics},
    {0x0000C9B0, "NVC9B0_VIDEO_DECODER", kVideo},
    {0x0000C9B5, "BLACKWELL_DMA_COPY_A", kCopy},
    {0x0000C9B7, "NVC9B7_VIDEO_ENCODER", kVideo},
    {0x0000C9C0, "ADA_COMPUTE_A", kCompute},
    {0x0000CA6F, "BLACKWELL_CHANNEL_GPFIFO_B", kChannel},
    {0x0000CA70, "NVCA70_DISPLAY", kOther},
    {0x0000CAB5, "BLACKWELL_DMA_COPY_B", kCopy},
    {0x0000CB33, "NV_CONFIDENTIAL_COMPUTE", kOther},
    {0x0000CB97, "HOPPER_A", kGraphics},
    {0x0000CBC0, "HOPPER_COMPUTE_A", kCompute},
    {0x0000CBCA, "NV_COUNTER_COLLECTION_UNIT", kProfiler},
    {0x0000CC70, "NVCC70_DISPLAY", kOther},
    {0x0000CD97, "BLACKWELL_A", kGraphics},
    {0x0000CDB0, "NVCDB0_VIDEO_DECODER", kVideo},
    {0x0000CDC0, "BLACKWELL_COMPUTE_A", kCompute},
    {0x0000CE97, "BLACKWELL_B", kGraphics},
    {0x0000CEB0, "NVCEB0_VIDEO_DECODER", kVideo},
    {0x0000CEB7, "NVCEB7_VIDEO_ENCODER", kVideo},
    {0x0000CEC0, "BLACKWELL_COMPUTE_B", kCompute},
    {0x0000CFB0, "NVCFB0_VIDEO_DECODER", kVideo},
    {0x0000CFB7, "NVCFB7_VIDEO_ENCODER", kVideo},
    {0x0000D1B0, "NVD1B0_VIDEO_DECODER", kVideo},
    {0x0000D1B7, "NVD1B7_VIDEO_ENCODER", kVideo},
}};
static_assert(sorted_unique(kClasses), "kClasses must be sorted by class id");
constexpr Indexed kClassesIndex(kClasses);

// §3.3: RM control commands. kind = what the command changes; queries are "other".
constexpr std::string_view kClock = "clock";
constexpr std::string_view kPower = "power";
constexpr std::string_view kEcc = "ecc";
constexpr std::string_view kReset = "reset";

constexpr std::array<Kinded, 74> kControls = {{
    {0x0000013E, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2", kOther},
    {0x00000201, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS", kOther},
    {0x00000202, "NV0000_CTRL_CMD_GPU_GET_ID_INFO", kOther},
    {0x00000205, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2", kOther},
    {0x00000214, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS", kOther},
    {0x00000215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS", kOther},
    {0x00000274, "NV0000_CTRL_CMD_GPU_GET_UUID_INFO", kOther},
    {0x00000275, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID", kOther},
    {0x00000278, "NV0000_CTRL_CMD_GPU_MODIFY_DRAIN_STATE", kReset},
    {0x00000279, "NV0000_CTRL_CMD_GPU_QUERY_DRAIN_STATE", kOther},
    {0x00000901, "NV0000_CTRL_CMD_SET_SUB_PROCESS_ID", kOther},
    {0x00000902, "NV0000_CTRL_CMD_DISABLE_SUB_PROCESS_USERD_ISOLATION", kOther},
    {0x00000B01, "NV0000_CTRL_CMD_GPUACCT_SET_ACCOUNTING_STATE", kOther},
    {0x00000B02, "NV0000_CTRL_CMD_GPUACCT_GET_ACCOUNTING_STATE", kOther},
    {0x00000B03, "NV0000_CTRL_CMD_GPUACCT_GET_PROC_ACCOUNTING_INFO", kOther},
    {0x00000B04, "NV0000_CTRL_CMD_GPUACCT_GET_ACCOUNTING_PIDS", kOther},
    {0x00000B05, "NV0000_CTRL_CMD_GPUACCT_CLEAR_ACCOUNTING_DATA", kOther},
    {0x00003D05, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD", kOther},
    {0x00003D06, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD", kOther},
    {0x00003D0A, "NV0000_CTRL_CMD_OS_UNIX_CREATE_EXPORT_OBJECT_FD", kOther},
    {0x00003D0B, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD", kOther},
    {0x00003D0C, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD", kOther},
    {0x00800201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST", kOther},
    {0x00800287, "NV0080_CTRL_CMD_GPU_MODIFY_SW_STATE_PERSISTENCE", kOther},
    {0x00800292, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2", kOther},
    {0x00E00101, "NV00E0_CTRL_CMD_EXPORT_MEM", kOther},
    {0x00E00102, "NV00E0_CTRL_CMD_IMPORT_MEM", kOther},
    {0x00FD0104, "NV00FD_CTRL_CMD_ATTACH_GPU", kOther},
    {0x20800102, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", kOther},
    {0x20800110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", kOther},
    {0x20800111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING", kOther},
    {0x20800112, "NV2080_CTRL_CMD_GPU_SET_POWER", kPower},
    {0x20800122, "NV2080_CTRL_CMD_GPU_EXEC_REG_OPS", kOther},
    {0x2080012F, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS", kOther},
    {0x20800130, "NV2080_CTRL_CMD_GPU_SET_COMPUTE_MODE_RULES", kOther},
    {0x20800131, "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES", kOther},
    {0x20800133, "NV2080_CTRL_CMD_GPU_QUERY_ECC_CONFIGURATION", kOther},
    {0x20800134, "NV2080_CTRL_CMD_GPU_SET_ECC_CONFIGURATION", kEcc},
    {0x20800136, "NV2080_CTRL_CMD_GPU_RESET_ECC_ERROR_STATUS", kEcc},
    {0x2080014A, "NV2080_CTRL_CMD_GPU_GET_GID_INFO", kOther},
    {0x20800170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2", kOther},
    {0x20800174, "NV2080_CTRL_CMD_GPU_SET_PARTITIONS", kMig},
    {0x20800175, "NV2080_CTRL_CMD_GPU_GET_PARTITIONS", kOther},
    {0x20800183, "NV2080_CTRL_CMD_GPU_SET_PARTITIONING_MODE", kMig},
    {0x20800185, "NV2080_CTRL_CMD_GPU_DESCRIBE_PARTITIONS", kOther},
    {0x2080018D, "NV2080_CTRL_CMD_GPU_GET_PIDS", kOther},
    {0x2080018E, "NV2080_CTRL_CMD_GPU_GET_PID_INFO", kOther},
    {0x2080019D, "NV2080_CTRL_CMD_GPU_EXEC_REG_OPS_NOPTRS", kOther},
    {0x208001A9, "NV2080_CTRL_CMD_GPU_MARK_DEVICE_FOR_RESET", kReset},
    {0x208001AA, "NV2080_CTRL_CMD_GPU_UNMARK_DEVICE_FOR_RESET", kReset},
    {0x208001AB, "NV2080_CTRL_CMD_GPU_GET_RESET_STATUS", kOther},
    {0x208001AC, "NV2080_CTRL_CMD_GPU_MARK_DEVICE_FOR_DRAIN_AND_RESET", kReset},
    {0x208001AD, "NV2080_CTRL_CMD_GPU_UNMARK_DEVICE_FOR_DRAIN_AND_RESET", kReset},
    {0x208001AE, "NV2080_CTRL_CMD_GPU_GET_DRAIN_AND_RESET_STATUS", kOther},
    {0x20801303, "NV2080_CTRL_CMD_FB_GET_INFO_V2", kOther},
    {0x20801801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO", kOther},
    {0x2080200A, "NV2080_CTRL_CMD_PERF_BOOST", kClock},
    {0x2080205B, "NV2080_CTRL_CMD_PERF_SET_POWERSTATE", kPower},
    {0x2080206E, "NV2080_CTRL_CMD_PERF_RATED_TDP_GET_CONTROL", kOther},
    {0x2080206F, "NV2080_CTRL_CMD_PERF_RATED_TDP_SET_CONTROL", kPower},
    {0x20802204, "NV2080_CTRL_CMD_RC_READ_VIRTUAL_MEM", kOther},
    {0x2080220A, "NV2080_CTRL_CMD_RC_DISABLE_WATCHDOG", kOther},
    {0x2080220B, "NV2080_CTRL_CMD_RC_ENABLE_WATCHDOG", kOther},
    {0x20802213, "NV2080_CTRL_CMD_RC_GET_ERROR_V2", kOther},
    {0x20803400, "NV2080_CTRL_CMD_ECC_GET_CLIENT_EXPOSED_COUNTERS", kOther},
    {0x20803401, "NV2080_CTRL_CMD_ECC_GET_VOLATILE_COUNTS", kOther},
    {0x20803403, "NV2080_CTRL_CMD_ECC_INJECT_ERROR", kEcc},
    {0x20803405, "NV2080_CTRL_CMD_ECC_INJECTION_SUPPORTED", kOther},
    {0x20803A01, "NV2080_CTRL_CMD_DMABUF_EXPORT_OBJECTS_TO_FD", kOther},
    {0x20803D04, "NV2080_CTRL_CMD_OS_UNIX_INSTALL_PROFILER_HOOKS", kOther},
    {0x20803D06, "NV2080_CTRL_CMD_OS_UNIX_STOP_PROFILER", kOther},
    {0x83DE0315, "NV83DE_CTRL_CMD_DEBUG_READ_MEMORY", kOther},
    {0x83DE031D, "NV83DE_CTRL_CMD_DEBUG_EXEC_REG_OPS", kOther},
    {0x83DE0326, "NV83DE_CTRL_CMD_DEBUG_READ_BATCH_MEMORY", kOther},
}};
static_assert(sorted_unique(kControls), "kControls must be sorted by command");
constexpr Indexed kControlsIndex(kControls);

// The driver surface table, generated from nvidia_surface.tsv at build time
// (cmake/nvidia_surface.cmake): the facts that change with driver releases
// stay data, one row per fact with its source, not constants here.
#include "engine/event/nvidia_surface_table.inc"
static_assert(sorted_unique(kSurface_escape), "nvidia_surface.tsv: escape rows must be sorted by number, once each");
static_assert(sorted_unique(kSurface_uvm), "nvidia_surface.tsv: uvm rows must be sorted by number, once each");
static_assert(sorted_unique(kSurface_class), "nvidia_surface.tsv: class rows must be sorted by number, once each");
static_assert(sorted_unique(kSurface_control), "nvidia_surface.tsv: control rows must be sorted by number, once each");
constexpr Indexed kSurfaceEscapeIndex(kSurface_escape);
constexpr Indexed kSurfaceUvmIndex(kSurface_uvm);
constexpr Indexed kSurfaceClassIndex(kSurface_class);
constexpr Indexed kSurfaceControlIndex(kSurface_control);

// A decoder table's name, else the surface table's.
template <typename T, std::size_t N, typename S, std::size_t M>
std::string_view name_in(const Indexed<T, N>& own, const Indexed<S, M>& surface, std::uint32_t v) {
  if (const auto* e = own.find(v)) return e->name;
  if (const auto* e = surface.find(v)) return e->name;
  return {};
}

template <typename T, std::size_t N, std::size_t M>
std::optional<std::uint32_t> find_name_in(const std::array<T, N>& own, const std::array<SurfaceRow, M>& surface,
                                          std::string_view name) {
  if (auto v = find_name(own, name)) return v;
  return find_name(surface, name);
}

}  // namespace

const SurfaceRow* surface_row(Part part, std::uint32_t value) {
  switch (part) {
    case Part::kEscape: return kSurfaceEscapeIndex.find(value);
    case Part::kUvm: return kSurfaceUvmIndex.find(value);
    case Part::kClass: return kSurfaceClassIndex.find(value);
    case Part::kControl: return kSurfaceControlIndex.find(value);
  }
  return nullptr;
}

std::span<const SurfaceRow> surface_rows(Part part) {
  switch (part) {
    case Part::kEscape: return kSurface_escape;
    case Part::kUvm: return kSurface_uvm;
    case Part::kClass: return kSurface_class;
    case Part::kControl: return kSurface_control;
  }
  return {};
}

bool surface_allowed_for_workload(std::string_view surface) {
  return surface == "workload" || surface == "graphics" || surface == "video" || surface == "rdma";
}

std::string_view escape_name(std::uint32_t nr) { return name_in(kEscapesIndex, kSurfaceEscapeIndex, nr); }

std::optional<std::uint32_t> escape_from_name(std::string_view name) {
  return find_name_in(kEscapes, kSurface_escape, name);
}

std::string_view uvm_ioctl_name(std::uint32_t cmd) {
  if (auto n = name_in(kUvmIndex, kSurfaceUvmIndex, cmd); !n.empty()) return n;
  if (cmd >= kUvmTestFirst && cmd <= kUvmTestLast) return "UVM_TEST";
  return {};
}

std::string_view class_name(std::uint32_t cls) { return name_in(kClassesIndex, kSurfaceClassIndex, cls); }

std::optional<std::uint32_t> class_from_name(std::string_view name) {
  return find_name_in(kClasses, kSurface_class, name);
}

std::string_view class_kind(std::uint32_t cls) {
  const auto* e = kClassesIndex.find(cls);
  return e ? e->kind : std::string_view{};
}

bool is_compute_or_channel(std::uint32_t cls) {
  auto kind = class_kind(cls);
  return kind == kCompute || kind == kChannel;
}

std::string_view control_name(std::uint32_t cmd) { return name_in(kControlsIndex, kSurfaceControlIndex, cmd); }

std::string_view control_kind(std::uint32_t cmd) {
  const auto* e = kControlsIndex.find(cmd);
  return e ? e->kind : std::string_view{};
}

std::string device_path(std::uint32_t major, std::uint32_t minor, std::uint32_t uvm_major) {
  if (major == kMajor) {
    if (minor <= kMaxGpuMinor) return "/dev/nvidia" + std::to_string(minor);
    if (minor == kCtlMinor) return "/dev/nvidiactl";
    if (minor == kModesetMinor) return "/dev/nvidia-modeset";
    return {};
  }
  if (uvm_major != 0 && major == uvm_major) {
    if (minor == 0) return "/dev/nvidia-uvm";
    if (minor == 1) return "/dev/nvidia-uvm-tools";
  }
  return {};
}

int gpu_index_from_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/dev/nvidia";
  if (path.size() <= kPrefix.size() || path.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::string_view digits = path.substr(kPrefix.size());
  // nvidia-modprobe names nodes "/dev/nvidia%d": no sign, no leading zeros.
  if (digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return -1;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
  }
  int n = -1;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || ptr != digits.data() + digits.size()) return -1;
  return n <= static_cast<int>(kMaxGpuMinor) ? n : -1;
}

}  // namespace vigil::event::nvidia
