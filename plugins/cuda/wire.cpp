#include "plugins/cuda/wire.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace vigil::cuda {

namespace {

template <class T>
void put(std::string& out, T v) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

void put_str(std::string& out, const std::string& s) {
  std::size_t n = std::min(s.size(), kWireStringMax);
  put<std::uint16_t>(out, static_cast<std::uint16_t>(n));
  out.append(s, 0, n);
}

struct Reader {
  std::span<const std::uint8_t> d;
  std::size_t at = 0;
  bool ok = true;

  template <class T>
  T get() {
    using U = std::make_unsigned_t<T>;
    if (d.size() - at < sizeof(T)) {
      ok = false;
      return T{};
    }
    U u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) u |= static_cast<U>(d[at + i]) << (8 * i);
    at += sizeof(T);
    return static_cast<T>(u);
  }

  std::string str() {
    auto n = get<std::uint16_t>();
    if (!ok || n > kWireStringMax || d.size() - at < n) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(d.data() + at), n);
    at += n;
    return s;
  }
};

}  // namespace

std::string encode(const Record& r) {
  std::string out;
  out.reserve(80 + r.library.size() + r.detail.size() + r.module_kind.size());
  put<std::uint8_t>(out, kWireVersion);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.kind));
  put<std::uint16_t>(out, r.call);
  put<std::uint32_t>(out, r.present);
  put<std::int64_t>(out, r.device);
  put<std::uint64_t>(out, r.size);
  put<std::uint64_t>(out, r.ptr);
  put<std::uint64_t>(out, r.launches);
  put<std::uint64_t>(out, r.graph_launches);
  put<std::uint64_t>(out, r.interval_ms);
  put<std::uint64_t>(out, r.drops_calls);
  put<std::uint64_t>(out, r.drops_launches);
  put<std::uint64_t>(out, r.probes);
  put_str(out, r.library);
  put_str(out, r.detail);
  put_str(out, r.module_kind);
  return out;
}

std::optional<Record> decode(std::span<const std::uint8_t> data) {
  Reader in{data};
  if (in.get<std::uint8_t>() != kWireVersion || !in.ok) return std::nullopt;
  Record r;
  auto kind = in.get<std::uint8_t>();
  if (kind < static_cast<std::uint8_t>(Kind::kCall) || kind > static_cast<std::uint8_t>(Kind::kLibrary))
    return std::nullopt;
  r.kind = static_cast<Kind>(kind);
  r.call = in.get<std::uint16_t>();
  r.present = in.get<std::uint32_t>();
  r.device = in.get<std::int64_t>();
  r.size = in.get<std::uint64_t>();
  r.ptr = in.get<std::uint64_t>();
  r.launches = in.get<std::uint64_t>();
  r.graph_launches = in.get<std::uint64_t>();
  r.interval_ms = in.get<std::uint64_t>();
  r.drops_calls = in.get<std::uint64_t>();
  r.drops_launches = in.get<std::uint64_t>();
  r.probes = in.get<std::uint64_t>();
  r.library = in.str();
  r.detail = in.str();
  r.module_kind = in.str();
  if (!in.ok) return std::nullopt;
  return r;
}

std::string printable(std::string_view s, std::size_t max) {
  s = s.substr(0, std::min(s.size(), max));
  std::string out;
  out.reserve(s.size());
  auto escape = [&out](unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) escape(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlongs, no surrogates, <= U+10FFFF).
    std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool ok = len != 0 && len <= 4 && c <= 0xf4 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len >= 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      if (c == 0xe0 && c1 < 0xa0) ok = false;   // overlong
      if (c == 0xed && c1 >= 0xa0) ok = false;  // surrogate
      if (c == 0xf0 && c1 < 0x90) ok = false;   // overlong
      if (c == 0xf4 && c1 >= 0x90) ok = false;  // > U+10FFFF
    }
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace vigil::cuda
