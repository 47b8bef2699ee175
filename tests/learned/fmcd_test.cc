#include "learned/fmcd.h"

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace grove::learned {
namespace {

std::vector<uint64_t> SortedUnique(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Slots are in range and never decrease with the key.
void ExpectMonotone(const std::vector<uint64_t>& keys, const SlotModel& m) {
  uint64_t prev = 0;
  for (uint64_t k : keys) {
    const uint64_t s = m.Slot(k);
    ASSERT_LT(s, m.slots);
    ASSERT_GE(s, prev) << "key " << k;
    prev = s;
  }
}

TEST(SlotsForTest, FollowsTheGapRule) {
  EXPECT_EQ(SlotsFor(0), 2u);
  EXPECT_EQ(SlotsFor(1), 6u);
  EXPECT_EQ(SlotsFor(99999), 599994u);
  EXPECT_EQ(SlotsFor(100000), 300000u);
  EXPECT_EQ(SlotsFor(1000000), 2000000u);
}

TEST(FmcdTest, SmallInputs) {
  std::vector<uint64_t> none;
  EXPECT_EQ(FitFmcd(none, 6).conflict_degree, 0u);
  std::vector<uint64_t> one = {42};
  FmcdFit f = FitFmcd(one, 6);
  EXPECT_EQ(f.conflict_degree, 1u);
  EXPECT_EQ(f.model.Slot(42), 3u);  // the middle, so neighbours spread both ways
  std::vector<uint64_t> two = {10, 1000};
  f = FitFmcd(two, 12);
  EXPECT_EQ(f.conflict_degree, 1u);
  EXPECT_EQ(f.model.Slot(10), 0u);
  EXPECT_EQ(f.model.Slot(1000), 11u);
  EXPECT_EQ(f.model.Slot(5), 0u);  // below the base
  EXPECT_EQ(f.model.Slot(std::numeric_limits<uint64_t>::max()), 11u);
}

TEST(FmcdTest, EvenlySpacedKeysGetOneSlotEach) {
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 1000; ++i) keys.push_back(5000 + 37 * i);
  const FmcdFit f = FitFmcd(keys, SlotsFor(keys.size()));
  EXPECT_FALSE(f.fallback);
  EXPECT_EQ(f.d, 1u);
  // One key per slot, except that the last key shares the top slot with k[n-1-D] (LIPP's line
  // puts k[n-1-D] in slot L - 1 and clamps what lies above it).
  EXPECT_EQ(f.conflict_degree, 2u);
  EXPECT_EQ(f.model.Slot(keys[0]), 0u);
  EXPECT_EQ(f.model.Slot(keys[1]), 1u);
  EXPECT_EQ(f.model.Slot(keys[998]), f.model.slots - 1);
  ExpectMonotone(keys, f.model);
}

TEST(FmcdTest, KeysNearTheTopOfTheRangeKeepTheirPrecision) {
  // Raw 64-bit keys would lose whole slots to double rounding; offsets from the base do not.
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 4096; ++i) keys.push_back((uint64_t{1} << 63) + 3 * i);
  const FmcdFit f = FitFmcd(keys, SlotsFor(keys.size()));
  EXPECT_EQ(f.d, 1u);
  EXPECT_EQ(f.conflict_degree, 2u);
  for (size_t i = 1; i + 2 < keys.size(); ++i) {
    ASSERT_LT(f.model.Slot(keys[i]), f.model.Slot(keys[i + 1])) << i;
  }
  ExpectMonotone(keys, f.model);
}

TEST(FmcdTest, RandomKeysHaveSmallConflicts) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> keys(20000);
  for (uint64_t& k : keys) k = rng();
  keys = SortedUnique(keys);
  const FmcdFit f = FitFmcd(keys, SlotsFor(keys.size()));
  ExpectMonotone(keys, f.model);
  EXPECT_EQ(f.conflict_degree, ConflictDegree(keys, f.model));
  EXPECT_FALSE(f.fallback);
  EXPECT_LE(f.conflict_degree, 2 * f.d);
  // Six slots per key over uniform keys: a handful per slot at worst.
  EXPECT_LE(f.d, 6u);
}

TEST(FmcdTest, OutliersFallBackToTheThirdsAndStayMonotone) {
  // Most keys in a tight cluster, a few far away on both sides: no D up to n/3 separates the
  // cluster at the spacing the outliers force.
  std::vector<uint64_t> keys = {1, 2, 3};
  for (uint64_t i = 0; i < 30; ++i) keys.push_back(1000000 + i);
  for (uint64_t i = 0; i < 3; ++i) keys.push_back((uint64_t{1} << 62) + i);
  const FmcdFit f = FitFmcd(keys, SlotsFor(keys.size()));
  ExpectMonotone(keys, f.model);
  EXPECT_EQ(f.conflict_degree, ConflictDegree(keys, f.model));
  EXPECT_LT(f.conflict_degree, keys.size());
}

TEST(FmcdTest, ConflictDegreeIsBoundedByTheChosenSpacing) {
  // Clusters of 5 equal-gap keys spread far apart: slots are as wide as the spacing FMCD
  // settled on, so a cluster shares at most a few slots and no slot takes more than a cluster.
  std::vector<uint64_t> keys;
  for (uint64_t c = 0; c < 200; ++c) {
    for (uint64_t j = 0; j < 5; ++j) keys.push_back(c * 1000000 + j);
  }
  const FmcdFit f = FitFmcd(keys, SlotsFor(keys.size()));
  ExpectMonotone(keys, f.model);
  EXPECT_FALSE(f.fallback);
  EXPECT_EQ(f.d, 5u);
  // A cluster per slot, except at the top, where the last cluster is clamped onto the one below.
  EXPECT_EQ(f.conflict_degree, 10u);
  for (size_t i = 0; i + 10 < keys.size(); ++i) {
    if (i % 5 == 4) {
      ASSERT_LT(f.model.Slot(keys[i]), f.model.Slot(keys[i + 1])) << i;
    }
  }
}

TEST(SlotModelTest, FirstKeyOfInvertsSlot) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> keys(500);
  for (uint64_t& k : keys) k = rng() >> 8;
  keys = SortedUnique(keys);
  const SlotModel m = FitFmcd(keys, SlotsFor(keys.size())).model;
  for (uint64_t s = 1; s < m.slots; s += 97) {
    const uint64_t k = m.FirstKeyOf(s);
    if (m.Slot(k) < s) continue;  // no key reaches s (the top end is clamped)
    EXPECT_GE(m.Slot(k), s);
    if (k > 0) {
      EXPECT_LT(m.Slot(k - 1), s);
    }
  }
  EXPECT_EQ(m.FirstKeyOf(0), 0u);
}

}  // namespace
}  // namespace grove::learned
