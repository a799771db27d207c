// UTF-8 over untrusted bytes (paths, command lines, payloads): where a value
// stops being well-formed UTF-8, and a copy with every ill-formed sequence
// replaced by U+FFFD.
//
// Well-formed means Unicode's table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF. Control characters and noncharacters are
// well-formed. An ill-formed sequence is replaced by one U+FFFD per maximal
// subpart (Unicode §3.9, "U+FFFD Substitution of Maximal Subparts"): the
// longest start of a well-formed sequence that is there, or one byte. So
// "x\xE1\x80y" (a three-byte sequence cut short) becomes "x\uFFFDy", and
// "\xFF\xFE" becomes two replacements. Falco 0.45 prepares a value for its
// `regex` operator the same way.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vigil::util {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// The sequence that starts at s[i] (i < s.size()): its length (1 to 4) when
// it is well-formed, else minus the length of its maximal subpart (-1 to -3),
// the bytes one U+FFFD stands for.
int utf8_sequence(std::string_view s, std::size_t i) noexcept;

// The offset of the first ill-formed sequence in s; s.size() when all of s is
// well-formed. Linear, eight bytes at a time over ASCII.
std::size_t utf8_first_invalid(std::string_view s) noexcept;

inline bool utf8_valid(std::string_view s) noexcept { return utf8_first_invalid(s) == s.size(); }

// Appends s to out with each maximal subpart of an ill-formed sequence
// replaced by U+FFFD. out grows by at most three times s.size().
void append_utf8_replacing(std::string& out, std::string_view s);

}  // namespace vigil::util
