#pragma once

// BufferPool: the page cache over the data file, and the only way to reach page memory.
//
// 4 KiB frames (cache_bytes / 4096), up to a limit that may move at run time (SetCapacityPages:
// a variant that shares its budget with a cache of its own moves memory between the two). A miss
// takes a frame and reads the page with the IO backend, then checks its checksum, own id and epoch
// (EpochTable) before anyone sees it.
//
// Access is through RAII guards only: PageReadGuard holds the frame's latch shared, PageWriteGuard
// exclusive; both pin the frame so it cannot be evicted. Dropping the guard releases both.
// No-steal: a dirty frame is never evicted; only a checkpoint writes pages.
//
// The pool is a façade over parts with one job each:
//
//   frame.h                the frames, their state machine and their memory
//   page_table.h           page id -> frame: sharded map, lock-free hints, resident count
//   evictor.h              frames for new pages within the (movable) limit; ghost hits
//   replacer.h             which page gives way (clock_replacer.h: CLOCK with an inner-node budget)
//   checkpoint_snapshot.h  dirty pages, and the copy-on-write snapshot a checkpoint writes
//                          (its copies are frames of the pool's own)
//   prefetch_batch.h       speculative reads into a side pool, admitted only when confirmed
//
// and keeps for itself the guards, the load paths (single pages, LoadMany's batched runs, a
// confirmed prefetch) with their verification, and the IO accounting.
//
// Lock order: a frame latch -> the evictor's mutex -> the replacer's -> a page-table shard mutex.
// Nothing under the evictor's, the replacer's or a shard's mutex waits for a latch (eviction only
// claims unpinned frames), and a frame latch is held while taking them in two places only: a
// loader holds its new frame's latch (no one else can hold it yet), and a writer copying a
// captured page out for a checkpoint holds its page's (checkpoint_snapshot.h). Page latches among
// themselves are ordered by the index (top-down, left-to-right; see index/btree/btree.h).
//
// Thread safety: every public method is safe for concurrent use. A page latch passes from the
// function that takes it (FetchRead, FetchWrite, NewPage, a loader) to the guard that releases
// it: an ownership clang's analysis cannot follow, so those functions and the guards' releases
// are left out of it (GROVE_NO_THREAD_SAFETY_ANALYSIS); the mutexes keep their annotations.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "grove/io_backend.h"
#include "grove/stats.h"
#include "grove/status.h"

#include "buffer/checkpoint_snapshot.h"
#include "buffer/evictor.h"
#include "buffer/frame.h"
#include "buffer/page_table.h"
#include "buffer/prefetch_batch.h"
#include "buffer/replacer.h"
#include "page/epoch_table.h"
#include "page/page.h"

namespace grove {

struct BufferPoolOptions {
  uint64_t capacity_bytes = 256ull << 20;
  // The most SetCapacityPages may grow the pool to (0: capacity_bytes; the pool never grows).
  uint64_t max_capacity_bytes = 0;
  // Evicted pages remembered (GhostSet) to count the misses a pool larger by this many frames
  // would have hit (ghost_hits); 0: none remembered.
  uint32_t ghost_pages = 0;
  uint32_t side_pool_pages = 512;        // buffers for speculative reads (PrefetchBatch)
  double high_retention_fraction = 0.5;  // frames reserved for Retention::kHigh pages
};

class BufferPool;

class PageReadGuard {
 public:
  PageReadGuard() = default;
  PageReadGuard(PageReadGuard&& other) noexcept { *this = std::move(other); }
  PageReadGuard& operator=(PageReadGuard&& other) noexcept;
  PageReadGuard(const PageReadGuard&) = delete;
  PageReadGuard& operator=(const PageReadGuard&) = delete;
  ~PageReadGuard() { Release(); }

  explicit operator bool() const { return frame_ != nullptr; }
  const char* data() const { return frame_->data; }
  PageId id() const { return id_; }
  void Release() GROVE_NO_THREAD_SAFETY_ANALYSIS;

 private:
  friend class BufferPool;
  PageReadGuard(BufferPool* pool, buffer_internal::Frame* frame, PageId id)
      : pool_(pool), frame_(frame), id_(id) {}
  BufferPool* pool_ = nullptr;
  buffer_internal::Frame* frame_ = nullptr;
  PageId id_ = kInvalidPageId;
};

class PageWriteGuard {
 public:
  PageWriteGuard() = default;
  PageWriteGuard(PageWriteGuard&& other) noexcept { *this = std::move(other); }
  PageWriteGuard& operator=(PageWriteGuard&& other) noexcept;
  PageWriteGuard(const PageWriteGuard&) = delete;
  PageWriteGuard& operator=(const PageWriteGuard&) = delete;
  ~PageWriteGuard() { Release(); }

