// ClockReplacer on frames without IO: CLOCK's second chance, the frames it may never take, the
// inner-node budget as protection within it and as a cap beyond it, and invalid frames reclaimed.

#include "buffer/clock_replacer.h"

#include <set>

#include <gtest/gtest.h>

namespace grove::buffer_internal {
namespace {

constexpr uint32_t kFrames = 16;
constexpr uint64_t kCapacity = kFrames;

class ClockReplacerTest : public ::testing::Test {
 protected:
  // Every frame holds page 100 + i, resident, accessed once at admission.
  void FillAll(double high_fraction = 0.5) {
    replacer_ = std::make_unique<ClockReplacer>(&frames_, &table_, high_fraction);
    for (uint32_t i = 0; i < kFrames; ++i) {
      replacer_->Admit(i);
      ASSERT_TRUE(table_.Install(100 + i, i, FrameState::kResident));
    }
  }
  // Evicts for a miss and hands the frame straight back to a new page, as the pool would.
  uint32_t EvictAndReuse(Replacer::Purpose purpose = Replacer::Purpose::kMiss) {
    const Victim v = replacer_->Evict(kCapacity, purpose);
    if (v.index == kNoFrame) return kNoFrame;
    EXPECT_EQ(frames_[v.index].state.load(), FrameState::kFree);
    replacer_->Admit(v.index);
    EXPECT_TRUE(table_.Install(next_page_++, v.index, FrameState::kResident));
    frames_[v.index].pins.fetch_sub(1);
    return v.index;
  }

