// MemorySplit: memory moves towards the side with more ghost hits once there is enough evidence,
// in steps, within the pool's floor and ceiling; a fixed split never moves.

#include "index/treeline/memory_split.h"

#include <gtest/gtest.h>

namespace grove::treeline {
namespace {

constexpr uint64_t kMiB = 1 << 20;

MemorySplit::Options Opts() {
  MemorySplit::Options o;
  o.total_bytes = 320 * kMiB;
  o.min_pool_bytes = 16 * kMiB;
  o.max_pool_bytes = 288 * kMiB;
  o.step_bytes = 10 * kMiB;
  o.evidence = 100;
  o.margin = 1.25;
  return o;
}

TEST(MemorySplitTest, NothingMovesBeforeTheEvidenceIsIn) {
  MemorySplit s(Opts(), 16 * kMiB);
  EXPECT_EQ(s.Decide(60, 0), 16 * kMiB);
  EXPECT_EQ(s.Decide(30, 0), 16 * kMiB);
  EXPECT_EQ(s.moves_to_pool(), 0u);
  // The counts accumulate: 100 in all now.
  EXPECT_GT(s.Decide(10, 0), 16 * kMiB);
  EXPECT_EQ(s.moves_to_pool(), 1u);
}

TEST(MemorySplitTest, TheSideWithMoreGhostHitsGetsAStep) {
  MemorySplit s(Opts(), 100 * kMiB);
  EXPECT_EQ(s.Decide(60, 40), 110 * kMiB);  // 1.5x: one step to the pool
  EXPECT_EQ(s.cache_bytes(), 210 * kMiB);
  EXPECT_EQ(s.Decide(40, 60), 100 * kMiB);  // and back
  EXPECT_EQ(s.Decide(90, 10), 120 * kMiB);  // 9x: two steps
  EXPECT_EQ(s.Decide(5, 95), 100 * kMiB);
  EXPECT_EQ(s.moves_to_pool(), 2u);
  EXPECT_EQ(s.moves_to_cache(), 2u);
}

TEST(MemorySplitTest, CloseCountsMoveNothing) {
  MemorySplit s(Opts(), 100 * kMiB);
  EXPECT_EQ(s.Decide(55, 50), 100 * kMiB);
  EXPECT_EQ(s.Decide(50, 55), 100 * kMiB);
  EXPECT_EQ(s.moves_to_pool() + s.moves_to_cache(), 0u);
}

TEST(MemorySplitTest, ThePoolStaysWithinItsFloorAndCeiling) {
  MemorySplit s(Opts(), 100 * kMiB);
  for (int i = 0; i < 50; ++i) s.Decide(100, 0);
  EXPECT_EQ(s.pool_bytes(), 288 * kMiB);
  EXPECT_EQ(s.cache_bytes(), 32 * kMiB);
  for (int i = 0; i < 50; ++i) s.Decide(0, 100);
  EXPECT_EQ(s.pool_bytes(), 16 * kMiB);
  // Moves that changed nothing at a bound are not counted.
  EXPECT_LT(s.moves_to_pool(), 50u);
  EXPECT_LT(s.moves_to_cache(), 50u);
}

// The caller's ceiling (what the record cache can give up clean) stops growth, but never takes
// memory from the pool.
TEST(MemorySplitTest, ThePoolGrowsNoFurtherThanTheCeiling) {
  MemorySplit s(Opts(), 100 * kMiB);
  EXPECT_EQ(s.Decide(100, 0, 105 * kMiB), 105 * kMiB);
  EXPECT_EQ(s.Decide(100, 0, 105 * kMiB), 105 * kMiB);
  EXPECT_EQ(s.Decide(100, 0, 50 * kMiB), 105 * kMiB) << "a lower ceiling does not shrink it";
  EXPECT_EQ(s.moves_to_pool(), 1u);
  EXPECT_EQ(s.Decide(0, 100, 50 * kMiB), 85 * kMiB) << "the record cache's own evidence does";
}

TEST(MemorySplitTest, AFixedSplitNeverMoves) {
  MemorySplit::Options o = Opts();
  o.max_pool_bytes = o.min_pool_bytes;
  MemorySplit s(o, 16 * kMiB);
  EXPECT_FALSE(s.adaptive());
  EXPECT_EQ(s.Decide(1000, 0), 16 * kMiB);
}

}  // namespace
}  // namespace grove::treeline
