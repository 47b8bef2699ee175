#pragma once

// CheckpointSnapshot: the pool's dirty pages, and the copy-on-write snapshot a checkpoint writes.
// One of the buffer pool's parts (see buffer_pool.h).
//
// No-steal: a dirty frame is never evicted; only a checkpoint writes pages. Capture, while writers
// are paused, takes the dirty set without copying it: each captured frame gets a slot in the
// checkpoint's arena (ascending page id) and becomes clean and "flushing". Complete, after writers
// resume, copies what is still uncopied; a writer that changes a captured page first copies it out
// itself (CopyOut, from PageWriteGuard::mutable_data and Discard), so the arena holds every page
// exactly as it was at the capture while writers pause only for the capture itself. Each copy is
// sealed with the checkpoint's epoch. Frames captured stay flushing (pinned in memory, not
// evictable) until End, that is until their in-place write is durable, so a page is never read
// back from disk while its newest image is on its way there. A failed checkpoint makes its pages
// dirty again. A captured frame that is changed again is both dirty and flushing, and one frame:
// flushing_pages() stops counting it then, so that dirty + flushing is the number of frames the
// two hold (the write room, engine/dirty_room.h, reads that sum) and not more.
//
// Checkpoint state machine (one checkpoint at a time):
//
//     idle --Capture--> captured --Complete--> complete --End--> idle
//                          |                                      ^
//                          +--------------End (abandoned)---------+
//
// Thread safety: MarkDirty, ClearDirty and CopyOut are safe for concurrent use with everything;
// CopyOut REQUIRES the frame's latch (exclusive for a writer; Complete takes it shared). Capture,
// Complete and End are called by the one checkpointing thread. Lock order: mu_, then a frame
// latch, then recount_mu_ (a leaf: MarkDirty takes it under a writer's latch).

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "grove/io_backend.h"
#include "grove/status.h"

#include "buffer/frame.h"
#include "util/mutex.h"

namespace grove::buffer_internal {

class CheckpointSnapshot {
 public:
  explicit CheckpointSnapshot(FrameArray* frames) : frames_(frames) {}
  CheckpointSnapshot(const CheckpointSnapshot&) = delete;
  CheckpointSnapshot& operator=(const CheckpointSnapshot&) = delete;

  void MarkDirty(Frame* frame) {
    if (!frame->dirty.exchange(true, std::memory_order_acq_rel)) {
      dirty_count_.fetch_add(1);
      if (frame->flushing.load()) Recount(frame);  // rare: once per captured frame at most
    }
  }
  // The frame's page was dropped: it need not be written.
  void ClearDirty(Frame* frame) {
    if (frame->dirty.exchange(false)) dirty_count_.fetch_sub(1);
  }

  // Captures every resident dirty frame for a checkpoint of `epoch`: sizes *arena (kPageSize
  // apiece, ascending page id), marks the frames clean and flushing, and returns their page ids in
  // the same order. REQUIRES: writers paused; no checkpoint running.
  StatusOr<std::vector<PageId>> Capture(uint32_t epoch, AlignedBuffer* arena);
  // Copy on write: a captured frame not copied yet is copied to its slot now. REQUIRES: the
  // frame's latch held.
  void CopyOut(Frame* frame);
  // Copies the captured pages not copied yet; afterwards no writer touches the arena.
  void Complete();
  // Ends the checkpoint; on failure the captured pages still holding their page become dirty.
  void End(bool success);

  uint64_t dirty_pages() const { return dirty_count_.load(std::memory_order_relaxed); }
  // Frames the running checkpoint holds that are not dirty again.
  uint64_t flushing_pages() const { return flushing_count_.load(std::memory_order_relaxed); }

 private:
  // A captured frame became dirty: it stops counting as flushing (once per checkpoint).
  void Recount(Frame* frame) GROVE_EXCLUDES(recount_mu_);

  FrameArray* const frames_;
  std::atomic<uint64_t> dirty_count_{0};
  std::atomic<uint64_t> flushing_count_{0};
  // Orders Recount against End's reset, so a frame is taken off flushing_count_ at most once and
  // never after the count was reset.
  Mutex recount_mu_;
  Mutex mu_;
  // Frames captured by the running checkpoint, with the page each held.
  std::vector<std::pair<uint32_t, PageId>> flushing_ GROVE_GUARDED_BY(mu_);
  // The running snapshot's arena and epoch (set while writers are paused, read by writers that
  // copy a captured frame out under its latch).
  std::atomic<char*> arena_{nullptr};
  std::atomic<uint32_t> epoch_{0};
};

}  // namespace grove::buffer_internal
