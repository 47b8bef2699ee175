#include "bench/distributions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <gtest/gtest.h>

namespace grove::bench {
namespace {

std::vector<uint64_t> Iota(uint64_t n) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 1);
  return v;
}

TEST(ZipfianTest, RanksFollowTheLaw) {
  ZetaCache zeta;
  ZipfianGenerator z(1000, 0.99, &zeta);
  Rng rng(1);
  std::vector<uint64_t> counts(1000);
  constexpr int kDraws = 400000;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t r = z.Next(rng);
    ASSERT_LT(r, 1000u);
    ++counts[r];
  }
  // P(rank 0) = 1/zeta(1000), and rank 0 is 2^0.99 times as popular as rank 1.
  const double p0 = 1.0 / ZetaCache::Compute(0, 1000, 0.99, 0);
  EXPECT_NEAR(counts[0] / double(kDraws), p0, 0.01);
  EXPECT_NEAR(double(counts[0]) / counts[1], std::pow(2.0, 0.99), 0.15);
  EXPECT_GT(counts[1], counts[10]);
  EXPECT_GT(counts[10], counts[500]);
}

TEST(ZipfianTest, GrowMatchesFreshZeta) {
  ZetaCache zeta;
  ZipfianGenerator z(1000, 0.9, &zeta);
  z.Grow(5000);
  EXPECT_EQ(z.items(), 5000u);
  EXPECT_NEAR(zeta.Get(5000, 0.9), ZetaCache::Compute(0, 5000, 0.9, 0), 1e-9);
}

TEST(KeyChooserTest, UniformCoversExistingKeysOnly) {
  KeySpace space(Iota(2000), 1000);
  ZetaCache zeta;
  DistributionSpec d;
  auto c = KeyChooser::New(d, &space, &zeta, 1);
  Rng rng(2);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t k = c->Next(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, 1000u);
  }
}

TEST(KeyChooserTest, LatestFavoursNewKeys) {
  KeySpace space(Iota(2000), 1000);
  uint64_t index = 0;
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(space.ClaimInsert(&index));
    space.AckInsert();
  }
  ZetaCache zeta;
  DistributionSpec d;
  d.kind = DistributionSpec::Kind::kLatest;
  auto c = KeyChooser::New(d, &space, &zeta, 1);
  Rng rng(3);
  int newest = 0;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t k = c->Next(rng);
    ASSERT_LE(k, 1500u);
    if (k > 1490) ++newest;
  }
  EXPECT_GT(newest, 3000);  // the ten newest keys take a large share
}

TEST(KeyChooserTest, HotspotHitsItsRange) {
  std::vector<uint64_t> keys = Iota(10000);
  std::reverse(keys.begin(), keys.end());  // insertion order must not matter
  KeySpace space(keys, 10000);
  space.BuildSorted();
  ZetaCache zeta;
  DistributionSpec d;
  d.kind = DistributionSpec::Kind::kHotspot;
  d.hot_data_fraction = 0.01;
  d.hot_op_fraction = 0.9;
  d.hot_start = 0.5;
  auto c = KeyChooser::New(d, &space, &zeta, 1);
  Rng rng(4);
  int hot = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t k = c->Next(rng);
    if (k > 5000 && k <= 5100) ++hot;
  }
  EXPECT_NEAR(hot / 20000.0, 0.9, 0.01);  // cold requests skip the hot range
}

TEST(KeyChooserTest, UnscrambledZipfianIsAnchoredAtTheSmallestKeys) {
  std::vector<uint64_t> keys = Iota(10000);
  std::reverse(keys.begin(), keys.end());
  KeySpace space(keys, 10000);
  space.BuildSorted();
  ZetaCache zeta;
  DistributionSpec d;
  d.kind = DistributionSpec::Kind::kZipfian;
  d.scrambled = false;
  auto c = KeyChooser::New(d, &space, &zeta, 1);
  Rng rng(5);
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 10000; ++i) ++counts[c->Next(rng)];
  EXPECT_GT(counts[1], counts[2]);
  EXPECT_GT(counts[2], counts[100]);
}

TEST(KeySpaceTest, InsertsRunOutCleanly) {
  KeySpace space(Iota(10), 8);
  uint64_t i = 0;
  EXPECT_TRUE(space.ClaimInsert(&i));
  EXPECT_EQ(i, 8u);
  EXPECT_TRUE(space.ClaimInsert(&i));
  EXPECT_EQ(i, 9u);
  EXPECT_FALSE(space.ClaimInsert(&i));
  EXPECT_FALSE(space.ClaimInsert(&i));
}

TEST(ScanLengthTest, StaysInRange) {
  ZetaCache zeta;
  Rng rng(6);
  for (auto kind : {ScanSpec::Kind::kUniform, ScanSpec::Kind::kZipfian}) {
    ScanSpec s;
    s.kind = kind;
    s.min = 5;
    s.max = 50;
    ScanLengthChooser c(s, &zeta);
    uint32_t lo = 1000;
    uint32_t hi = 0;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t n = c.Next(rng);
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    EXPECT_EQ(lo, 5u);
    EXPECT_LE(hi, 50u);
    EXPECT_GT(hi, 40u);
  }
}

TEST(OpChooserTest, FollowsTheMix) {
  OpChooser c({0.5, 0, 0.25, 0.25, 0});
  Rng rng(8);
  std::array<int, kNumOpTypes> n{};
  for (int i = 0; i < 40000; ++i) ++n[static_cast<int>(c.Next(rng))];
  EXPECT_NEAR(n[0] / 40000.0, 0.5, 0.02);
  EXPECT_EQ(n[1], 0);
  EXPECT_NEAR(n[2] / 40000.0, 0.25, 0.02);
  EXPECT_EQ(n[4], 0);
}

}  // namespace
}  // namespace grove::bench
