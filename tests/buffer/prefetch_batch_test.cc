// SidePool on its own: buffers handed out until none is left, given back, aligned for O_DIRECT, and
// its counters. PrefetchBatch's confirmation rules are tested through the pool that admits its
// pages (buffer_pool_test.cc: ConfirmedPrefetches..., UnconfirmedPrefetches...,
// OutdatedPrefetched..., ResidentPagesAreNotPrefetched, IssueSaysHowFarItGot...).

#include "buffer/prefetch_batch.h"

#include <cstdint>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace grove::buffer_internal {
namespace {

TEST(SidePoolTest, HandsOutEachBufferOnceUntilNoneIsLeft) {
  SidePool side(8);
  std::set<char*> seen;
  std::vector<char*> taken;
  for (int i = 0; i < 8; ++i) {
    char* buf = side.Take();
    ASSERT_NE(buf, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf) % kIoAlignment, 0u) << "aligned for O_DIRECT";
    EXPECT_TRUE(seen.insert(buf).second) << "handed out twice";
    taken.push_back(buf);
  }
  EXPECT_EQ(side.Take(), nullptr);
  side.Give({taken[3], taken[5]});
  char* a = side.Take();
  char* b = side.Take();
  EXPECT_EQ(std::set<char*>({a, b}), std::set<char*>({taken[3], taken[5]}));
  EXPECT_EQ(side.Take(), nullptr);
}

TEST(SidePoolTest, CountsWhatBecameOfItsReads) {
  SidePool side(1);
  side.CountIssued(5);
  side.CountUsed();
  side.CountUsed();
  side.CountWasted(3);
  EXPECT_EQ(side.issued(), 5u);
  EXPECT_EQ(side.used(), 2u);
  EXPECT_EQ(side.wasted(), 3u);
}

TEST(SidePoolTest, AnEmptySidePoolHasNothingToGive) {
  SidePool side(0);
  EXPECT_EQ(side.Take(), nullptr);
}

}  // namespace
}  // namespace grove::buffer_internal
