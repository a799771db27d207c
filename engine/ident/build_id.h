// The GNU build-id of an ELF file (the NT_GNU_BUILD_ID note that linkers
// write, 20 bytes for a SHA-1 build-id), read through a bounded reader.
//
// The file is hostile: every offset and size from it is checked against the
// file size and against fixed caps (at most kMaxNotes program headers looked
// at, at most kMaxNoteBytes of note data read), 32- and 64-bit ELF in either
// byte order are understood, anything else gives "".
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace vigil::ident {

inline constexpr std::size_t kMaxProgramHeaders = 64;
inline constexpr std::size_t kMaxNoteBytes = 4096;  // per PT_NOTE segment
inline constexpr std::size_t kMaxBuildIdBytes = 64;

// Reads exactly n bytes at offset off into buf; false when it cannot.
using ReadAt = std::function<bool(std::uint64_t off, void* buf, std::size_t n)>;

// The build-id as lower-case hex, "" when the file is not an ELF or has none.
std::string read_build_id(const ReadAt& read, std::uint64_t file_size);

// The same over an open file descriptor (pread).
std::string read_build_id_fd(int fd, std::uint64_t file_size);

}  // namespace vigil::ident
