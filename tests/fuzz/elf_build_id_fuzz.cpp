// libFuzzer target for the ELF build-id reader (engine/ident/build_id.h): any
// byte string, read as a program file, must give a build-id or "", never a
// read outside the bytes given, a crash or a hang. The reader callback
// enforces the bounds (it fails a read past the end, as pread would come
// short), so an out-of-bounds request shows up as an empty answer, and ASAN
// catches any read the parser makes of its own buffers past what it filled.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/ident/build_id.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto read = [&](std::uint64_t off, void* buf, std::size_t n) {
    if (off > size || n > size - off) return false;
    std::memcpy(buf, data + off, n);
    return true;
  };
  std::string id = vigil::ident::read_build_id(read, size);
  // A build-id is hex of at most kMaxBuildIdBytes bytes.
  if (id.size() > 2 * vigil::ident::kMaxBuildIdBytes || id.size() % 2 != 0) __builtin_trap();
  // The same bytes claimed to be a larger file: reads past them must fail cleanly.
  (void)vigil::ident::read_build_id(read, static_cast<std::uint64_t>(size) * 2 + 4096);
  return 0;
}
