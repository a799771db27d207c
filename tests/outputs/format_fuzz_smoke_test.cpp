// Runs the outputs fuzz target (tests/fuzz/outputs_format_fuzz.cpp) without
// libFuzzer: its seed corpus plus 20000 seeded random inputs biased towards
// the characters that break formats. A failure aborts with the output shown.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

TEST(OutputsFormatFuzz, SeedCorpus) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/fuzz/outputs_format_corpus")) {
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
    ++n;
  }
  EXPECT_GT(n, 0);
}

TEST(OutputsFormatFuzz, RandomHostileValues) {
  std::mt19937 rng(20240601);
  const std::string nasty =
      std::string("\n\r\0\"\\|=]\x1b\x7f\t[{}:,", 16) + "\xC2\x9B\xE2\x80\xA8\xFF\xC0\xED\xA0\x80\xF4\x90";
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<std::uint8_t> in;
    in.push_back(static_cast<std::uint8_t>(rng()));
    for (int f = 0; f < 8; ++f) {
      const std::size_t len = rng() % 24;
      in.push_back(static_cast<std::uint8_t>(len));
      in.push_back(0);
      for (std::size_t i = 0; i < len; ++i) {
        const unsigned r = rng() % 4;
        in.push_back(r == 0   ? static_cast<std::uint8_t>(rng())
                     : r == 1 ? static_cast<std::uint8_t>(nasty[rng() % nasty.size()])
                              : static_cast<std::uint8_t>('a' + rng() % 26));
      }
    }
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
}

}  // namespace
