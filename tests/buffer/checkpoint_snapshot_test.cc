// CheckpointSnapshot on frames without IO: what a capture takes, the images it hands out staying
// as they were at the capture whether or not a writer changed or freed the page since (its copy
// in a spare frame, or on the heap when none can be had), how the frames held are counted, and
// the end of a checkpoint that succeeded, failed or was abandoned.

#include "buffer/checkpoint_snapshot.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "page/page.h"

namespace grove::buffer_internal {
namespace {

constexpr uint32_t kFrames = 16;
constexpr uint32_t kFirstSpare = 12;  // frames 12..15 serve as the pool's spare frames

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
  // A writer frees the page in frame `index`: copied out, then the frame is reused.
  void Free(uint32_t index, PageId new_id, char fill) {
    Frame& f = frames_[index];
    f.latch.Lock();
    snap_.CopyOut(&f);
    snap_.ClearDirty(&f);
    f.latch.Unlock();
    Hold(index, new_id, fill, /*dirty=*/false);
  }
  // The body byte of image `slot` as the snapshot hands it out now.
  char Image(size_t slot, uint32_t epoch, PageId id) {
    AlignedBuffer buf(kPageSize);
    snap_.CopyImages(slot, 1, buf.data());
    EXPECT_TRUE(page::Verify(buf.data(), id).ok()) << "slot " << slot << " is sealed as " << id;
    EXPECT_EQ(page::Epoch(buf.data()), epoch);
    return buf.data()[kPageHeaderSize + 100];
  }

