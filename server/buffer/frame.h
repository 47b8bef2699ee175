#pragma once

// Frames: the buffer pool's page-sized slots and their memory. One of the buffer pool's parts
// (buffer_pool.h is the façade; page_table.h, evictor.h, clock_replacer.h, checkpoint_snapshot.h
// and prefetch_batch.h are the others).
//
// Frame holds the state every part reads: which page the frame holds and in what state (the page
// table's), its pins (everyone's), its usage and retention (the replacer's), its dirty, flushing
// and snapshot slot (the checkpoint's), and its latch (the page guards'). All but the latch are
// atomics, because a reader may look at any frame without a lock (the page table's hints) and the
// replacer sweeps frames that others are using.
//
// FrameArray owns the frames and one anonymous mapping of num_frames * kPageSize bytes behind them.
// Frame i's memory is at a fixed place for the array's life; ReleaseMemory gives a frame's memory
// back to the system (its next use faults in a zeroed page).

#include <atomic>
#include <cstdint>
#include <memory>

#include "page/page.h"
#include "util/mutex.h"

namespace grove {

namespace buffer_internal {

// No frame: an empty hint way, no victim.
inline constexpr uint32_t kNoFrame = UINT32_MAX;

// Frame state machine (state changes under the page-table shard lock of the frame's page, but for
// kLoading -> kResident, which only the loader, holding the frame's latch, makes):
//
//     kFree --(miss: reserve + insert)--> kLoading --(read ok)--> kResident
//       ^                                    |                        |
//       |                              (read failed)          (evict / discard)
//       |                                    v                        |
//       +------------(pin == 0)-------- kInvalid <--------------------+
enum class FrameState : uint8_t { kFree, kLoading, kResident, kInvalid };

struct Frame {
  std::atomic<PageId> page_id{kInvalidPageId};
  // Only ever added to and subtracted from (never stored): a reader's tentative pin may land on
  // any frame (see page_table.h).
  std::atomic<uint32_t> pins{0};
  std::atomic<FrameState> state{FrameState::kFree};
  std::atomic<uint8_t> usage{0};  // the replacer's access count
  std::atomic<bool> high{false};  // accessed with Retention::kHigh (the replacer's)
  std::atomic<bool> dirty{false};
  std::atomic<bool> flushing{false};
  // Captured by the running checkpoint and not yet copied out: the page's slot in the
  // checkpoint's snapshot (-1: none). See checkpoint_snapshot.h.
  std::atomic<int32_t> snap_slot{-1};
  SharedMutex latch;
  char* data = nullptr;

  // Holds a page nobody uses that a checkpoint does not need: the one kind of frame that may be
  // evicted.
  bool Evictable() const {
    return state.load() == FrameState::kResident && pins.load() == 0 && !dirty.load() &&
           !flushing.load();
  }
};

class FrameArray {
 public:
  explicit FrameArray(uint32_t num_frames);
  ~FrameArray();
  FrameArray(const FrameArray&) = delete;
  FrameArray& operator=(const FrameArray&) = delete;

  uint32_t size() const { return size_; }
  Frame& operator[](uint32_t index) { return frames_[index]; }
  const Frame& operator[](uint32_t index) const { return frames_[index]; }
  uint32_t IndexOf(const Frame* frame) const {
    return static_cast<uint32_t>(frame - frames_.get());
  }
  // Gives frame `index`'s memory back to the system. REQUIRES: nobody uses the frame.
  void ReleaseMemory(uint32_t index);

 private:
  const uint32_t size_;
  std::unique_ptr<Frame[]> frames_;
  char* memory_ = nullptr;  // size_ * kPageSize bytes, mmap'ed (heap if mmap failed)
  bool mmapped_ = true;
};

}  // namespace buffer_internal
}  // namespace grove
