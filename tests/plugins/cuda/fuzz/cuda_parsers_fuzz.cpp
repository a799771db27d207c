// libFuzzer target for what the CUDA plugin reads from others: an ELF file
// (a container's libcuda), /proc/PID/maps text (paths named by images), and
// event data read back from a capture. Any bytes must give a result or a clean
// refusal: no crash, no read outside the input, no unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/cuda/calls.h"
#include "plugins/cuda/elf_symbols.h"
#include "plugins/cuda/proc_maps.h"
#include "plugins/cuda/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vigil::cuda;
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (const CallInfo& c : all_calls()) v.push_back(c.symbol);
    return v;
  }();
  ReadAt read = [data, size](std::uint64_t off, std::size_t len, void* dst) {
    if (off > size || len > size - off) return false;
    if (len) std::memcpy(dst, data + off, len);
    return true;
  };
  SymbolLookup r = lookup_symbols(read, size, names);
  if (r.error.empty()) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (r.status[i] == SymbolStatus::kFound && r.offset[i] >= size) __builtin_trap();
  }

  std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> libnames{"libcuda.so"};
  for (const MapsEntry& m : find_libraries(text, libnames, 8)) {
    if (!library_name_matches(m.path, libnames) || !m.exec) __builtin_trap();
  }
  std::string shown = printable(text);
  if (shown.size() > 4 * std::min(size, kWireStringMax)) __builtin_trap();

  if (auto rec = decode({data, size})) {
    std::string again = encode(*rec);
    auto back = decode({reinterpret_cast<const std::uint8_t*>(again.data()), again.size()});
    if (!back || back->library != rec->library || back->size != rec->size) __builtin_trap();
  }
  return 0;
}
