#pragma once
namespace vigil::cli {
inline constexpr const char* kVersion = "0.1.0";
}