  FrameArray frames_{kFrames};
  PageTable table_{&frames_};
  std::unique_ptr<ClockReplacer> replacer_;
  PageId next_page_ = 1000;
};

TEST_F(ClockReplacerTest, ARecentlyUsedFrameGetsASecondChance) {
  FillAll();
  // Every frame was used once: the first sweep clears them all, the second takes frame 0.
  const Victim v = replacer_->Evict(kCapacity, Replacer::Purpose::kMiss);
  ASSERT_EQ(v.index, 0u);
  EXPECT_EQ(v.evicted, 100u);
  EXPECT_FALSE(table_.Contains(100));
  replacer_->Admit(0);
  ASSERT_TRUE(table_.Install(next_page_++, 0, FrameState::kResident));
  frames_[0].pins.fetch_sub(1);
  // Frame 1 is used again before the hand reaches it: it is passed once more, frame 2 goes.
  replacer_->Touch(1, Retention::kNormal);
  EXPECT_EQ(EvictAndReuse(), 2u);
  EXPECT_EQ(EvictAndReuse(), 3u);
}

TEST_F(ClockReplacerTest, PinnedDirtyAndFlushingFramesAreNeverTaken) {
  FillAll();
  for (uint32_t i = 0; i < kFrames; ++i) {
    if (i % 3 == 0) frames_[i].pins.fetch_add(1);
    if (i % 3 == 1) frames_[i].dirty.store(true);
    if (i % 3 == 2) frames_[i].flushing.store(true);
  }
  EXPECT_EQ(replacer_->Evict(kCapacity, Replacer::Purpose::kMiss).index, kNoFrame);
  frames_[7].dirty.store(false);  // 7 % 3 == 1
  EXPECT_EQ(EvictAndReuse(), 7u);
  frames_[7].dirty.store(true);  // its new page
  EXPECT_EQ(replacer_->Evict(kCapacity, Replacer::Purpose::kMiss).index, kNoFrame);
}

TEST_F(ClockReplacerTest, HighFramesWithinTheirShareOutliveEveryOther) {
  FillAll(/*high_fraction=*/0.5);  // a share of 8
  for (uint32_t i : {1u, 4u, 9u, 15u}) replacer_->Touch(i, Retention::kHigh);
  EXPECT_EQ(replacer_->high_pages(), 4u);
  // Many misses: only the twelve normal frames ever go.
  for (int n = 0; n < 60; ++n) {
    const uint32_t idx = EvictAndReuse();
    ASSERT_NE(idx, kNoFrame);
    EXPECT_TRUE(idx != 1 && idx != 4 && idx != 9 && idx != 15) << "took protected frame " << idx;
  }
  EXPECT_EQ(replacer_->high_pages(), 4u);
}

TEST_F(ClockReplacerTest, AProtectedFrameGoesForAMissOnlyWhenNothingElseCan) {
  FillAll(/*high_fraction=*/0.5);
  replacer_->Touch(5, Retention::kHigh);
  replacer_->Touch(6, Retention::kHigh);
  for (uint32_t i = 0; i < kFrames; ++i) {
    if (i != 5 && i != 6) frames_[i].dirty.store(true);
  }
  frames_[5].pins.fetch_add(1);  // a hot inner page is pinned: the other protected one goes
  EXPECT_EQ(replacer_->Evict(kCapacity, Replacer::Purpose::kShrink).index, kNoFrame)
      << "a lowered limit does not take protected pages";
  const Victim v = replacer_->Evict(kCapacity, Replacer::Purpose::kMiss);
  EXPECT_EQ(v.index, 6u);
  EXPECT_EQ(v.evicted, 106u);
  EXPECT_EQ(replacer_->high_pages(), 1u) << "an evicted frame is no longer high";
}

TEST_F(ClockReplacerTest, BeyondTheirShareTheOldestHighFramesGoFirst) {
  FillAll(/*high_fraction=*/0.25);  // a share of 4
  const std::vector<uint32_t> order = {12, 3, 7, 0, 9, 14};
  for (uint32_t i : order) replacer_->Touch(i, Retention::kHigh);
  EXPECT_EQ(replacer_->high_pages(), 6u);
  EXPECT_EQ(EvictAndReuse(), 12u);
  EXPECT_EQ(EvictAndReuse(), 3u);
  EXPECT_EQ(replacer_->high_pages(), 4u) << "within the share again";
  // Now they are protected: the next victims are normal frames.
  for (int n = 0; n < 20; ++n) {
    const uint32_t idx = EvictAndReuse();
    EXPECT_TRUE(idx != 7 && idx != 0 && idx != 9 && idx != 14) << "took protected frame " << idx;
  }
}

TEST_F(ClockReplacerTest, InvalidFramesAreReclaimedOnceUnpinned) {
  FillAll();
  Frame* f = table_.PinIfPresent(103);
  ASSERT_EQ(f, &frames_[3]);
  table_.Invalidate(103, f);
  replacer_->Forget(3);
  for (uint32_t i = 0; i < kFrames; ++i) {
    if (i != 3) frames_[i].dirty.store(true);
  }
  EXPECT_EQ(replacer_->Evict(kCapacity, Replacer::Purpose::kMiss).index, kNoFrame)
      << "the invalid frame is still pinned";
  f->pins.fetch_sub(1);
  const Victim v = replacer_->Evict(kCapacity, Replacer::Purpose::kMiss);
  EXPECT_EQ(v.index, 3u);
  EXPECT_EQ(v.evicted, kInvalidPageId) << "a reclaimed frame held no page";
  EXPECT_EQ(frames_[3].state.load(), FrameState::kFree);
}

TEST_F(ClockReplacerTest, AdmitAndForgetEndAFramesHighMembership) {
  FillAll();
  replacer_->Touch(2, Retention::kHigh);
  replacer_->Touch(2, Retention::kHigh);
  replacer_->Touch(8, Retention::kHigh);
  EXPECT_EQ(replacer_->high_pages(), 2u) << "a frame counts once";
  replacer_->Forget(2);
  EXPECT_EQ(replacer_->high_pages(), 1u);
  replacer_->Admit(8);
  EXPECT_EQ(replacer_->high_pages(), 0u);
}

}  // namespace
}  // namespace grove::buffer_internal
