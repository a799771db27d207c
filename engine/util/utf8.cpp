#include "engine/util/utf8.h"

#include <cstdint>
#include <cstring>

namespace vigil::util {

namespace {

// What a lead byte starts: the sequence's length and the range its second
// byte must fall in (later bytes are always 0x80-0xBF). Length 0: a byte no
// well-formed sequence starts with (a continuation byte, C0, C1, F5-FF).
struct Utf8Lead {
  int len;
  unsigned char lo, hi;
};

Utf8Lead utf8_lead(unsigned char b) noexcept {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};  // no overlong three-byte forms
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};  // no overlong four-byte forms
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

// The end of the run of ASCII bytes that starts at i, in steps of eight.
std::size_t skip_ascii_words(std::string_view s, std::size_t i) noexcept {
  while (i + 8 <= s.size()) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ULL) break;
    i += 8;
  }
  return i;
}

}  // namespace

int utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const Utf8Lead lead = utf8_lead(static_cast<unsigned char>(s[i]));
  if (lead.len == 0) return -1;
  for (int k = 1; k < lead.len; ++k) {
    const std::size_t at = i + static_cast<std::size_t>(k);
    if (at >= s.size()) return -k;
    const auto b = static_cast<unsigned char>(s[at]);
    const unsigned char lo = k == 1 ? lead.lo : 0x80;
    const unsigned char hi = k == 1 ? lead.hi : 0xBF;
    if (b < lo || b > hi) return -k;
  }
  return lead.len;
}

std::size_t utf8_first_invalid(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    i = skip_ascii_words(s, i);
    if (i >= s.size()) break;
    const int n = utf8_sequence(s, i);
    if (n < 0) return i;
    i += static_cast<std::size_t>(n);
  }
  return s.size();
}

void append_utf8_replacing(std::string& out, std::string_view s) {
  std::size_t i = utf8_first_invalid(s);
  out.append(s.data(), i);
  std::size_t run = i;  // start of the well-formed bytes not yet copied
  while (i < s.size()) {
    const int n = utf8_sequence(s, i);
    if (n > 0) {
      i += static_cast<std::size_t>(n);
      continue;
    }
    out.append(s.data() + run, i - run);
    out.append(kReplacementChar);
    i += static_cast<std::size_t>(-n);
    run = i;
  }
  out.append(s.data() + run, s.size() - run);
}

}  // namespace vigil::util
