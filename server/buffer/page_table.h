#pragma once

// PageTable: which frame holds which page. One of the buffer pool's parts (see buffer_pool.h).
//
// A sharded hash map (page id -> frame index, 64 shards, each under its own mutex) with a
// lock-free hint table in front of it, so that a cache hit takes no lock: buckets of four frame
// indexes, each bucket owned by one shard (the top bits of a page's hash pick both) and written
// under that shard's mutex, name the frame that probably holds a page. The reader checks the
// frame's page id and state, pins it, and checks the state again. An evictor (TryEvict) marks the
// frame free before it claims the pins (compare-and-swap 0 -> 1), and a reader pins before it
// checks, so one of them always sees the other (both sequentially consistent): the reader backs
// off, or the evictor does. A hint that is stale or missing only sends the reader to the shard's
// map under its mutex.
//
// The table makes the frame state changes of frame.h's state machine but for kFree -> reserved
// (the evictor's) and the loader's kLoading -> kResident (Publish), and counts the resident pages.
//
// Thread safety: every method is safe for concurrent use. Lock order: a caller may hold the
// evictor's mutex (TryEvict) or a frame's latch (Invalidate, a loader's Install); a shard mutex is
// taken last, and nothing is taken while it is held.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "buffer/frame.h"
#include "page/page.h"
#include "util/mutex.h"

namespace grove::buffer_internal {

class PageTable {
 public:
  explicit PageTable(FrameArray* frames);
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  // The page hash that places a page in a shard and a hint bucket (and names it in ghost sets).
  static uint64_t Hash(PageId id) { return id * 0x9E3779B97F4A7C15ull; }

  // The frame holding or loading `id`, pinned; null when `id` is absent. A frame found through
  // its hint is resident; one found in the map may still be loading (its loader holds the latch).
  Frame* PinIfPresent(PageId id);
  bool Contains(PageId id);

  // Maps `id` to frame `index`, which enters `state` (kLoading, or kResident for a page that needs
  // no read), unless `id` is mapped already: then returns false and the caller uses that frame.
  // REQUIRES: frame `index` reserved (pinned by the caller, kFree, in no map).
  bool Install(PageId id, uint32_t index, FrameState state);
  // A loaded page becomes resident. REQUIRES: the loader, holding the frame's latch.
  void Publish(Frame* frame);
  // Unmaps `id` if `frame` still holds it and marks the frame kInvalid (it is reclaimed once
  // unpinned). Returns whether it was resident. REQUIRES: the caller pins the frame.
  bool Invalidate(PageId id, Frame* frame);
  // Frame `index`, if Evictable(), leaves the map: it is then kFree and pinned once (the caller's
  // claim on it). Returns the page it held, or kInvalidPageId when it cannot go.
  PageId TryEvict(uint32_t index);
  // Frame `index`, if kInvalid and unpinned (nobody can reach it again), is claimed the same way:
  // kFree and pinned once. Returns whether it was.
  bool TryReclaim(uint32_t index);

  uint64_t resident() const { return resident_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kShardBits = 6;
  static constexpr int kShards = 1 << kShardBits;
  static constexpr int kHintWays = 4;
  struct Shard {
    Mutex mu;
    std::unordered_map<PageId, uint32_t> map GROVE_GUARDED_BY(mu);  // page id -> frame index
  };
  struct alignas(16) HintBucket {
    std::array<std::atomic<uint32_t>, kHintWays> frame;
  };

  Shard& ShardOf(PageId id) { return shards_[Hash(id) >> (64 - kShardBits)]; }
  HintBucket& BucketOf(PageId id) { return hints_[Hash(id) >> (64 - hint_bits_)]; }
  // The frame of `id`, pinned, if the hints name it and it is resident; null otherwise.
  Frame* PinHinted(PageId id);
  // Records frame `index` as the holder of `id`. REQUIRES: the shard of `id` locked.
  void HintLocked(PageId id, uint32_t index);

  FrameArray* const frames_;
  std::array<Shard, kShards> shards_;
  const int hint_bits_;  // log2 of the number of hint buckets (>= kShardBits)
  std::unique_ptr<HintBucket[]> hints_;
  std::atomic<uint64_t> resident_{0};
};

}  // namespace grove::buffer_internal
