#include "fields.h"

namespace vigil::nvml {

namespace {

constexpr vigil_field_info kFields[] = {
    {"nvml.event", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The kind of nvml event: process_sample (one process on one GPU) or device_sample (one "
     "GPU's totals)."},
    {"nvml.pid", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The process NVML reports on the GPU (host pid numbering); <NA> on device_sample."},
    {"nvml.sm_util", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The process's SM (compute) utilisation of the GPU in percent, averaged over NVML's samples "
     "since the previous sample; <NA> when the GPU does not report per-process utilisation."},
    {"nvml.mem_util", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The process's GPU memory (frame buffer read/write) utilisation in percent, averaged over "
     "NVML's samples since the previous sample; <NA> when not reported."},
    {"nvml.memory_used", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Bytes of GPU memory the process holds on the GPU; <NA> when NVML cannot tell or on "
     "device_sample."},
    {"nvml.device.uuid", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The GPU's UUID as NVML reports it (GPU-...); <NA> when NVML gave none."},
    {"nvml.device.index", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The GPU's NVML index on this node (the order NVML enumerates GPUs in)."},
    {"nvml.device.minor", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The GPU's device minor (/dev/nvidia<minor>); <NA> when NVML gave none."},
    {"nvml.device.pci_bus_id", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The GPU's PCI bus id (domain:bus:device.function, e.g. 00000000:3B:00.0); <NA> when "
     "unknown."},
    {"nvml.device.memory_used", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "Bytes of the GPU's memory in use, all processes together; <NA> when unknown."},
    {"nvml.device.memory_total", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE, "Bytes of memory the GPU has; <NA> when unknown."},
    {"nvml.device.sm_util", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The GPU's SM utilisation in percent: the sum of its processes' nvml.sm_util, at most 100; "
     "<NA> when the GPU does not report per-process utilisation."},
    {"nvml.device.mem_util", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "The GPU's memory utilisation in percent: the sum of its processes' nvml.mem_util, at most "
     "100; <NA> when not reported."},
    {"nvml.device.process_count", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "How many processes used the GPU in this sample (compute processes and processes with "
     "utilisation samples)."},
    {"nvml.device.processes_dropped", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "How many of the GPU's processes got no process_sample in this sample (over the plugin's "
     "max_processes, or a list too long to read)."},
    {"nvml.device.ecc", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The GPU's current ECC mode (nvmlDeviceGetEccMode): on, off, or unsupported (the GPU has no "
     "ECC memory); <NA> when NVML could not tell."},
    {"nvml.device.ecc_pending", VIGIL_FIELD_STRING, VIGIL_ARG_NONE,
     "The ECC mode the GPU takes at its next reboot (nvmlDeviceGetEccMode's pending mode): on, "
     "off or unsupported; differs from nvml.device.ecc when a change waits for a reboot; <NA> "
     "when NVML could not tell."},
    {"nvml.devices", VIGIL_FIELD_UINT64, VIGIL_ARG_NONE,
     "How many GPUs this sample reported (every event of a sample carries the same time); <NA> "
     "in records of plugin versions before 0.2.0."},
};
static_assert(sizeof(kFields) / sizeof(kFields[0]) == static_cast<std::size_t>(Field::kCount));

void set_u64(vigil_extract_request& req, std::uint64_t v) {
  req.has_value = 1;
  req.value.u64 = v;
}

void set_str(vigil_extract_request& req, const std::string& s) {
  if (s.empty()) return;  // unknown
  req.has_value = 1;
  req.value.str = s.c_str();
}

}  // namespace

const vigil_field_info* field_table(std::uint32_t* n) {
  if (n != nullptr) *n = static_cast<std::uint32_t>(Field::kCount);
  return kFields;
}

const char* ecc_mode_name(EccMode m) {
  switch (m) {
    case EccMode::kOn: return "on";
    case EccMode::kOff: return "off";
    case EccMode::kUnsupported: return "unsupported";
    case EccMode::kUnknown: break;
  }
  return nullptr;
}

const char* event_name(RecordKind kind) { return kind == RecordKind::kProcess ? "process_sample" : "device_sample"; }

bool extract_field(const Record& r, vigil_extract_request& req) {
  req.has_value = 0;
  req.value.u64 = 0;
  if (req.field >= static_cast<std::uint32_t>(Field::kCount)) return false;
  const DeviceSample& d = r.device;
  const ProcessSample& p = r.process;
  bool proc = r.kind == RecordKind::kProcess;
  switch (static_cast<Field>(req.field)) {
    case Field::kEvent:
      req.has_value = 1;
      req.value.str = event_name(r.kind);
      break;
    case Field::kPid:
      if (proc) set_u64(req, p.pid);
      break;
    case Field::kSmUtil:
      if (proc && p.has_util) set_u64(req, p.sm_util);
      break;
    case Field::kMemUtil:
      if (proc && p.has_util) set_u64(req, p.mem_util);
      break;
    case Field::kMemoryUsed:
      if (proc && p.has_memory) set_u64(req, p.memory_used);
      break;
    case Field::kDeviceUuid: set_str(req, d.uuid); break;
    case Field::kDeviceIndex: set_u64(req, d.index); break;
    case Field::kDeviceMinor:
      if (d.has_minor) set_u64(req, d.minor);
      break;
    case Field::kDevicePciBusId: set_str(req, d.pci_bus_id); break;
    case Field::kDeviceMemoryUsed:
      if (d.has_memory) set_u64(req, d.memory_used);
      break;
    case Field::kDeviceMemoryTotal:
      if (d.has_memory) set_u64(req, d.memory_total);
      break;
    case Field::kDeviceSmUtil:
      if (d.has_util) set_u64(req, d.sm_util);
      break;
    case Field::kDeviceMemUtil:
      if (d.has_util) set_u64(req, d.mem_util);
      break;
    case Field::kDeviceProcessCount: set_u64(req, d.process_count); break;
    case Field::kDeviceProcessesDropped: set_u64(req, d.processes_dropped); break;
    case Field::kDeviceEcc:
    case Field::kDeviceEccPending:
      if (const char* m =
              ecc_mode_name(static_cast<Field>(req.field) == Field::kDeviceEcc ? d.ecc_current : d.ecc_pending)) {
        req.has_value = 1;
        req.value.str = m;
      }
      break;
    case Field::kDevices:
      if (d.sample_devices > 0) set_u64(req, d.sample_devices);
      break;
    case Field::kCount: return false;
  }
  return true;
}

}  // namespace vigil::nvml
