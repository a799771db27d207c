// The CUDA driver API entry points the plugin probes: their exported names,
// what kind of call each is, and which argument holds what the events report.
// Signatures: cuda.h (see /plugins/cuda/README.md for the table).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "plugins/cuda/cuda_probe.h"

namespace vigil::cuda {

enum class Category : std::uint8_t { kContext, kModule, kMemory, kLaunch };

std::string_view category_name(Category c);

struct CallInfo {
  cuda_call_id id;
  std::string_view symbol;  // the exported name in libcuda.so
  Category category;
  // 1-based argument positions (0: the call has none).
  std::uint8_t device_arg;  // CUdevice ordinal (context creation)
  std::uint8_t size_arg;    // bytes (allocation)
  std::uint8_t ptr_arg;     // device pointer (free)
};

// Every known entry point, in cuda_call_id order (CUDA_CALL_NONE excluded).
std::span<const CallInfo> all_calls();

// The entry for an id read from a probe record or a capture; nullopt for an
// id this build does not know.
std::optional<CallInfo> call_by_id(std::uint32_t id);

// Entry-point groups a configuration can switch off ("context", "module",
// "memory", "launch").
std::optional<Category> category_by_name(std::string_view name);

}  // namespace vigil::cuda
