// Finds where exported functions start in an ELF shared object's file, for
// uprobes (which attach to a file offset). Reads only the ELF header, the
// program and section headers and the dynamic symbol table, each bounded, with
// pread: the file may be hostile (a container's own libcuda) and may change
// while it is read, so nothing is mapped and every offset is range-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::cuda {

enum class SymbolStatus : std::uint8_t {
  kFound,          // a defined function in an executable segment: offset is valid
  kAbsent,         // no such name in .dynsym
  kUndefined,      // named but not defined here (imported)
  kNotFunction,    // defined, but not a plain function (object, IFUNC resolver, ...)
  kNotExecutable,  // its address lies in no executable PT_LOAD segment
};

std::string_view symbol_status_name(SymbolStatus s);

struct SymbolLookup {
  std::string error;                  // non-empty: not a readable ELF64 shared object; the rest is empty
  std::vector<SymbolStatus> status;   // per wanted name, in order
  std::vector<std::uint64_t> offset;  // per wanted name: the file offset when kFound
};

// Reads `len` bytes at `off` into `dst`; false when they are not all there.
using ReadAt = std::function<bool(std::uint64_t off, std::size_t len, void* dst)>;

// Limits on what one lookup reads.
inline constexpr std::uint64_t kMaxSymtabBytes = 64ull << 20;  // .dynsym, .dynstr, .gnu.version each
inline constexpr std::uint32_t kMaxHeaders = 4096;             // program or section headers

// Looks up `names` in the dynamic symbol table of the ELF64 little-endian
// object of `file_size` bytes that `read` reads.
SymbolLookup lookup_symbols(const ReadAt& read, std::uint64_t file_size, std::span<const std::string_view> names);

// The same over an open file descriptor (pread; the fd stays open).
SymbolLookup lookup_symbols_fd(int fd, std::span<const std::string_view> names);

}  // namespace vigil::cuda
