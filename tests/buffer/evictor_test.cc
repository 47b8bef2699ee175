// Evictor on frames without IO: free frames first up to the limit, victims after, a soft limit,
// the census when nothing can go, a limit lowered and raised, and ghost hits.

#include "buffer/evictor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "buffer/clock_replacer.h"
#include "buffer/page_table.h"

namespace grove::buffer_internal {
namespace {

class EvictorTest : public ::testing::Test {
 protected:
  void Make(uint32_t frames, uint64_t limit, uint32_t ghost_pages = 0) {
    evictor_.reset();
    table_.reset();
    frames_ = std::make_unique<FrameArray>(frames);
    table_ = std::make_unique<PageTable>(frames_.get());
    evictor_ = std::make_unique<Evictor>(
        frames_.get(), std::make_unique<ClockReplacer>(frames_.get(), table_.get(), 0.5), limit,
        ghost_pages);
  }
  // A miss of page `id`: reserve a frame and map the page into it, resident, unpinned (or pinned,
  // as a reader would hold it). Returns the frame.
  uint32_t Load(PageId id, bool keep_pinned = false) {
    auto idx = evictor_->Reserve();
    EXPECT_TRUE(idx.ok()) << idx.status().ToString();
    if (!idx.ok()) return kNoFrame;
    evictor_->replacer().Admit(*idx);
    EXPECT_TRUE(table_->Install(id, *idx, FrameState::kResident));
    if (!keep_pinned) (*frames_)[*idx].pins.fetch_sub(1);
    return *idx;
  }

  std::unique_ptr<FrameArray> frames_;
  std::unique_ptr<PageTable> table_;
  std::unique_ptr<Evictor> evictor_;
};

TEST_F(EvictorTest, FreeFramesGoFirstThenVictimsAtTheLimit) {
  Make(32, 20);
  for (PageId id = 1; id <= 20; ++id) EXPECT_EQ(Load(id), id - 1) << "low frames first";
  EXPECT_EQ(evictor_->in_use(), 20u);
  EXPECT_EQ(evictor_->evictions(), 0u);
  for (PageId id = 21; id <= 40; ++id) EXPECT_LT(Load(id), 20u) << "a victim's frame";
  EXPECT_EQ(evictor_->in_use(), 20u);
  EXPECT_EQ(evictor_->evictions(), 20u);
  EXPECT_EQ(table_->resident(), 20u);
}

TEST_F(EvictorTest, TheLimitIsSoftAndTheCensusSaysWhatHoldsTheFrames) {
  Make(20, 16);
  for (PageId id = 1; id <= 16; ++id) Load(id, /*keep_pinned=*/true);
  // Nothing can be evicted: a frame above the limit rather than a failure.
  for (PageId id = 17; id <= 18; ++id) EXPECT_GE(Load(id, /*keep_pinned=*/true), 16u);
  (*frames_)[Load(19)].dirty.store(true);
  (*frames_)[Load(20)].dirty.store(true);
  auto idx = evictor_->Reserve();
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(idx.status().message().find("all 20 frames"), std::string::npos)
      << idx.status().ToString();
  EXPECT_NE(idx.status().message().find("18 pinned, 2 dirty"), std::string::npos)
      << idx.status().ToString();
}

TEST_F(EvictorTest, ALoweredLimitEvictsAtOnceAndARaisedOneLetsThePoolGrow) {
  Make(64, 64);
  for (PageId id = 1; id <= 64; ++id) Load(id);
  for (uint32_t i = 0; i < 20; ++i) (*frames_)[i].dirty.store(true);  // cannot go now
  EXPECT_EQ(evictor_->SetCapacity(16), 20u) << "every clean frame went; the dirty ones stay";
  EXPECT_EQ(evictor_->capacity(), 16u);
  EXPECT_EQ(table_->resident(), 20u);
  EXPECT_EQ(evictor_->SetCapacity(1), 20u) << "clamped to 16";
  EXPECT_EQ(evictor_->capacity(), 16u);
  for (uint32_t i = 0; i < 20; ++i) (*frames_)[i].dirty.store(false);
  EXPECT_LT(Load(1000), 20u) << "over the limit a miss reuses a victim's frame";
  EXPECT_EQ(evictor_->in_use(), 20u);
  EXPECT_EQ(evictor_->SetCapacity(1000), 20u);
  EXPECT_EQ(evictor_->capacity(), 64u) << "clamped to the frames there are";
  for (PageId id = 2000; id < 2020; ++id) Load(id);
  EXPECT_EQ(evictor_->in_use(), 40u) << "free frames again under the raised limit";
}

TEST_F(EvictorTest, AReturnedFrameIsFreeAgain) {
  Make(16, 16);
  auto idx = evictor_->Reserve();
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(evictor_->in_use(), 1u);
  evictor_->Return(*idx);
  EXPECT_EQ(evictor_->in_use(), 0u);
  EXPECT_EQ((*frames_)[*idx].pins.load(), 0u);
  EXPECT_EQ((*frames_)[*idx].state.load(), FrameState::kFree);
}

TEST_F(EvictorTest, GhostHitsCountMissesOfPagesEvictedLately) {
  Make(16, 16, /*ghost_pages=*/8);
  for (PageId id = 1; id <= 16; ++id) Load(id);
  for (PageId id = 17; id <= 20; ++id) Load(id);  // evicts four of 1..16
  uint64_t evicted_seen = 0;
  for (PageId id = 1; id <= 16; ++id) {
    if (table_->Contains(id)) continue;
    evictor_->CountGhostHit(id);
    ++evicted_seen;
  }
  EXPECT_EQ(evicted_seen, 4u);
  EXPECT_EQ(evictor_->ghost_hits(), 4u);
  evictor_->CountGhostHit(5000);  // never cached
  EXPECT_EQ(evictor_->ghost_hits(), 4u);
}

}  // namespace
}  // namespace grove::buffer_internal
