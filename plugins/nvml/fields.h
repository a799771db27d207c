// The nvml.* fields: their table (vigil_plugin_get_fields) and how each is
// read from a decoded record.
#pragma once

#include "record.h"

#include <vigil/plugin_api.h>

#include <cstdint>

namespace vigil::nvml {

enum class Field : std::uint32_t {
  kEvent,
  kPid,
  kSmUtil,
  kMemUtil,
  kMemoryUsed,
  kDeviceUuid,
  kDeviceIndex,
  kDeviceMinor,
  kDevicePciBusId,
  kDeviceMemoryUsed,
  kDeviceMemoryTotal,
  kDeviceSmUtil,
  kDeviceMemUtil,
  kDeviceProcessCount,
  kDeviceProcessesDropped,
  kDeviceEcc,
  kDeviceEccPending,
  kDevices,
  kCount
};

// The table, in Field order; lives as long as the library.
const vigil_field_info* field_table(std::uint32_t* n);

// "on", "off", "unsupported"; nullptr when the mode is not known.
const char* ecc_mode_name(EccMode m);

// The name nvml gives events of `kind` ("process_sample", "device_sample").
const char* event_name(RecordKind kind);

// Fills req.has_value and req.value for field `req.field` of record `r`.
// String values point into `r` (or at static text), so `r` must outlive their
// use. Returns false for a field index outside the table.
bool extract_field(const Record& r, vigil_extract_request& req);

}  // namespace vigil::nvml
