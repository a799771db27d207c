// A program's environment as an exec event carries it: "NAME=value" strings,
// from the exec record's envp area (bounded by the sensor: VG_ENV_MAX).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::event {

// "A=1\0B=2\0" -> {"A=1", "B=2"}. When the area was cut at its bound, its
// last, partial string is dropped (it would read as a whole, wrong value);
// strings that are not variables (no '=', or an empty name) are dropped too,
// since a program may write anything into its own envp area.
std::vector<std::string> parse_environ(std::string_view raw, bool truncated);

}  // namespace vigil::event
