// lookup_symbols over the stand-in libcuda (the offsets it finds are where
// the functions' code is in the file) and over damaged or hostile files.
#include "plugins/cuda/elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plugins/cuda/calls.h"

namespace vigil::cuda {
namespace {

std::vector<std::uint8_t> slurp(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

SymbolLookup lookup_bytes(const std::vector<std::uint8_t>& b, std::span<const std::string_view> names) {
  ReadAt read = [&b](std::uint64_t off, std::size_t len, void* dst) {
    if (off > b.size() || len > b.size() - off) return false;
    std::memcpy(dst, b.data() + off, len);
    return true;
  };
  return lookup_symbols(read, b.size(), names);
}

std::vector<std::string_view> call_names() {
  std::vector<std::string_view> v;
  for (const CallInfo& c : all_calls()) v.push_back(c.symbol);
  return v;
}

TEST(CudaElfSymbols, FindsEveryEntryPointAtItsCode) {
  auto names = call_names();
  int fd = open(VIGIL_FAKE_CUDA, O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  SymbolLookup r = lookup_symbols_fd(fd, names);
  close(fd);
  ASSERT_EQ(r.error, "");
  std::vector<std::uint8_t> file = slurp(VIGIL_FAKE_CUDA);
  void* h = dlopen(VIGIL_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  std::set<std::uint64_t> offsets;
  for (std::size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(std::string(names[i]));
    ASSERT_EQ(r.status[i], SymbolStatus::kFound);
    offsets.insert(r.offset[i]);
    // The bytes at the offset in the file are the bytes the loaded function starts with.
    std::string name(names[i]);
    auto* code = static_cast<const std::uint8_t*>(dlsym(h, name.c_str()));
    ASSERT_NE(code, nullptr);
    ASSERT_LT(r.offset[i] + 16, file.size());
    EXPECT_EQ(std::memcmp(code, file.data() + r.offset[i], 16), 0);
  }
  EXPECT_EQ(offsets.size(), names.size()) << "two entry points share an address";
  dlclose(h);
}

TEST(CudaElfSymbols, ReportsAbsentAndNonFunctionSymbols) {
  std::vector<std::string_view> names{"cuLaunchKernel", "cuCtxCreate_v4", "cuLaunchCooperativeKernel", "dlopen",
                                      "fake_cuda_calls"};
  std::vector<std::uint8_t> file = slurp(VIGIL_FAKE_CUDA_MINIMAL);
  SymbolLookup r = lookup_bytes(file, names);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status[0], SymbolStatus::kFound);
  EXPECT_EQ(r.status[1], SymbolStatus::kAbsent);
  EXPECT_EQ(r.status[2], SymbolStatus::kNotFunction);  // exported as data
  EXPECT_EQ(r.status[3], SymbolStatus::kAbsent);
  EXPECT_EQ(r.status[4], SymbolStatus::kNotFunction);
}

TEST(CudaElfSymbols, RefusesWhatIsNotAnElfSharedObject) {
  auto names = call_names();
  EXPECT_NE(lookup_bytes({}, names).error, "");
  EXPECT_NE(lookup_bytes(std::vector<std::uint8_t>(4096, 0), names).error, "");
  std::vector<std::uint8_t> file = slurp(VIGIL_FAKE_CUDA);
  // Cut anywhere before the symbol table ends: an error or absent names, never a crash.
  for (std::size_t cut : {std::size_t{16}, std::size_t{63}, std::size_t{64}, std::size_t{1000}, file.size() / 2}) {
    std::vector<std::uint8_t> part(file.begin(), file.begin() + static_cast<long>(cut));
    SymbolLookup r = lookup_bytes(part, names);
    if (r.error.empty()) {
      EXPECT_EQ(r.status.size(), names.size());
    }
  }
  // Section headers pointing out of the file.
  std::vector<std::uint8_t> bad = file;
  auto* eh = reinterpret_cast<Elf64_Ehdr*>(bad.data());
  eh->e_shoff = ~0ull - 10;
  EXPECT_NE(lookup_bytes(bad, names).error, "");
  bad = file;
  eh = reinterpret_cast<Elf64_Ehdr*>(bad.data());
  eh->e_shnum = 0xffff;
  EXPECT_NE(lookup_bytes(bad, names).error, "");
  bad = file;
  eh = reinterpret_cast<Elf64_Ehdr*>(bad.data());
  eh->e_ident[EI_CLASS] = ELFCLASS32;
  EXPECT_NE(lookup_bytes(bad, names).error, "");
}

TEST(CudaElfSymbols, SurvivesRandomDamage) {
  auto names = call_names();
  const std::vector<std::uint8_t> file = slurp(VIGIL_FAKE_CUDA);
  ASSERT_GT(file.size(), 1024u);
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(file.data());
  // Damage the headers and tables, where the parser reads.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions{{0, sizeof(Elf64_Ehdr)},
                                                               {eh->e_phoff, eh->e_phnum * sizeof(Elf64_Phdr)},
                                                               {eh->e_shoff, eh->e_shnum * sizeof(Elf64_Shdr)}};
  std::mt19937_64 rng(13);
  int found_some = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::uint8_t> b = file;
    auto [off, len] = regions[rng() % regions.size()];
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) b[off + rng() % len] = static_cast<std::uint8_t>(rng());
    SymbolLookup r = lookup_bytes(b, names);
    if (!r.error.empty()) continue;
    ASSERT_EQ(r.status.size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i)
      if (r.status[i] == SymbolStatus::kFound) {
        EXPECT_LT(r.offset[i], b.size());
        ++found_some;
      }
  }
  EXPECT_GT(found_some, 0);
}

}  // namespace
}  // namespace vigil::cuda
