// The build-id reader on hostile input: the fuzz target's entry point driven
// with deterministic mutations (bit flips, truncations, byte runs, spliced
// lengths) of the seed corpus. Runs everywhere; the libFuzzer build of the
// same entry point explores further (tests/fuzz/elf_build_id_fuzz.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "engine/ident/build_id.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string seed(const char* name) {
  std::ifstream in(std::string("tests/fuzz/elf_build_id_corpus/") + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string build_id_of(const std::string& b) {
  return vigil::ident::read_build_id(
      [&](std::uint64_t off, void* buf, std::size_t n) {
        if (off > b.size() || n > b.size() - off) return false;
        std::memcpy(buf, b.data() + off, n);
        return true;
      },
      b.size());
}

TEST(BuildIdRobustness, SeedsReadInBothClassesAndByteOrders) {
  EXPECT_EQ(build_id_of(seed("elf64_le.bin")), "000102030405060708090a0b0c0d0e0f10111213");
  EXPECT_EQ(build_id_of(seed("elf32_be.bin")), "0001020304050607");
}

TEST(BuildIdRobustness, MutatedSeedsNeverCrash) {
  std::mt19937 rng(15);
  for (const char* name : {"elf64_le.bin", "elf32_be.bin"}) {
    const std::string base = seed(name);
    ASSERT_FALSE(base.empty()) << name;
    for (int i = 0; i < 20000; ++i) {
      std::string s = base;
      switch (i % 4) {
        case 0:
          for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
            s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
          break;
        case 1: s.resize(rng() % s.size()); break;
        case 2: {  // a run of 0xff (huge sizes and offsets)
          std::size_t at = rng() % s.size();
          for (std::size_t k = at; k < s.size() && k < at + 1 + rng() % 8; ++k) s[k] = '\xff';
          break;
        }
        default: {  // a plausible small number somewhere
          std::size_t at = rng() % (s.size() - 4);
          std::uint32_t v = rng() % 256;
          std::memcpy(&s[at], &v, 4);
        }
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    }
  }
}

}  // namespace
