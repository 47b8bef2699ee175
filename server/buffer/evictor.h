#pragma once

// Evictor: hands out frames for new pages, within a limit that may move. One of the buffer pool's
// parts (see buffer_pool.h).
//
// A frame for a new page is a free one while the pool is under its limit; at the limit it is a
// victim's (the replacer picks it), so a pool whose limit was lowered shrinks as misses evict what
// SetCapacity could not. The limit is soft: when nothing can be evicted, a free frame above it is
// used rather than the read or write failing; only when every frame is pinned, dirty or being
// written does Reserve fail, with a census of what holds them. Frames released below the limit
// give their memory back to the system.
//
// The evictor also remembers what it evicted lately (a GhostSet over BufferPoolOptions::
// ghost_pages), so that a miss can tell whether a larger pool would have hit.
//
// Thread safety: every method is safe for concurrent use. Lock order: mu_, then the replacer's
// mutexes, then a page-table shard mutex.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "grove/status.h"

#include "buffer/frame.h"
#include "buffer/replacer.h"
#include "util/ghost_set.h"
#include "util/mutex.h"

namespace grove::buffer_internal {

class Evictor {
 public:
  // Every frame of `frames` starts free; the limit starts at `limit_pages` (clamped as in
  // SetCapacity).
  Evictor(FrameArray* frames, std::unique_ptr<Replacer> replacer, uint64_t limit_pages,
          uint32_t ghost_pages);
  Evictor(const Evictor&) = delete;
  Evictor& operator=(const Evictor&) = delete;

  Replacer& replacer() { return *replacer_; }

  // A frame for a new page: pinned once (the caller's), kFree and in no map. kResourceExhausted
  // when every frame is pinned, dirty, being written or (with nothing else) protected.
  StatusOr<uint32_t> Reserve();
  // Gives back a frame Reserve handed out and the caller did not use.
  void Return(uint32_t index);

  // Moves the limit to `pages` (clamped to [16, frames]); shrinking evicts what the replacer gives
  // up at once and releases its memory. Returns the frames in use afterwards.
  uint64_t SetCapacity(uint64_t pages);
  uint64_t capacity() const { return limit_.load(std::memory_order_relaxed); }
  // Frames holding a page or being loaded.
  uint64_t in_use() const;

  // Counts a miss of `id` as a ghost hit if its page was evicted within the last ghost_pages
  // evictions.
  void CountGhostHit(PageId id);
  uint64_t ghost_hits() const { return ghost_hits_.load(std::memory_order_relaxed); }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kMinPages = 16;
  uint64_t InUseLocked() const GROVE_REQUIRES(mu_) { return frames_->size() - free_.size(); }
  uint32_t TakeFreeLocked() GROVE_REQUIRES(mu_);
  // Counts and remembers an eviction (not a reclaimed invalid frame).
  void Note(const Victim& v);
  // Puts a claimed frame back on the free list and gives its memory back.
  void ReleaseLocked(uint32_t index) GROVE_REQUIRES(mu_);
  Status Exhausted() const;

  FrameArray* const frames_;
  const std::unique_ptr<Replacer> replacer_;
  std::atomic<uint64_t> limit_;
  GhostSet ghost_;
  const uint64_t ghost_window_;
  std::atomic<uint64_t> ghost_hits_{0};
  std::atomic<uint64_t> evictions_{0};
  mutable Mutex mu_;
  std::vector<uint32_t> free_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove::buffer_internal
