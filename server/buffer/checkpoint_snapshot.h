#pragma once

// CheckpointSnapshot: the pool's dirty pages, and the copy-on-write snapshot a checkpoint writes.
// One of the buffer pool's parts (see buffer_pool.h).
//
// No-steal: a dirty frame is never evicted; only a checkpoint writes pages. Capture, while writers
// are paused, takes the dirty set without copying it: each captured frame gets a slot (ascending
// page id) and becomes clean and "flushing". The checkpoint then reads each page's image as often
// as it needs it (CopyImages: once for the double-write file, once for the in-place write) into a
// buffer of its own, sealed with its epoch. Until the checkpoint ends, the frame itself is that
// image: a writer that changes or frees a captured page first copies it out (CopyOut, from
// PageWriteGuard::mutable_data and Discard) into a spare frame of the pool (CopyFrames), so the
// copy counts against the pool's limit like any page and memory stays within the budget, and
// writers pause only for the capture itself. When no spare frame can be had (every frame is
// pinned, dirty or being written) the copy goes to the heap, and is counted (copies_on_heap).
//
// Frames captured stay flushing (pinned in memory, not evictable) until End, that is until their
// in-place write is durable, so a page is never read back from disk while its newest image is on
// its way there. A failed checkpoint makes its pages dirty again.
//
// Counting: flushing_pages() is the number of frames held for the checkpoint's images that are not
// also dirty, so that dirty + flushing is the number of frames the two hold (the write room,
// engine/dirty_room.h, reads that sum). A captured frame that is copied out stops counting as
// flushing (it is dirty again, or freed) and its copy starts to, if the copy is a frame; a copy on
// the heap holds no frame.
//
// Checkpoint state machine (one checkpoint at a time):
//
//     idle --Capture--> captured --End--> idle      (CopyImages any number of times in between)
//
// A captured page's image (per slot):
//
//     in its frame --CopyOut (writer changes or frees it)--> in a copy --End--> copy given back
//
// Thread safety: MarkDirty, ClearDirty and CopyOut are safe for concurrent use with everything;
// CopyOut REQUIRES the frame's latch held exclusively. Capture, CopyImages and End are called by
// the one checkpointing thread. Capture runs while writers are paused and takes each frame's
// latch shared. CopyImages and End never wait for a frame latch: a writer may hold one
// exclusively while it waits for a frame that only the checkpoint's end frees (a miss with every
// other frame held, buffer_pool.h). They are ordered against a CopyOut of the same slot by the
// slot's stripe mutex (one of kStripes, by slot number), which CopyOut takes before the writer
// changes a byte of the frame. Lock order: mu_, then a frame latch, then a stripe, then whatever
// CopyFrames::take takes (the evictor's mutex).

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "grove/io_backend.h"
#include "grove/status.h"

#include "buffer/frame.h"
#include "util/mutex.h"

namespace grove::buffer_internal {

// Where copies of captured pages come from: spare frames of the pool (the evictor's Reserve and
// Return), so that they count against its limit.
struct CopyFrames {
  std::function<StatusOr<uint32_t>()> take;  // a frame nobody else uses, or an error
  std::function<void(uint32_t)> give_back;
};

class CheckpointSnapshot {
 public:
  CheckpointSnapshot(FrameArray* frames, CopyFrames copy_frames)
      : frames_(frames), copy_frames_(std::move(copy_frames)) {}
  CheckpointSnapshot(const CheckpointSnapshot&) = delete;
  CheckpointSnapshot& operator=(const CheckpointSnapshot&) = delete;

  void MarkDirty(Frame* frame) {
    if (!frame->dirty.exchange(true, std::memory_order_acq_rel)) dirty_count_.fetch_add(1);
  }
  // The frame's page was dropped: it need not be written.
  void ClearDirty(Frame* frame) {
    if (frame->dirty.exchange(false)) dirty_count_.fetch_sub(1);
  }

  // Captures every resident dirty frame for a checkpoint of `epoch`: marks the frames clean and
  // flushing, and returns their page ids in ascending order (slot i holds the i-th). Copies
  // nothing. REQUIRES: writers paused; no checkpoint running.
  std::vector<PageId> Capture(uint32_t epoch);
  // Copy on write: a captured frame whose image is still only in the frame is copied out now.
  // REQUIRES: the frame's latch held exclusively.
  void CopyOut(Frame* frame);
  // Copies the images of slots [first, first + count) as captured, each sealed with the epoch,
  // into `out` (count * kPageSize bytes). REQUIRES: a capture running; first + count <= its size.
  void CopyImages(size_t first, size_t count, char* out);
  // Ends the checkpoint: copies are given back; on failure the captured pages still holding their
  // page become dirty.
  void End(bool success);

  uint64_t dirty_pages() const { return dirty_count_.load(std::memory_order_relaxed); }
  // Frames the running checkpoint holds for its images that are not dirty (see above).
  uint64_t flushing_pages() const { return flushing_count_.load(std::memory_order_relaxed); }
  // Captured pages copied out by writers, into spare frames and onto the heap (totals).
  uint64_t copies_in_pool() const { return copies_in_pool_.load(std::memory_order_relaxed); }
  uint64_t copies_on_heap() const { return copies_on_heap_.load(std::memory_order_relaxed); }

 private:
  // A captured page. `copy` and what holds it are written by a CopyOut and read by CopyImages and
  // End under the slot's stripe; the array is replaced only by Capture (writers paused) and
  // cleared by End after every slot was closed.
  struct Slot {
    uint32_t frame = kNoFrame;
    PageId id = kInvalidPageId;
    const char* copy = nullptr;       // the image once copied out; null: in the frame
    uint32_t copy_frame = kNoFrame;   // the spare frame holding it
    std::unique_ptr<char[]> on_heap;  // or the heap page holding it
  };

  FrameArray* const frames_;
  const CopyFrames copy_frames_;
  std::atomic<uint64_t> dirty_count_{0};
  std::atomic<uint64_t> flushing_count_{0};
  std::atomic<uint64_t> copies_in_pool_{0}, copies_on_heap_{0};
  static constexpr size_t kStripes = 64;
  Mutex& StripeOf(int32_t slot) { return stripes_[static_cast<size_t>(slot) % kStripes]; }

  Mutex mu_;  // serialises Capture and End
  std::array<Mutex, kStripes> stripes_;
  std::vector<Slot> slots_;
  uint32_t epoch_ = 0;  // the running capture's (written while writers are paused)
};

}  // namespace grove::buffer_internal
