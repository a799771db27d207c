// Runs a fuzz target's body (LLVMFuzzerTestOneInput) in every build: over its
// checked-in seed corpus, over seeded byte mutations of each seed, and over
// hostile shapes (deep nesting, long inputs). The libFuzzer runs (label fuzz)
// explore further.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run(const std::string& s) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::vector<std::string> seeds() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(VIGIL_FUZZ_CORPUS)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    v.push_back(ss.str());
  }
  return v;
}

TEST(FuzzSeeds, CorpusRuns) {
  auto s = seeds();
  ASSERT_FALSE(s.empty()) << VIGIL_FUZZ_CORPUS;
  for (const auto& x : s) EXPECT_EQ(run(x), 0);
}

TEST(FuzzSeeds, MutationsRun) {
  std::mt19937 rng(1234);
  static const char kBytes[] = "()[]\"',=<>!%:-{} \n\tanotinexists.*?\\";
  for (const auto& seed : seeds()) {
    for (int i = 0; i < 100; ++i) {
      std::string m = seed;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits && !m.empty(); ++k) {
        std::size_t at = rng() % m.size();
        switch (rng() % 3) {
          case 0: m[at] = kBytes[rng() % (sizeof kBytes - 1)]; break;
          case 1: m.erase(at, 1 + rng() % 8); break;
          default: m.insert(at, 1, static_cast<char>(rng() % 256)); break;
        }
      }
      EXPECT_EQ(run(m), 0);
    }
  }
}

TEST(FuzzSeeds, HostileShapes) {
  EXPECT_EQ(run(std::string(20000, '(')), 0);
  EXPECT_EQ(run(std::string(20000, '[')), 0);
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_EQ(run(nots + "a"), 0);
  EXPECT_EQ(run(std::string(60000, 'a')), 0);
  EXPECT_EQ(run(std::string("\0\0\xff\xfe", 4)), 0);
}

}  // namespace
