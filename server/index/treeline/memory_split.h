#pragma once

// MemorySplit: how TreeLine's memory budget (cache_bytes) is divided between the buffer pool and
// the record cache, moved at run time towards whichever saves more device reads. Not in the
// paper, whose TreeLine caches records alone: a record cache pays off when a few records of each
// page are hot (skewed reads, updates), but spends 96 bytes of bookkeeping per record, so under
// uniform reads the same memory holds fewer records as records than as pages (64-byte records:
// about 160 bytes each in the cache against 90 on a page), and a scan wants pages.
//
// The weighing is ARC's ghost idea (Megiddo and Modha, FAST 2003) applied across two caches: each
// remembers what it evicted within the last `ghost_bytes` of its memory (BufferPool's ghost_pages,
// RecordCache's ghost_bytes), so a miss that hits a ghost is a device read that ghost_bytes more of
// that cache would have saved. Counted: a buffer pool read miss whose page was evicted lately
// (Gets and scans; not the pages write-backs fetch, which the record cache's shortage causes:
// counted for the pool, they fed on themselves); a record cache miss whose key was evicted lately
// and whose page is not resident either (a pool hit saves nothing); a write of a key evicted
// lately (a write-back the larger cache would have merged). Once `evidence` ghost hits are in,
// the side with `margin` times the other's hits gets `step_bytes` from the other; otherwise
// nothing moves. Equal byte windows on both sides make the counts comparable as they are.
//
// Bounds: the pool stays within [min_pool_bytes, max_pool_bytes] (buffer_pool_share and
// buffer_pool_max_share of the budget): the floor keeps what the pool is configured with for
// pages in flight and dirty pages, the ceiling keeps room for dirty records. Decide's `ceiling`
// bounds growth further by what the record cache can give up without writing anything back
// (the caller passes the budget less what its dirty records need): a write-heavy phase's dirty
// records are not forced out to make pages room, which would cost a page read and write per
// page of them; they reach their pages as they would anyway, and the pool grows after.
//
// Thread safety: none; TreeLine's background thread owns it.

#include <cstdint>

namespace grove::treeline {

class MemorySplit {
 public:
  struct Options {
    uint64_t total_bytes = 0;
    uint64_t min_pool_bytes = 0;
    uint64_t max_pool_bytes = 0;
    uint64_t step_bytes = 0;
    uint64_t evidence = 128;
    double margin = 1.25;
  };
  MemorySplit(const Options& options, uint64_t pool_bytes);

  // Adds the ghost hits counted since the last call; returns the pool's size in bytes from now on
  // (the record cache gets the rest). The pool grows to `ceiling` at most (it does not shrink
  // for it).
  uint64_t Decide(uint64_t pool_ghost_hits, uint64_t cache_ghost_hits,
                  uint64_t ceiling = UINT64_MAX);

  bool adaptive() const { return o_.max_pool_bytes > o_.min_pool_bytes; }
  uint64_t pool_bytes() const { return pool_; }
  uint64_t cache_bytes() const { return o_.total_bytes - pool_; }
  uint64_t total_bytes() const { return o_.total_bytes; }
  uint64_t moves_to_pool() const { return to_pool_; }
  uint64_t moves_to_cache() const { return to_cache_; }

 private:
  const Options o_;
  uint64_t pool_;
  uint64_t pool_hits_ = 0, cache_hits_ = 0;
  uint64_t to_pool_ = 0, to_cache_ = 0;
};

}  // namespace grove::treeline
