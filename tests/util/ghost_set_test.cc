// GhostSet: a hash is reported for as many Adds as its window, then no longer; unknown hashes and
// an empty set report nothing.

#include "util/ghost_set.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace grove {
namespace {

// Distinct slots in a 64-slot set (low bits 0..63) and distinct tags (high bits).
uint64_t H(uint64_t i) { return (i + 1) << 40 | i; }

TEST(GhostSetTest, AHashIsAGhostForItsWindowOfAdds) {
  GhostSet g(64);
  EXPECT_EQ(g.slots(), 64u);
  for (uint64_t i = 0; i < 10; ++i) g.Add(H(i));
  // H(9) is the newest (0 Adds since), H(0) the oldest (9 since).
  EXPECT_TRUE(g.Contains(H(9), 1));
  EXPECT_FALSE(g.Contains(H(8), 1));
  EXPECT_TRUE(g.Contains(H(8), 2));
  EXPECT_TRUE(g.Contains(H(0), 10));
  EXPECT_FALSE(g.Contains(H(0), 9));
  EXPECT_FALSE(g.Contains(H(20), 1000)) << "never added";
  EXPECT_FALSE(g.Contains(H(9), 0)) << "an empty window holds nothing";
}

TEST(GhostSetTest, ALaterAddToTheSameSlotReplacesTheEarlierOne) {
  GhostSet g(64);
  const uint64_t a = H(3);
  const uint64_t b = (uint64_t{77} << 40) | 3;  // same slot, another tag
  g.Add(a);
  g.Add(b);
  EXPECT_FALSE(g.Contains(a, 100));
  EXPECT_TRUE(g.Contains(b, 100));
}

TEST(GhostSetTest, AnEmptySetRemembersNothing) {
  GhostSet g(0);
  EXPECT_EQ(g.slots(), 0u);
  g.Add(H(1));
  EXPECT_FALSE(g.Contains(H(1), 100));
}

TEST(GhostSetTest, SlotsRoundUpToAPowerOfTwo) { EXPECT_EQ(GhostSet(100).slots(), 128u); }

}  // namespace
}  // namespace grove
