#include "page/extent_allocator.h"

#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(ExtentAllocatorTest, NeverHandsOutSuperblockPages) {
  ExtentAllocator a;
  for (int i = 0; i < 600; ++i) {
    auto p = a.Allocate(1);
    ASSERT_TRUE(p.ok());
    EXPECT_GE(*p, ExtentAllocator::kFirstDataPage);
  }
  EXPECT_EQ(a.CheckInvariants(), "");
}

TEST(ExtentAllocatorTest, MemoryCountsANodePerFreeBlockAndRecentlyFreedPage) {
  ExtentAllocator a;
  EXPECT_EQ(a.MemoryBytes(), 0u);
  std::vector<PageId> pages;
  for (int i = 0; i < 300; ++i) pages.push_back(*a.Allocate(1));
  const uint64_t full = a.MemoryBytes();
  EXPECT_GT(full, 0u);
  // Every other page freed: each is a block of its own, and each is recently freed.
  for (size_t i = 0; i < pages.size(); i += 2) a.Free(pages[i], 1);
  EXPECT_GE(a.MemoryBytes(), full + 150 * (48 + 64));
  a.NoteCheckpoint(1);
  a.NoteDurable(1);  // no durable checkpoint names them any more
  EXPECT_LT(a.MemoryBytes(), full + 150 * (48 + 64));
}

TEST(ExtentAllocatorTest, ExactSizesLeaveNoRoundingWaste) {
  ExtentAllocator a;
  auto p = a.Allocate(17);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(a.high_water_pages() - a.free_pages(), 2u + 17u);  // superblocks + the extent
  a.Free(*p, 17);
  EXPECT_EQ(a.free_pages(), a.high_water_pages() - 2);
  EXPECT_EQ(a.CheckInvariants(), "");
}

TEST(ExtentAllocatorTest, FullSizeExtentsAreAligned) {
  ExtentAllocator a;
  for (int i = 0; i < 4; ++i) {
    auto p = a.Allocate(256);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p % 256, 0u);
  }
  EXPECT_FALSE(a.Allocate(0).ok());
  EXPECT_FALSE(a.Allocate(257).ok());
}

// Random allocate/free: extents never overlap, and freeing everything merges back to whole chunks.
TEST(ExtentAllocatorTest, RandomWorkloadKeepsInvariantsAndCoalesces) {
  ExtentAllocator a;
  std::mt19937_64 rng(11);
  std::map<PageId, uint32_t> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint32_t n = 1 + static_cast<uint32_t>(rng() % (rng() % 4 == 0 ? 256 : 8));
      auto p = a.Allocate(n);
      ASSERT_TRUE(p.ok());
      auto next = live.lower_bound(*p);
      if (next != live.end()) {
        ASSERT_LE(*p + n, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *p);
      }
      live[*p] = n;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      a.Free(it->first, it->second);
      live.erase(it);
    }
  }
  ASSERT_EQ(a.CheckInvariants(), "");
  for (const auto& [p, n] : live) a.Free(p, n);
  EXPECT_EQ(a.free_pages(), a.high_water_pages() - 2);
  EXPECT_EQ(a.CheckInvariants(), "");
  // Fully coalesced: every chunk but the first is one 256-page block again.
  auto big = a.Allocate(256);
  ASSERT_TRUE(big.ok());
  EXPECT_LT(*big, a.high_water_pages());
}

TEST(ExtentAllocatorTest, SerializeRoundTrips) {
  ExtentAllocator a;
  std::vector<std::pair<PageId, uint32_t>> held;
  for (uint32_t n : {1u, 3u, 64u, 200u, 5u}) held.push_back({*a.Allocate(n), n});
  a.Free(held[1].first, held[1].second);
  std::string s;
  a.Serialize(&s);
  ExtentAllocator b;
  ASSERT_TRUE(b.Deserialize(s).ok());
  EXPECT_EQ(b.free_pages(), a.free_pages());
  EXPECT_EQ(b.high_water_pages(), a.high_water_pages());
  EXPECT_EQ(b.CheckInvariants(), "");
  EXPECT_FALSE(b.IsFree(held[0].first));
  EXPECT_TRUE(b.IsFree(held[1].first));
  EXPECT_TRUE(b.Deserialize(Slice(s.data(), s.size() - 1)).IsDataLoss());
}

}  // namespace
}  // namespace grove

namespace grove {
namespace {

// Pages freed since the newest durable checkpoint may be named by it: a page written straight to
// disk must not land on them until a checkpoint that leaves them out is durable.
TEST(ExtentAllocatorTest, UnreferencedExtentsAvoidPagesADurableCheckpointMayName) {
  ExtentAllocator a;
  const PageId x = *a.Allocate(4);
  const PageId y = *a.Allocate(4);
  a.Free(x, 4);
  EXPECT_EQ(a.recently_freed_pages(), 4u);
  EXPECT_EQ(*a.Allocate(4), x) << "pool pages may reuse them at once";
  a.Free(x, 4);
  const PageId z = *a.AllocateUnreferenced(4);
  EXPECT_NE(z, x);
  EXPECT_FALSE(z < x + 4 && x < z + 4);
  a.NoteCheckpoint(5);
  a.Free(y, 4);  // after checkpoint 5's snapshot: 5 still names y
  a.NoteDurable(5);
  EXPECT_EQ(a.recently_freed_pages(), 4u);
  const PageId w = *a.AllocateUnreferenced(4);
  EXPECT_EQ(w, x) << "free in durable checkpoint 5";
  const PageId v = *a.AllocateUnreferenced(4);
  EXPECT_FALSE(v < y + 4 && y < v + 4);
  a.NoteCheckpoint(6);
  a.NoteDurable(6);
  EXPECT_EQ(a.recently_freed_pages(), 0u);
  EXPECT_EQ(a.CheckInvariants(), "");
}

TEST(ExtentAllocatorTest, UnreferencedExtentsTakeANewChunkWhenAllFreeSpaceIsRecent) {
  ExtentAllocator a;
  for (PageId p = ExtentAllocator::kFirstDataPage; p < ExtentAllocator::kChunkPages; ++p) {
    ASSERT_TRUE(a.Allocate(1).ok());  // chunk 0, whole
  }
  std::vector<PageId> big;
  for (int i = 0; i < 100; ++i) big.push_back(*a.Allocate(256));
  for (PageId p : big) a.Free(p, 256);  // more recently freed blocks than a search looks at
  const uint64_t before = a.high_water_pages();
  const PageId fresh = *a.AllocateUnreferenced(31);
  EXPECT_GE(fresh, before);
  EXPECT_EQ(a.high_water_pages(), before + ExtentAllocator::kChunkPages);
  EXPECT_EQ(a.CheckInvariants(), "");
}

}  // namespace
}  // namespace grove
