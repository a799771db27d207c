// Whole-string number parsing for text from the kernel and /proc: the text is
// a number in the given base and nothing else (no sign games, no trailing
// bytes, no overflow), or the parse fails and *out is left unspecified.
#ifndef VIGIL_UTIL_PARSE_NUMBER_H
#define VIGIL_UTIL_PARSE_NUMBER_H

#include <charconv>
#include <string_view>
#include <system_error>

namespace vigil::util {

template <typename T>
bool parse_whole(std::string_view s, T* out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace vigil::util

#endif  // VIGIL_UTIL_PARSE_NUMBER_H