  FrameArray frames_{kFrames};
  std::vector<uint32_t> spare_{15, 14, 13, kFirstSpare};
  std::vector<uint32_t> given_back_;
  CheckpointSnapshot snap_{&frames_, CopyFrames{.take = [this]() -> StatusOr<uint32_t> {
                                                  if (spare_.empty()) {
                                                    return Status::ResourceExhausted("none");
                                                  }
                                                  const uint32_t i = spare_.back();
                                                  spare_.pop_back();
                                                  return i;
                                                },
                                                .give_back =
                                                    [this](uint32_t i) {
                                                      given_back_.push_back(i);
                                                      spare_.push_back(i);
                                                    }}};
};

TEST_F(CheckpointSnapshotTest, ACaptureTakesTheResidentDirtyPagesInPageOrder) {
  Hold(0, 50, 'a', /*dirty=*/true);
  Hold(1, 20, 'b', /*dirty=*/false);
  Hold(2, 30, 'c', /*dirty=*/true);
  Hold(3, 10, 'd', /*dirty=*/true);
  frames_[3].state.store(FrameState::kInvalid);  // discarded meanwhile: not written
  EXPECT_EQ(snap_.dirty_pages(), 3u);
  const std::vector<PageId> ids = snap_.Capture(/*epoch=*/7);
  EXPECT_EQ(ids, (std::vector<PageId>{30, 50}));
  EXPECT_TRUE(frames_[0].flushing.load());
  EXPECT_TRUE(frames_[2].flushing.load());
  EXPECT_FALSE(frames_[1].flushing.load());
  EXPECT_FALSE(frames_[0].dirty.load());
  EXPECT_EQ(snap_.flushing_pages(), 2u);
  EXPECT_EQ(snap_.dirty_pages(), 1u) << "the invalid frame's flag is not the capture's to clear";
  AlignedBuffer both(2 * kPageSize);
  snap_.CopyImages(0, 2, both.data());
  EXPECT_EQ(both.data()[kPageHeaderSize], 'c');
  EXPECT_EQ(both.data()[kPageSize + kPageHeaderSize], 'a');
  EXPECT_EQ(page::Epoch(both.data()), 7u) << "sealed with the checkpoint's epoch";
  EXPECT_TRUE(page::Verify(both.data() + kPageSize, 50).ok());
  EXPECT_EQ(snap_.copies_in_pool() + snap_.copies_on_heap(), 0u) << "nothing copied out";
  snap_.End(/*success=*/true);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_FALSE(frames_[0].flushing.load());
  EXPECT_FALSE(frames_[0].dirty.load());
}

TEST_F(CheckpointSnapshotTest, AWriterCopiesACapturedPageIntoASpareFrameBeforeChangingIt) {
  Hold(0, 1, 'a', /*dirty=*/true);
  Hold(1, 2, 'b', /*dirty=*/true);
  snap_.Capture(3);
  EXPECT_EQ(Image(0, 3, 1), 'a');
  Write(0, 'X');  // copies 'a' out first
  Write(0, 'Y');  // already copied: the copy keeps 'a'
  EXPECT_EQ(frames_[0].snap_slot.load(), -1);
  EXPECT_EQ(frames_[1].snap_slot.load(), 1) << "not copied: nobody changed it";
  EXPECT_EQ(snap_.copies_in_pool(), 1u);
  EXPECT_EQ(spare_.size(), 3u) << "one spare frame holds the copy";
  for (int pass = 0; pass < 2; ++pass) {  // the double-write pass, then the in-place pass
    EXPECT_EQ(Image(0, 3, 1), 'a');
    EXPECT_EQ(Image(1, 3, 2), 'b');
  }
  EXPECT_EQ(frames_[0].data[kPageHeaderSize], 'Y') << "the writer's change stays in its frame";
  EXPECT_EQ(snap_.dirty_pages(), 1u);
  snap_.End(true);
  EXPECT_EQ(given_back_, (std::vector<uint32_t>{kFirstSpare}));
  EXPECT_TRUE(frames_[0].dirty.load());
  EXPECT_FALSE(frames_[1].dirty.load());
  Write(1, 'Z');  // after End: no copy
  EXPECT_EQ(snap_.copies_in_pool(), 1u);
}

TEST_F(CheckpointSnapshotTest, AWriterHoldingACapturedFramesLatchDoesNotHoldUpTheCheckpoint) {
  // A writer latches a captured page exclusively and, before changing it, waits for something
  // only the checkpoint's end brings (a frame, when every other one is being written). The
  // checkpoint must still hand out its images and end.
  Hold(0, 1, 'a', /*dirty=*/true);
  Hold(1, 2, 'b', /*dirty=*/true);
  snap_.Capture(4);
  std::atomic<bool> latched{false}, ended{false};
  std::thread writer([&] {
    Frame& f = frames_[0];
    f.latch.Lock();
    latched.store(true);
    while (!ended.load()) std::this_thread::yield();
    snap_.CopyOut(&f);  // the slot is closed: nothing to copy
    snap_.MarkDirty(&f);
    std::memset(f.data + kPageHeaderSize, 'X', kPageSize - kPageHeaderSize);
    f.latch.Unlock();
  });
  while (!latched.load()) std::this_thread::yield();
  EXPECT_EQ(Image(0, 4, 1), 'a');
  EXPECT_EQ(Image(1, 4, 2), 'b');
  snap_.End(/*success=*/false);
  EXPECT_TRUE(frames_[0].dirty.load()) << "a failed checkpoint leaves the latched page dirty";
  ended.store(true);
  writer.join();
  EXPECT_EQ(snap_.copies_in_pool() + snap_.copies_on_heap(), 0u);
  EXPECT_EQ(frames_[0].data[kPageHeaderSize], 'X');
  EXPECT_EQ(snap_.dirty_pages(), 2u);
}

TEST_F(CheckpointSnapshotTest, AFreedCapturedPageIsWrittenAsCaptured) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  snap_.Capture(5);
  Free(0, /*new_id=*/77, 'n');  // the frame holds another page now
  EXPECT_EQ(Image(0, 5, 1), 'a');
  EXPECT_EQ(Image(1, 5, 2), 'b');
  snap_.End(/*success=*/false);
  EXPECT_FALSE(frames_[0].dirty.load()) << "the frame's new page is not the captured one";
  EXPECT_TRUE(frames_[1].dirty.load());
  EXPECT_EQ(snap_.dirty_pages(), 1u);
}