  explicit operator bool() const { return frame_ != nullptr; }
  const char* data() const { return frame_->data; }
  // The page's bytes for modification; marks the page dirty.
  char* mutable_data();
  PageId id() const { return id_; }
  void Release() GROVE_NO_THREAD_SAFETY_ANALYSIS;
  // The page was freed: drop it from the pool without writing it, and release the guard.
  void Discard() GROVE_NO_THREAD_SAFETY_ANALYSIS;

 private:
  friend class BufferPool;
  PageWriteGuard(BufferPool* pool, buffer_internal::Frame* frame, PageId id)
      : pool_(pool), frame_(frame), id_(id) {}
  BufferPool* pool_ = nullptr;
  buffer_internal::Frame* frame_ = nullptr;
  PageId id_ = kInvalidPageId;
};

class BufferPool {
 public:
  // `data_file` is the O_DIRECT data file; `epochs` the table every read is checked against.
  BufferPool(const BufferPoolOptions& options, IoBackend* io, File* data_file,
             const EpochTable* epochs);
  ~BufferPool() = default;  // REQUIRES: no guard or PrefetchBatch of this pool is alive
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Returns the page latched shared, reading it from disk on a miss. kDataLoss when the page
  // fails its checks; the bad image never enters the cache.
  StatusOr<PageReadGuard> FetchRead(
      PageId id, IoCause cause = IoCause::kDemand, Retention retention = Retention::kNormal,
      PrefetchBatch* prefetched = nullptr) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  StatusOr<PageWriteGuard> FetchWrite(PageId id, IoCause cause = IoCause::kDemand,
                                      Retention retention = Retention::kNormal)
      GROVE_NO_THREAD_SAFETY_ANALYSIS;
  // Like FetchRead, but only if the latch can be taken without waiting. An OK result with an empty
  // guard means "busy": the caller must back off (used to move right-to-left without deadlock).
  StatusOr<PageReadGuard> TryFetchRead(PageId id, IoCause cause = IoCause::kScan)
      GROVE_NO_THREAD_SAFETY_ANALYSIS;

  // A new page that was never written: no read; the frame is zeroed, initialised with `type` and
  // `id`, and dirty. REQUIRES: `id` was just allocated.
  StatusOr<PageWriteGuard> NewPage(PageId id, PageType type,
                                   Retention retention = Retention::kNormal)
      GROVE_NO_THREAD_SAFETY_ANALYSIS;

  // Drops page `id` if it is resident (it was freed). REQUIRES: the caller holds no guard on it.
  void Discard(PageId id) GROVE_NO_THREAD_SAFETY_ANALYSIS;

  // Makes every page of `ids` resident, reading the missing ones in one IO submission. Missing
  // pages that follow each other in `ids` and on disk (an extent: a huge leaf, a page group's
  // segment) are read with one IO each run of up to kMaxRunPages; every page is still checked on
  // its own (checksum, own id, epoch) and a bad one does not keep its neighbours out.
  Status LoadMany(const std::vector<PageId>& ids, IoCause cause) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  static constexpr size_t kMaxRunPages = 256;

  bool IsResident(PageId id) { return table_.Contains(id); }

  // Copies the current image of page `id` into `out` (kPageSize bytes, 4 KiB aligned): from the
  // cache when resident, otherwise read from disk and verified without entering the cache. For
  // background readers that must not disturb what is cached (model training). A page changed
  // right after the residency check may be copied in its previous state; such readers tolerate
  // that.
  Status ReadCopy(PageId id, char* out, IoCause cause);

