#include "engine/ident/build_id.h"

#include <unistd.h>

#include <array>
#include <cstring>

namespace vigil::ident {

namespace {

struct Bytes {
  const std::uint8_t* p;
  bool big;
  std::uint64_t u(std::size_t off, std::size_t n) const {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint8_t b = p[big ? off + i : off + n - 1 - i];
      v = (v << 8) | b;
    }
    return v;
  }
};

constexpr std::uint32_t kPtNote = 4;
constexpr std::uint32_t kNtGnuBuildId = 3;

std::string to_hex(const std::uint8_t* p, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    s.push_back(kHex[p[i] >> 4]);
    s.push_back(kHex[p[i] & 15]);
  }
  return s;
}

// Walks the notes of one segment; the build-id's hex or "".
std::string find_in_notes(const std::uint8_t* p, std::size_t n, bool big) {
  Bytes b{p, big};
  std::size_t off = 0;
  while (n - off >= 12) {
    std::uint64_t namesz = b.u(off, 4), descsz = b.u(off + 4, 4), type = b.u(off + 8, 4);
    off += 12;
    std::uint64_t name_al = (namesz + 3) & ~std::uint64_t{3};
    std::uint64_t desc_al = (descsz + 3) & ~std::uint64_t{3};
    if (name_al > n - off) return {};
    std::size_t name_off = off;
    off += name_al;
    if (desc_al > n - off && descsz > n - off) return {};
    if (type == kNtGnuBuildId && namesz == 4 && std::memcmp(p + name_off, "GNU", 4) == 0 && descsz > 0 &&
        descsz <= kMaxBuildIdBytes) {
      return to_hex(p + off, descsz);
    }
    if (desc_al > n - off) return {};
    off += desc_al;
  }
  return {};
}

}  // namespace

std::string read_build_id(const ReadAt& read, std::uint64_t file_size) {
  std::array<std::uint8_t, 64> eh{};
  if (file_size < 52 || !read(0, eh.data(), file_size < 64 ? 52 : 64)) return {};
  if (eh[0] != 0x7f || eh[1] != 'E' || eh[2] != 'L' || eh[3] != 'F') return {};
  const bool is64 = eh[4] == 2;
  if (!is64 && eh[4] != 1) return {};
  if (eh[5] != 1 && eh[5] != 2) return {};
  if (is64 && file_size < 64) return {};
  Bytes b{eh.data(), eh[5] == 2};
  const std::uint64_t phoff = is64 ? b.u(32, 8) : b.u(28, 4);
  const std::uint64_t phentsize = is64 ? b.u(54, 2) : b.u(42, 2);
  std::uint64_t phnum = is64 ? b.u(56, 2) : b.u(44, 2);
  const std::uint64_t want = is64 ? 56 : 32;
  if (phentsize < want || phentsize > 256 || phnum == 0) return {};
  if (phnum > kMaxProgramHeaders) phnum = kMaxProgramHeaders;
  std::array<std::uint8_t, 56> ph{};
  std::array<std::uint8_t, kMaxNoteBytes> notes{};
  for (std::uint64_t i = 0; i < phnum; ++i) {
    if (phoff > file_size || i * phentsize > file_size - phoff) return {};
    const std::uint64_t at = phoff + i * phentsize;
    if (want > file_size - at || !read(at, ph.data(), want)) return {};
    Bytes h{ph.data(), b.big};
    if (h.u(0, 4) != kPtNote) continue;
    const std::uint64_t off = is64 ? h.u(8, 8) : h.u(4, 4);
    std::uint64_t sz = is64 ? h.u(32, 8) : h.u(16, 4);
    if (off > file_size || sz > file_size - off) continue;
    if (sz > kMaxNoteBytes) sz = kMaxNoteBytes;
    if (sz < 12 || !read(off, notes.data(), sz)) continue;
    std::string id = find_in_notes(notes.data(), sz, b.big);
    if (!id.empty()) return id;
  }
  return {};
}

std::string read_build_id_fd(int fd, std::uint64_t file_size) {
  return read_build_id(
      [fd](std::uint64_t off, void* buf, std::size_t n) {
        std::size_t got = 0;
        while (got < n) {
          ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(off + got));
          if (r <= 0) return false;
          got += static_cast<std::size_t>(r);
        }
        return true;
      },
      file_size);
}

}  // namespace vigil::ident
