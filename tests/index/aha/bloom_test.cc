// The page-blocked Bloom filter of AHA-tree's runs: no false negatives, a false-positive rate
// near the design point, and a hash that stays the same across builds (it is on disk).
#include "index/aha/bloom.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace grove::aha {
namespace {

TEST(BloomTest, NoFalseNegativesAndAboutOnePercentFalsePositives) {
  const uint64_t n = 20000;
  const uint32_t blocks = BloomBlocks(n, 10);
  ASSERT_EQ(blocks, 7u);  // 200,000 bits over 32,576-bit pages
  const int probes = BloomProbes(10);
  EXPECT_EQ(probes, 7);
  std::vector<std::string> filter(blocks, std::string(kBloomBlockBytes, '\0'));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t h = Hash64("key" + std::to_string(i));
    BloomAdd(filter[BloomBlockOf(h, blocks)].data(), h, probes);
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t h = Hash64("key" + std::to_string(i));
    ASSERT_TRUE(BloomMayContain(filter[BloomBlockOf(h, blocks)].data(), h, probes)) << i;
  }
  int positives = 0;
  const int trials = 100000;
  for (int i = 0; i < trials; ++i) {
    const uint64_t h = Hash64("absent" + std::to_string(i));
    positives += BloomMayContain(filter[BloomBlockOf(h, blocks)].data(), h, probes);
  }
  EXPECT_LT(positives, trials * 3 / 100);
  EXPECT_GT(positives, 0);
}

TEST(BloomTest, HashIsPartOfTheFormat) {
  EXPECT_EQ(Hash64(""), Hash64(std::string()));
  EXPECT_NE(Hash64("a"), Hash64("b"));
  EXPECT_NE(Hash64(std::string("a\0", 2)), Hash64("a"));
  EXPECT_NE(Hash64("12345678a"), Hash64("12345678b"));
  // Pinned: changing Hash64 would make every written filter wrong.
  EXPECT_EQ(Hash64("grove"), 11861086620041034483ull);
  EXPECT_EQ(Hash64(""), 5400148214344683514ull);
  EXPECT_EQ(BloomBlocks(0, 10), 0u);
  EXPECT_EQ(BloomBlocks(100, 0), 0u);
}

}  // namespace
}  // namespace grove::aha
