// The fuzz target's entry (fuzz/cuda_parsers_fuzz.cpp) over its seed corpus
// and every prefix of each seed, in the ordinary test run (the libFuzzer run
// itself needs the fuzz build).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

TEST(CudaFuzzCorpus, EverySeedAndPrefix) {
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(VIGIL_CUDA_FUZZ_CORPUS)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(f), {}};
    ++seeds;
    // Prefixes: every length up to 4 KiB, then every 97th.
    for (std::size_t n = 0; n <= b.size(); n += n < 4096 ? 1 : 97) EXPECT_EQ(LLVMFuzzerTestOneInput(b.data(), n), 0);
    EXPECT_EQ(LLVMFuzzerTestOneInput(b.data(), b.size()), 0);
  }
  EXPECT_GE(seeds, 3);
}

}  // namespace
