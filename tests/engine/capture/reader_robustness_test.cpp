// The reader on hostile input: the fuzz target's entry point driven with
// deterministic mutations of the committed fixture (bit flips, byte runs,
// truncations, spliced lengths). Runs everywhere (no libFuzzer needed); the
// libFuzzer build of the same entry point explores further (tests/fuzz/).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string fixture(const char* path = "tests/engine/capture/fixtures/v1_sample.vcap") {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void run(const std::string& s) { LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

void mutate_and_run(const std::string& seed, int rounds, std::uint32_t rng_seed) {
  std::mt19937 rng(rng_seed);
  for (int i = 0; i < rounds; ++i) {
    std::string s = seed;
    switch (i % 5) {
      case 0:  // flip a few bits
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
          s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        }
        break;
      case 1:  // truncate
        s.resize(rng() % s.size());
        break;
      case 2: {  // overwrite 4 bytes with an extreme length
        static const std::uint32_t kLens[] = {0, 1, 0x7fffffff, 0xffffffff, 0x01000001, 64u << 20};
        std::uint32_t v = kLens[rng() % 6];
        std::size_t at = rng() % (s.size() - 4);
        for (int b = 0; b < 4; ++b) s[at + b] = static_cast<char>(v >> (8 * b));
        break;
      }
      case 3: {  // a run of random bytes
        std::size_t at = rng() % s.size();
        for (std::size_t b = at; b < std::min(s.size(), at + 32); ++b) s[b] = static_cast<char>(rng());
        break;
      }
      case 4:  // random bytes only, as records payload (framed mode of the target)
        s.assign(rng() % 512, '\0');
        for (auto& c : s) c = static_cast<char>(rng() % 7 == 0 ? rng() : rng() % 6);
        break;
    }
    run(s);
  }
}

TEST(CaptureReaderRobustness, SurvivesTwentyThousandMutationsOfARealCapture) {
  const std::string seed = fixture();
  ASSERT_GT(seed.size(), 100u);
  mutate_and_run(seed, 20000, 1234);
  SUCCEED();  // reaching here without a crash/hang (ASan/UBSan builds check more) is the test
}

// The NVIDIA inventory record (GPU list, bounded strings) under the same abuse:
// the fuzz seed that holds it, as a file and as bare records.
TEST(CaptureReaderRobustness, SurvivesMutationsOfTheNvidiaInventory) {
  const std::string file = fixture("tests/fuzz/capture_reader_corpus/nvidia_inventory.vcap");
  ASSERT_GT(file.size(), 100u);
  mutate_and_run(file, 10000, 4321);
  const std::string records = fixture("tests/fuzz/capture_reader_corpus/nvidia_inventory.records");
  ASSERT_GT(records.size(), 20u);
  mutate_and_run(records, 10000, 8765);
  SUCCEED();
}

}  // namespace
