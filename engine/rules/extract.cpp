// Extraction: a field's values for an event through the per-event FieldCache,
// with transformers (tolower, toupper, b64, basename, len) applied.
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/rules/compiled.h"

namespace vigil::rules {

namespace {

int b64_val(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

void apply_transformer(Transformer t, FieldType in, Extracted& e, Arena& a, FieldType& out) noexcept {
  if (t == Transformer::kLen) {
    std::int64_t len = 0;
    if (in == FieldType::kList) {
      len = static_cast<std::int64_t>(e.n);
      e.n = 1;
    } else if (e.n > 0) {
      for (std::size_t i = 0; i < e.n; ++i) e.v[i].i = static_cast<std::int64_t>(e.v[i].s.size());
      out = FieldType::kInt;
      return;
    } else {
      e.n = 1;
    }
    e.v[0].i = len;
    out = FieldType::kInt;
    return;
  }
  out = in;
  for (std::size_t i = 0; i < e.n; ++i) {
    std::string_view s = e.v[i].s;
    switch (t) {
      case Transformer::kToLower:
      case Transformer::kToUpper: {
        a.begin();
        std::size_t got = 0;
        char* p = a.extend(s.size(), got);
        // ASCII letters only, branch-free: one subtraction and compare a byte.
        const unsigned char from = t == Transformer::kToLower ? 'A' : 'a';
        const int delta = t == Transformer::kToLower ? ('a' - 'A') : -('a' - 'A');
        std::size_t k = 0;
        // Eight bytes at a time (command lines are long): a byte's bit 7 in
        // `letter` is set when it is in [from, from + 25]; flipping bit 5
        // changes the case of exactly those.
        constexpr std::uint64_t kOnes = 0x0101010101010101ull;
        constexpr std::uint64_t kHigh = 0x8080808080808080ull;
        for (; k + 8 <= got; k += 8) {
          std::uint64_t w;
          std::memcpy(&w, s.data() + k, 8);
          const std::uint64_t low7 = w & ~kHigh;
          const std::uint64_t ge_from = low7 + (0x80u - from) * kOnes;
          const std::uint64_t gt_last = low7 + (0x80u - from - 26) * kOnes;
          const std::uint64_t letter = ge_from & ~gt_last & ~w & kHigh;
          w ^= letter >> 2;
          std::memcpy(p + k, &w, 8);
        }
        for (; k < got; ++k) {
          auto ch = static_cast<unsigned char>(s[k]);
          bool letter = static_cast<unsigned char>(ch - from) < 26;
          p[k] = static_cast<char>(ch + (letter ? delta : 0));
        }
        e.v[i].s = a.finish();
        break;
      }
      case Transformer::kBasename: {
        // memrchr, not string_view::rfind's byte loop (every exec's path).
        const void* p = s.empty() ? nullptr : ::memrchr(s.data(), '/', s.size());
        e.v[i].s = p ? s.substr(static_cast<std::size_t>(static_cast<const char*>(p) - s.data()) + 1) : s;
        break;
      }
      case Transformer::kB64: {
        a.begin();
        std::uint32_t acc = 0;
        int bits = 0;
        bool bad = false;
        for (char c : s) {
          if (c == '=') break;
          int v = b64_val(c);
          if (v < 0) {
            bad = true;
            break;
          }
          acc = (acc << 6) | static_cast<std::uint32_t>(v);
          bits += 6;
          if (bits >= 8) {
            bits -= 8;
            a.append(static_cast<char>((acc >> bits) & 0xff));
          }
        }
        if (bad) {
          // Not base64: no value (Falco's behaviour for a failed transform).
          e.v[i] = e.v[e.n - 1];
          --e.n;
          --i;
          continue;
        }
        e.v[i].s = a.finish();
        break;
      }
      case Transformer::kLen: break;
    }
  }
}

}  // namespace

FieldType extract_field(const ExtractCtx& x, const FieldInst& f, const std::vector<Transformer>& tr,
                        Extracted& out) noexcept {
  out.n = 0;
  FieldCache* c = x.cache;
  if (c && f.slot >= 0) {
    auto s = static_cast<unsigned>(f.slot);
    if ((c->done[s / 64] >> (s % 64)) & 1u) {
      out.n = c->count[s];
      if (out.n) out.v[0] = c->val[s];
    } else {
      f.def->fn(x, f, out);
      if (out.n <= 1) {
        c->done[s / 64] |= std::uint64_t{1} << (s % 64);
        c->count[s] = static_cast<std::uint8_t>(out.n);
        if (out.n) store_val(c->val[s], out.v[0], f.def->type);
      }
    }
  } else {
    f.def->fn(x, f, out);
  }
  FieldType t = f.def->type;
  for (auto it = tr.begin(); it != tr.end(); ++it) apply_transformer(*it, t, out, *x.arena, t);
  return t;
}

}  // namespace vigil::rules
