#pragma once

// PrefetchBatch: speculative reads of pages a lookup expects to need (SHORTCUT's one-shot path
// prefetch), and SidePool, the buffers they are read into. One of the buffer pool's parts (see
// buffer_pool.h).
//
// A batch is owned by one thread for the duration of one lookup. Pages already resident are not
// read. Issue() sends every read in one submission into side-pool buffers, never into frames: a
// prefetched page enters the cache only when a traversal confirms it (BufferPool::FetchRead with
// the batch, for exactly that page id, and the image verifies). Unconfirmed pages are dropped and
// counted as wasted, so a wrong guess costs a read but never displaces a cached page.
//
// Thread safety: a PrefetchBatch is used by one thread; SidePool is safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "grove/io_backend.h"

#include "page/page.h"
#include "util/mutex.h"

namespace grove {

class BufferPool;

namespace buffer_internal {

// The side pool's buffers (kPageSize each, aligned for O_DIRECT) and what became of the reads made
// into them.
class SidePool {
 public:
  explicit SidePool(uint32_t pages);
  SidePool(const SidePool&) = delete;
  SidePool& operator=(const SidePool&) = delete;

  // A free buffer, or null when every one is in use.
  char* Take();
  void Give(const std::vector<char*>& buffers);

  void CountIssued(uint64_t n) { issued_.fetch_add(n, std::memory_order_relaxed); }
  void CountUsed() { used_.fetch_add(1, std::memory_order_relaxed); }
  void CountWasted(uint64_t n) { wasted_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t issued() const { return issued_.load(std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t wasted() const { return wasted_.load(std::memory_order_relaxed); }

 private:
  AlignedBuffer arena_;
  Mutex mu_;
  std::vector<char*> free_ GROVE_GUARDED_BY(mu_);
  std::atomic<uint64_t> issued_{0}, used_{0}, wasted_{0};
};

}  // namespace buffer_internal

class PrefetchBatch {
 public:
  explicit PrefetchBatch(BufferPool* pool);
  ~PrefetchBatch();  // waits for outstanding reads; unused pages count as wasted
  PrefetchBatch(const PrefetchBatch&) = delete;
  PrefetchBatch& operator=(const PrefetchBatch&) = delete;

  // Returns how many reads were issued (side-pool exhaustion or residency may reduce it).
  size_t Issue(const std::vector<PageId>& ids);
  // The same for ids[0, n); *considered receives how many of them were looked at (issued, found
  // resident or already in flight) before the side pool ran out: the rest may be offered again.
  size_t Issue(const PageId* ids, size_t n, size_t* considered);
  size_t issued() const { return entries_.size(); }
  // Whether a read of `id` was issued by this batch.
  bool Has(PageId id) const;
  // Reads issued and not yet handed to a traversal.
  size_t pending() const;
  // Gives back the side-pool buffers of every page already handed to a traversal and of every
  // pending page `keep` rejects (waiting for its read; it counts as wasted). A long scan calls it
  // as it moves on, so that its batch holds only the pages still ahead of it.
  void Retain(const std::function<bool(PageId)>& keep);

 private:
  friend class BufferPool;
  struct Entry {
    PageId id;
    char* buf;
    IoOp op;
    bool taken = false;  // handed to a traversal
    bool used = false;   // verified and admitted to the cache
  };
  // The entry for `id`, waiting for its read; null when `id` was not prefetched.
  Entry* Take(PageId id);

  BufferPool* const pool_;
  buffer_internal::SidePool* const side_;
  std::unique_ptr<IoQueue> queue_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace grove
