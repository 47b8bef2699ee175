#pragma once

// Replacer: which resident page gives way when a miss needs a frame. One of the buffer pool's
// parts (see buffer_pool.h); the evictor (evictor.h) asks it for victims when no free frame may
// be used, and the pool reports every access to it. ClockReplacer (clock_replacer.h) is the one
// policy Grove ships; the interface is what a second one (an LRU-K, a 2Q) would implement.
//
// A victim must be a frame PageTable::TryEvict accepted (or an invalid frame PageTable::TryReclaim
// took): it leaves the replacer pinned once and kFree, the caller's to reuse.

#include <cstdint>

#include "buffer/frame.h"
#include "page/page.h"

namespace grove {

// How long a page should stay. kNormal pages get CLOCK's second chance. kHigh pages (inner nodes)
// have a budget, BufferPoolOptions::high_retention_fraction of the frames: within it they are never
// evicted; beyond it they are the first to go. So the fraction caps what inner nodes may hold
// (experiments size it as "x% of the inner nodes cached") as much as it protects them.
enum class Retention : uint8_t { kNormal = 1, kHigh = 5 };

namespace buffer_internal {

struct Victim {
  uint32_t index = kNoFrame;        // kNoFrame: nothing could go
  PageId evicted = kInvalidPageId;  // the page it held (kInvalidPageId: an invalid frame)
};

class Replacer {
 public:
  virtual ~Replacer() = default;

  // Frame `index` is about to hold a new page: its access history starts afresh.
  virtual void Admit(uint32_t index) = 0;
  // An access with `retention` to the page in frame `index`. REQUIRES: the caller pins the frame.
  virtual void Touch(uint32_t index, Retention retention) = 0;
  // The page in frame `index` left the page table (discarded, or its load failed).
  virtual void Forget(uint32_t index) = 0;

  // kMiss: a miss needs a frame, and may take a protected page when nothing else can go.
  // kShrink: the pool's limit was lowered; only pages the policy would give up anyway go.
  enum class Purpose { kMiss, kShrink };
  // A victim, or {kNoFrame} when every frame is pinned, dirty, being written or protected.
  // `capacity_pages`: the pool's limit now (protected shares are fractions of it). REQUIRES:
  // calls are serialised by the caller (the evictor's mutex).
  virtual Victim Evict(uint64_t capacity_pages, Purpose purpose) = 0;

  // Frames holding a page with high retention.
  virtual uint64_t high_pages() const = 0;
};

}  // namespace buffer_internal
}  // namespace grove
