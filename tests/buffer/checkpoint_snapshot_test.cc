// CheckpointSnapshot on frames without IO: what a capture takes, the arena holding every page as
// it was at the capture whether a writer or Complete copied it, and the end of a checkpoint that
// succeeded, failed or was abandoned.

#include "buffer/checkpoint_snapshot.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "page/page.h"

namespace grove::buffer_internal {
namespace {

constexpr uint32_t kFrames = 16;

class CheckpointSnapshotTest : public ::testing::Test {
 protected:
  // Frame `index` holds page `id`, resident, its body filled with `fill`.
  void Hold(uint32_t index, PageId id, char fill, bool dirty) {
    Frame& f = frames_[index];
    page::Init(f.data, PageType::kBlob, id);
    std::memset(f.data + kPageHeaderSize, fill, kPageSize - kPageHeaderSize);
    f.page_id.store(id);
    f.state.store(FrameState::kResident);
    if (dirty) snap_.MarkDirty(&f);
  }
  // A writer changes the page in frame `index`, as PageWriteGuard::mutable_data does.
  void Write(uint32_t index, char fill) {
    Frame& f = frames_[index];
    f.latch.Lock();
    snap_.CopyOut(&f);
    snap_.MarkDirty(&f);
    std::memset(f.data + kPageHeaderSize, fill, kPageSize - kPageHeaderSize);
    f.latch.Unlock();
  }
  static char Body(const AlignedBuffer& arena, size_t slot) {
    return arena.data()[slot * kPageSize + kPageHeaderSize + 100];
  }

  FrameArray frames_{kFrames};
  CheckpointSnapshot snap_{&frames_};
};

TEST_F(CheckpointSnapshotTest, ACaptureTakesTheResidentDirtyPagesInPageOrder) {
  Hold(0, 50, 'a', /*dirty=*/true);
  Hold(1, 20, 'b', /*dirty=*/false);
  Hold(2, 30, 'c', /*dirty=*/true);
  Hold(3, 10, 'd', /*dirty=*/true);
  frames_[3].state.store(FrameState::kInvalid);  // discarded meanwhile: not written
  EXPECT_EQ(snap_.dirty_pages(), 3u);
  AlignedBuffer arena;
  auto ids = snap_.Capture(/*epoch=*/7, &arena);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<PageId>{30, 50}));
  EXPECT_TRUE(frames_[0].flushing.load());
  EXPECT_TRUE(frames_[2].flushing.load());
  EXPECT_FALSE(frames_[1].flushing.load());
  EXPECT_FALSE(frames_[0].dirty.load());
  EXPECT_EQ(snap_.flushing_pages(), 2u);
  EXPECT_EQ(snap_.dirty_pages(), 1u) << "the invalid frame's flag is not the capture's to clear";
  snap_.Complete();
  EXPECT_EQ(Body(arena, 0), 'c');
  EXPECT_EQ(Body(arena, 1), 'a');
  EXPECT_EQ(page::Epoch(arena.data()), 7u) << "sealed with the checkpoint's epoch";
  EXPECT_TRUE(page::Verify(arena.data() + kPageSize, 50).ok());
  snap_.End(/*success=*/true);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_FALSE(frames_[0].flushing.load());
  EXPECT_FALSE(frames_[0].dirty.load());
}

TEST_F(CheckpointSnapshotTest, AWriterCopiesACapturedPageOutBeforeChangingIt) {
  Hold(0, 1, 'a', /*dirty=*/true);
  Hold(1, 2, 'b', /*dirty=*/true);
  AlignedBuffer arena;
  ASSERT_TRUE(snap_.Capture(3, &arena).ok());
  Write(0, 'X');  // copies 'a' out first
  Write(0, 'Y');  // already copied: the arena keeps 'a'
  EXPECT_EQ(frames_[0].snap_slot.load(), -1);
  EXPECT_EQ(frames_[1].snap_slot.load(), 1) << "not copied until Complete";
  snap_.Complete();
  Write(1, 'Z');  // after Complete: the arena is no writer's any more
  EXPECT_EQ(Body(arena, 0), 'a');
  EXPECT_EQ(Body(arena, 1), 'b');
  EXPECT_EQ(snap_.dirty_pages(), 2u) << "both changed since the capture";
  snap_.End(true);
  EXPECT_TRUE(frames_[0].dirty.load());
}

