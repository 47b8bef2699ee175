#include "bench/gapped_keys.h"

#include <algorithm>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "bench/key_space.h"

namespace grove::bench {
namespace {

TEST(PermutationTest, IsABijectionOfZeroToN) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 16ull, 1000ull, 4097ull, 70001ull}) {
    const Permutation p(n, 7);
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t x = p(i);
      ASSERT_LT(x, n) << "n=" << n;
      ASSERT_FALSE(seen[x]) << "n=" << n << " i=" << i;
      seen[x] = true;
    }
  }
}

TEST(PermutationTest, DependsOnTheSeedAndMovesMostValues) {
  const Permutation a(10000, 1);
  const Permutation b(10000, 2);
  uint64_t same = 0;
  uint64_t fixed = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
  }
  EXPECT_LT(same, 100u);
  EXPECT_LT(fixed, 100u);
}

// Every key of the set, its loaded keys sorted, and checks both against the class's answers.
void CheckSet(uint64_t loaded, uint64_t capacity, bool sorted_order) {
  SCOPED_TRACE(testing::Message() << loaded << "/" << capacity << (sorted_order ? " sorted" : ""));
  const GappedKeys g(loaded, capacity, sorted_order, 99);
  ASSERT_EQ(g.capacity(), capacity);
  std::vector<uint64_t> all(capacity);
  for (uint64_t i = 0; i < capacity; ++i) all[i] = g.key(i);
  std::vector<uint64_t> load(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(loaded));
  std::sort(load.begin(), load.end());
  for (uint64_t r = 0; r < loaded; ++r) ASSERT_EQ(g.sorted_loaded(r), load[r]) << r;
  std::vector<uint64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicates";
  if (sorted_order) {
    EXPECT_EQ(all, sorted) << "sorted order: loads and inserts are appends";
  } else if (capacity > loaded && loaded > 1) {
    // Inserts land among the loaded keys, not after them.
    const uint64_t first_insert = *std::min_element(all.begin() + loaded, all.end());
    EXPECT_LT(first_insert, load.back());
    EXPECT_NE(std::vector<uint64_t>(all.begin(), all.begin() + loaded), load)
        << "random insertion order expected";
  }
}

TEST(GappedKeysTest, UniqueKeysInEveryProportionOfLoadsAndInserts) {
  CheckSet(1000, 1000, false);
  CheckSet(1000, 1600, false);
  CheckSet(10, 100, false);  // more inserts than loaded keys
  CheckSet(0, 50, false);
  CheckSet(1, 1, false);
  CheckSet(1000, 1200, true);
  CheckSet(0, 7, true);
}

TEST(GappedKeysTest, KeysSpreadOverTheWholeRange) {
  const GappedKeys g(100000, 110000, false, 3);
  EXPECT_LT(g.sorted_loaded(0), uint64_t{1} << 50);
  EXPECT_GT(g.sorted_loaded(99999), ~uint64_t{0} - (uint64_t{1} << 50));
}

TEST(GappedKeysTest, ABillionKeysStayOrderedWithoutOverflow) {
  const uint64_t n = 1'000'000'000;
  const GappedKeys g(n, n + n / 10, false, 5);
  uint64_t prev = 0;
  for (uint64_t r = 0; r < n; r += 9'999'991) {
    const uint64_t k = g.sorted_loaded(r);
    if (r > 0) {
      EXPECT_GT(k, prev);
    }
    prev = k;
  }
  EXPECT_GT(g.sorted_loaded(n - 1), prev);
  const uint64_t last_insert = g.key(n + n / 10 - 1);  // computable at the far end
  EXPECT_NE(last_insert, g.sorted_loaded(n - 1));
}

TEST(GappedKeysTest, KeySpaceAnswersSortedKeysWithoutBuildingThem) {
  KeySpace space(GappedKeys(500, 600, false, 11), 500);
  EXPECT_TRUE(space.computed());
  EXPECT_EQ(space.capacity(), 600u);
  std::vector<uint64_t> expect;
  for (uint64_t i = 0; i < 500; ++i) expect.push_back(space.key(i));
  std::sort(expect.begin(), expect.end());
  for (uint64_t r = 0; r < 500; ++r) ASSERT_EQ(space.sorted_key(r), expect[r]);
  space.BuildSorted();  // what a trace replay asks for
  EXPECT_EQ(space.sorted_loaded(), expect);
  uint64_t index = 0;
  ASSERT_TRUE(space.ClaimInsert(&index));
  EXPECT_EQ(index, 500u);
}

}  // namespace
}  // namespace grove::bench