  // --- Checkpoint support (one checkpoint at a time; writers paused during SnapshotDirty). ---
  // Captures every dirty page for a checkpoint of `epoch`: marks the frames clean and flushing,
  // and returns their ids in ascending order. Copies nothing: a writer that changes a captured
  // page first copies it into a spare frame (checkpoint_snapshot.h), so the snapshot costs memory
  // only for the pages changed while it is written, and that within the pool's limit.
  std::vector<PageId> SnapshotDirty(uint32_t epoch);
  // Copies the captured images [first, first + count) (indexes into SnapshotDirty's ids), as
  // they were at the capture and sealed with its epoch, into `out` (count * kPageSize bytes).
  // REQUIRES: between SnapshotDirty and EndCheckpoint.
  void CopySnapshot(size_t first, size_t count, char* out) {
    snapshot_.CopyImages(first, count, out);
  }
  // Ends the checkpoint begun by SnapshotDirty. On failure the captured pages become dirty again.
  void EndCheckpoint(bool success);
  uint64_t dirty_pages() const { return snapshot_.dirty_pages(); }
  // Frames held for the running checkpoint's images that are not dirty (captured frames not
  // changed since, and the copies of those that were): not evictable either.
  uint64_t flushing_pages() const { return snapshot_.flushing_pages(); }
  // The frames the pool may use now (its limit), and the most it can be given.
  uint64_t capacity_pages() const { return evictor_.capacity(); }
  uint64_t max_capacity_pages() const { return frames_.size(); }
  // Moves the limit to `pages` (clamped to [16, max_capacity_pages()]). Shrinking evicts clean,
  // unpinned frames above the new limit at once and returns their memory to the system; frames
  // that cannot go now (pinned, dirty, being written) go as later misses evict them, since a miss
  // over the limit reuses a victim's frame instead of taking a free one. The limit is soft: when
  // no frame can be evicted, a miss takes a free frame rather than fail. Returns the frames in
  // use afterwards.
  uint64_t SetCapacityPages(uint64_t pages) { return evictor_.SetCapacity(pages); }
  // Frames holding a page or being loaded (at most max_capacity_pages()).
  uint64_t frames_in_use() const { return evictor_.in_use(); }
  // Read misses (FetchRead, TryFetchRead, LoadMany but for IoCause::kPrefetch) whose page was
  // evicted within the last ghost_pages evictions (see BufferPoolOptions). A FetchWrite's miss is
  // not counted: a variant whose writes fetch pages because its own cache let records go
  // (TreeLine's write-backs, and their prefetch) would otherwise count its own cache's shortage
  // as the pool's.
  uint64_t ghost_hits() const { return evictor_.ghost_hits(); }
  void RecordWrites(IoCause cause, uint64_t pages);
  void RecordReads(IoCause cause, uint64_t pages);

  BufferPoolStats GetStats() const;

 private:
  friend class PageReadGuard;
  friend class PageWriteGuard;
  friend class PrefetchBatch;
  using Frame = buffer_internal::Frame;
  using FrameState = buffer_internal::FrameState;

  // The frame of `id`, pinned, or null when absent. `touch` counts the access for the replacer.
  Frame* PinIfPresent(PageId id, Retention retention, bool touch = true);
  void Touch(Frame* frame, Retention retention) {
    evictor_.replacer().Touch(frames_.IndexOf(frame), retention);
  }
  // A frame for a new page (Evictor::Reserve), waiting up to kCheckpointWait for a running
  // checkpoint when the frames it is writing are all that stands in the way.
  static constexpr std::chrono::seconds kCheckpointWait{10};
  StatusOr<uint32_t> ReserveFrame();
  // Maps `id` to the reserved frame `index` in `state`, its history and dirty state fresh; false
  // when someone mapped `id` first.
  bool Install(PageId id, uint32_t index, FrameState state);
  // The page in `frame` is gone (discarded, or its load failed): unmapped, invalid, forgotten by
  // the replacer, clean. REQUIRES: the caller pins the frame.
  void Drop(PageId id, Frame* frame);
  // After a read: verify, then publish or invalidate. Returns the page's status.
  Status FinishLoad(Frame* frame, PageId id, Status io_status, uint32_t bytes,
                    IoCause cause) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  void Unpin(Frame* frame) { frame->pins.fetch_sub(1, std::memory_order_acq_rel); }
  Status VerifyImage(const char* image, PageId id);
  // `for_write`: a FetchWrite, whose miss is not counted as a ghost hit (see ghost_hits).
  Status LoadPinned(Frame** frame_out, PageId id, IoCause cause, Retention retention,
                    PrefetchBatch* prefetched,
                    bool for_write = false) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  // A traversal confirmed the page `id` of `prefetched`: copies its image into the loading
  // `frame` and publishes it. False when it was not prefetched or the image does not verify.
  bool AdmitPrefetched(Frame* frame, PageId id, PrefetchBatch* prefetched);

  IoBackend* const io_;
  File* const file_;
  const EpochTable* const epochs_;
  buffer_internal::FrameArray frames_;
  buffer_internal::PageTable table_;
  buffer_internal::Evictor evictor_;
  buffer_internal::CheckpointSnapshot snapshot_;
  buffer_internal::SidePool side_;

  std::atomic<uint64_t> hits_{0}, misses_{0}, checksum_failures_{0};
  std::array<std::atomic<uint64_t>, kNumIoCauses> reads_{}, writes_{};
};

}  // namespace grove