TEST_F(CheckpointSnapshotTest, AFailedCheckpointMakesItsPagesDirtyAgain) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  Hold(2, 3, 'c', true);
  AlignedBuffer arena;
  ASSERT_TRUE(snap_.Capture(3, &arena).ok());
  EXPECT_EQ(snap_.dirty_pages(), 0u);
  snap_.Complete();
  frames_[2].page_id.store(99);  // frame reused for another page meanwhile: not redirtied
  snap_.End(/*success=*/false);
  EXPECT_EQ(snap_.dirty_pages(), 2u);
  EXPECT_TRUE(frames_[0].dirty.load());
  EXPECT_TRUE(frames_[1].dirty.load());
  EXPECT_FALSE(frames_[2].dirty.load());
  EXPECT_FALSE(frames_[0].flushing.load());
}

TEST_F(CheckpointSnapshotTest, AnAbandonedCaptureNeedsNoCopies) {
  Hold(0, 1, 'a', true);
  AlignedBuffer arena;
  ASSERT_TRUE(snap_.Capture(3, &arena).ok());
  std::memset(arena.data(), 'z', arena.size());  // the arena is not cleared: mark it
  snap_.End(/*success=*/false);                  // before Complete: the arena is dropped
  EXPECT_EQ(frames_[0].snap_slot.load(), -1);
  Write(0, 'b');  // copies nothing
  EXPECT_EQ(Body(arena, 0), 'z') << "never copied";
  EXPECT_EQ(snap_.dirty_pages(), 1u);
}

TEST_F(CheckpointSnapshotTest, ACapturedPageChangedAgainCountsOnceAsDirty) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  Hold(2, 3, 'c', true);
  AlignedBuffer arena;
  ASSERT_TRUE(snap_.Capture(3, &arena).ok());
  EXPECT_EQ(snap_.dirty_pages() + snap_.flushing_pages(), 3u);
  Write(0, 'X');
  Write(0, 'Y');
  EXPECT_EQ(snap_.dirty_pages(), 1u);
  EXPECT_EQ(snap_.flushing_pages(), 2u) << "frame 0 is held by its dirt now, not twice";
  EXPECT_TRUE(frames_[0].flushing.load()) << "still the checkpoint's until it ends";
  snap_.Complete();
  Write(1, 'Z');  // after Complete too
  EXPECT_EQ(snap_.dirty_pages() + snap_.flushing_pages(), 3u) << "three frames held, in all";
  snap_.End(true);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_EQ(snap_.dirty_pages(), 2u);
  EXPECT_FALSE(frames_[0].recounted);
  // The next checkpoint counts frame 0 again when it is changed after its capture.
  ASSERT_TRUE(snap_.Capture(4, &arena).ok());
  EXPECT_EQ(snap_.flushing_pages(), 2u);
  Write(0, 'W');
  EXPECT_EQ(snap_.flushing_pages(), 1u);
  snap_.End(/*success=*/false);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_EQ(snap_.dirty_pages(), 2u) << "a failed checkpoint redirties; nothing counted twice";
}

TEST_F(CheckpointSnapshotTest, ClearDirtyCountsOnce) {
  Hold(0, 1, 'a', true);
  snap_.MarkDirty(&frames_[0]);
  EXPECT_EQ(snap_.dirty_pages(), 1u);
  snap_.ClearDirty(&frames_[0]);
  snap_.ClearDirty(&frames_[0]);
  EXPECT_EQ(snap_.dirty_pages(), 0u);
}

}  // namespace
}  // namespace grove::buffer_internal