TEST_F(CheckpointSnapshotTest, WithNoSpareFrameTheCopyGoesToTheHeap) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  Hold(2, 3, 'c', true);
  spare_.resize(1);
  snap_.Capture(4);
  Write(0, 'X');  // the last spare frame
  Write(1, 'Y');  // none left
  EXPECT_EQ(snap_.copies_in_pool(), 1u);
  EXPECT_EQ(snap_.copies_on_heap(), 1u);
  EXPECT_EQ(Image(0, 4, 1), 'a');
  EXPECT_EQ(Image(1, 4, 2), 'b');
  EXPECT_EQ(Image(2, 4, 3), 'c');
  // Frames held: 0 and 1 dirty, 2 captured, the spare frame with 0's copy; 1's copy holds none.
  EXPECT_EQ(snap_.dirty_pages(), 2u);
  EXPECT_EQ(snap_.flushing_pages(), 2u);
  snap_.End(true);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_EQ(given_back_.size(), 1u);
}

TEST_F(CheckpointSnapshotTest, AFailedCheckpointMakesItsPagesDirtyAgain) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  Hold(2, 3, 'c', true);
  snap_.Capture(3);
  EXPECT_EQ(snap_.dirty_pages(), 0u);
  Write(1, 'B');
  frames_[2].page_id.store(99);  // frame reused for another page meanwhile: not redirtied
  snap_.End(/*success=*/false);
  EXPECT_EQ(snap_.dirty_pages(), 2u) << "each page counted once";
  EXPECT_TRUE(frames_[0].dirty.load());
  EXPECT_TRUE(frames_[1].dirty.load());
  EXPECT_FALSE(frames_[2].dirty.load());
  EXPECT_FALSE(frames_[0].flushing.load());
  EXPECT_EQ(given_back_.size(), 1u);
}

TEST_F(CheckpointSnapshotTest, AnAbandonedCaptureNeedsNoCopies) {
  Hold(0, 1, 'a', true);
  snap_.Capture(3);
  snap_.End(/*success=*/false);
  EXPECT_EQ(frames_[0].snap_slot.load(), -1);
  Write(0, 'b');  // copies nothing
  EXPECT_EQ(snap_.copies_in_pool() + snap_.copies_on_heap(), 0u);
  EXPECT_EQ(snap_.dirty_pages(), 1u);
}

TEST_F(CheckpointSnapshotTest, DirtyAndFlushingCountTheFramesHeld) {
  Hold(0, 1, 'a', true);
  Hold(1, 2, 'b', true);
  Hold(2, 3, 'c', true);
  snap_.Capture(3);
  EXPECT_EQ(snap_.dirty_pages() + snap_.flushing_pages(), 3u);
  Write(0, 'X');
  Write(0, 'Y');
  EXPECT_EQ(snap_.dirty_pages(), 1u);
  EXPECT_EQ(snap_.flushing_pages(), 3u) << "frames 1 and 2, and frame 0's copy";
  EXPECT_EQ(snap_.dirty_pages() + snap_.flushing_pages(), 4u) << "four frames held, in all";
  EXPECT_TRUE(frames_[0].flushing.load()) << "still the checkpoint's until it ends";
  snap_.End(true);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_EQ(snap_.dirty_pages(), 1u);
  // The next checkpoint copies frame 0 out again when it is changed after its capture.
  snap_.Capture(4);
  EXPECT_EQ(snap_.flushing_pages(), 1u);
  Write(0, 'W');
  EXPECT_EQ(snap_.flushing_pages(), 1u);
  EXPECT_EQ(snap_.copies_in_pool(), 2u);
  EXPECT_EQ(Image(0, 4, 1), 'Y');
  snap_.End(/*success=*/false);
  EXPECT_EQ(snap_.flushing_pages(), 0u);
  EXPECT_EQ(snap_.dirty_pages(), 1u) << "a failed checkpoint redirties; nothing counted twice";
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
