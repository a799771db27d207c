// Glob matching (glob, iglob, pmatch's glob components).
#include "engine/rules/matchers.h"

namespace vigil::rules {

bool glob_match(std::string_view p, std::string_view s, bool icase) noexcept {
  std::size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  auto eq = [icase](char a, char b) { return icase ? lower(a) == lower(b) : a == b; };
  while (si < s.size()) {
    if (pi < p.size()) {
      char c = p[pi];
      if (c == '*') {
        star_p = ++pi;
        star_s = si;
        continue;
      }
      if (c == '?') { ++pi; ++si; continue; }
      if (c == '[') {
        std::size_t j = pi + 1;
        bool neg = false;
        if (j < p.size() && (p[j] == '!' || p[j] == '^')) { neg = true; ++j; }
        bool matched = false;
        std::size_t start = j;
        while (j < p.size() && (p[j] != ']' || j == start)) {
          if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char lo = p[j], hi = p[j + 2];
            char sc = s[si];
            if (icase) { lo = lower(lo); hi = lower(hi); sc = lower(sc); }
            if (sc >= lo && sc <= hi) matched = true;
            j += 3;
          } else {
            if (eq(p[j], s[si])) matched = true;
            ++j;
          }
        }
        if (j < p.size() && matched != neg) {
          pi = j + 1;
          ++si;
          continue;
        }
        if (j >= p.size() && eq('[', s[si])) {  // unterminated: literal '['
          ++pi; ++si;
          continue;
        }
      } else {
        if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
        if (eq(c, s[si])) { ++pi; ++si; continue; }
      }
    }
    if (star_p != std::string_view::npos) {
      pi = star_p;
      si = ++star_s;
      continue;
    }
    return false;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace vigil::rules
