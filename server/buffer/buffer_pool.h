#pragma once

// BufferPool: the page cache over the data file, and the only way to reach page memory.
//
// 4 KiB frames (cache_bytes / 4096), up to a limit that may move at run time (SetCapacityPages:
// a variant that shares its budget with a cache of its own moves memory between the two; the
// arena is mapped at the largest size, and frames released below the limit give their memory
// back with MADV_DONTNEED). A page is found through a sharded page
// table; a miss takes a frame from the free list or by CLOCK eviction and reads the page with the
// IO backend, then checks its checksum, own id and epoch (EpochTable) before anyone sees it.
//
// Access is through RAII guards only: PageReadGuard holds the frame's latch shared, PageWriteGuard
// exclusive; both pin the frame so it cannot be evicted. Dropping the guard releases both.
//
// No-steal: a dirty frame is never evicted; only a checkpoint writes pages. SnapshotDirty captures
// the dirty set while writers are paused, without copying it: each captured frame gets a slot in
// the checkpoint's arena. CompleteSnapshot, after writers resume, copies what is still uncopied;
// a writer that changes a captured page first copies it out itself (copy on write, in
// PageWriteGuard::mutable_data and Discard), so the arena holds every page exactly as it was at
// the snapshot while writers pause only for the capture. EndCheckpoint releases the frames.
// Frames captured by a checkpoint stay pinned in memory ("flushing") until their in-place write
// is durable, so a page is never read back from disk while its newest image is on its way there.
//
// Prefetching: PrefetchBatch reads pages speculatively into a small side pool. A prefetched page
// enters the cache only when a traversal confirms it (FetchRead with the batch, for exactly that
// page id, and the page verifies); unconfirmed pages are dropped and counted as wasted.
//
// Cache hits take no lock: a lock-free hint table (buckets of four frame indexes, each bucket
// owned by one page-table shard, written under its lock) names the frame that probably holds a
// page; the reader checks the frame's page id and state, pins it, and checks the state again. An
// evictor marks the frame free before it claims the pins (compare-and-swap 0 -> 1), and a reader
// pins before it checks, so one of them always sees the other (both are sequentially consistent):
// the reader backs off, or the evictor does. A hint that is stale or missing only sends the
// reader to the shard's table under its mutex. Pins are only ever added and subtracted (never
// stored), because a reader's tentative pin may land on any frame.
//
// Frame state machine (state changes under the page-table shard lock of the frame's page):
//
//     kFree --(miss: reserve + insert)--> kLoading --(read ok)--> kResident
//       ^                                    |                        |
//       |                              (read failed)          (evict / discard)
//       |                                    v                        |
//       +------------(pin == 0)-------- kInvalid <--------------------+
//
// Lock order: eviction mutex -> page-table shard mutex -> frame latch is never held while taking
// the eviction mutex or a shard mutex, except that a loader holds its new frame's latch (no one
// else can hold it yet). Page latches among themselves are ordered by the index (top-down,
// left-to-right; see index/btree/btree.h).
//
// Thread safety: every public method is safe for concurrent use. A page latch passes from the
// function that takes it (FetchRead, FetchWrite, NewPage, a loader) to the guard that releases
// it: an ownership clang's analysis cannot follow, so those functions and the guards' releases
// are left out of it (GROVE_NO_THREAD_SAFETY_ANALYSIS); the mutexes keep their annotations.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grove/io_backend.h"
#include "grove/stats.h"
#include "grove/status.h"

#include "page/epoch_table.h"
#include "page/page.h"
#include "util/ghost_set.h"
#include "util/mutex.h"

namespace grove {

// How long a page should stay. kNormal pages get CLOCK's second chance. kHigh pages (inner nodes)
// have a budget, BufferPoolOptions::high_retention_fraction of the frames: within it they are never
// evicted; beyond it they are the first to go. So the fraction caps what inner nodes may hold
// (experiments size it as "x% of the inner nodes cached") as much as it protects them.
enum class Retention : uint8_t { kNormal = 1, kHigh = 5 };

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
class PrefetchBatch;

namespace buffer_internal {

enum class FrameState : uint8_t { kFree, kLoading, kResident, kInvalid };

struct Frame {
  std::atomic<PageId> page_id{kInvalidPageId};
  std::atomic<uint32_t> pins{0};
  std::atomic<FrameState> state{FrameState::kFree};
  std::atomic<uint8_t> usage{0};
  std::atomic<bool> high{false};  // accessed with Retention::kHigh
  std::atomic<bool> dirty{false};
  std::atomic<bool> flushing{false};
  // Captured by the running checkpoint and not yet copied out: the page's slot in the
  // checkpoint's arena (-1: none). See SnapshotDirty.
  std::atomic<int32_t> snap_slot{-1};
  SharedMutex latch;
  char* data = nullptr;
};

}  // namespace buffer_internal

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
  ~BufferPool();  // REQUIRES: no guard or PrefetchBatch of this pool is alive
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

  bool IsResident(PageId id);

  // Copies the current image of page `id` into `out` (kPageSize bytes, 4 KiB aligned): from the
  // cache when resident, otherwise read from disk and verified without entering the cache. For
  // background readers that must not disturb what is cached (model training). A page changed
  // right after the residency check may be copied in its previous state; such readers tolerate
  // that.
  Status ReadCopy(PageId id, char* out, IoCause cause);

  // --- Checkpoint support (one checkpoint at a time; writers paused during SnapshotDirty). ---
  // Captures every dirty page for a checkpoint of `epoch`: sizes *arena (kPageSize apiece,
  // ascending page id), marks the frames clean and flushing, and returns their ids in the same
  // order. The images reach the arena, sealed with `epoch`, by CompleteSnapshot or by the first
  // change of each page, whichever comes first.
  StatusOr<std::vector<PageId>> SnapshotDirty(uint32_t epoch, AlignedBuffer* arena);
  // Copies the captured pages not copied yet; afterwards the arena is complete and no writer
  // touches it. REQUIRES: after SnapshotDirty, before the arena is read or EndCheckpoint.
  void CompleteSnapshot();
  // Ends the checkpoint begun by SnapshotDirty. On failure the captured pages become dirty again.
  void EndCheckpoint(bool success);
  uint64_t dirty_pages() const { return dirty_count_.load(std::memory_order_relaxed); }
  // Frames held for the running checkpoint's in-place writes (not evictable either).
  uint64_t flushing_pages() const { return flushing_count_.load(std::memory_order_relaxed); }
  // The frames the pool may use now (its limit), and the most it can be given.
  uint64_t capacity_pages() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t max_capacity_pages() const { return num_frames_; }
  // Moves the limit to `pages` (clamped to [16, max_capacity_pages()]). Shrinking evicts clean,
  // unpinned frames above the new limit at once and returns their memory to the system; frames
  // that cannot go now (pinned, dirty, being written) go as later misses evict them, since a miss
  // over the limit reuses a victim's frame instead of taking a free one. The limit is soft: when
  // no frame can be evicted, a miss takes a free frame rather than fail. Returns the frames in
  // use afterwards.
  uint64_t SetCapacityPages(uint64_t pages);
  // Frames holding a page or being loaded (at most max_capacity_pages()).
  uint64_t frames_in_use() const;
  // Read misses (FetchRead, TryFetchRead, LoadMany but for IoCause::kPrefetch) whose page was
  // evicted within the last ghost_pages evictions (see BufferPoolOptions). A FetchWrite's miss is
  // not counted: a variant whose writes fetch pages because its own cache let records go
  // (TreeLine's write-backs, and their prefetch) would otherwise count its own cache's shortage
  // as the pool's.
  uint64_t ghost_hits() const { return ghost_hits_.load(std::memory_order_relaxed); }
  void RecordWrites(IoCause cause, uint64_t pages);
  void RecordReads(IoCause cause, uint64_t pages);

  BufferPoolStats GetStats() const;

 private:
  friend class PageReadGuard;
  friend class PageWriteGuard;
  friend class PrefetchBatch;
  using Frame = buffer_internal::Frame;
  using FrameState = buffer_internal::FrameState;

  static constexpr int kShardBits = 6;
  static constexpr int kShards = 1 << kShardBits;
  struct Shard {
    Mutex mu;
    std::unordered_map<PageId, uint32_t> table GROVE_GUARDED_BY(mu);  // page id -> frame index
  };
  static uint64_t Hash(PageId id) { return id * 0x9E3779B97F4A7C15ull; }
  Shard& ShardOf(PageId id) { return shards_[Hash(id) >> (64 - kShardBits)]; }

  // Hint table: the top bits of a page's hash pick its bucket, so a bucket's pages all belong to
  // the shard named by the bucket index's top kShardBits bits, and that shard's mutex serialises
  // the bucket's writers.
  static constexpr int kHintWays = 4;
  struct alignas(16) HintBucket {
    std::array<std::atomic<uint32_t>, kHintWays> frame;
  };
  HintBucket& BucketOf(PageId id) { return hints_[Hash(id) >> (64 - hint_bits_)]; }
  // The frame of `id`, pinned, if the hints name it and it is resident; null otherwise (the
  // caller then looks in the shard's table).
  Frame* PinHinted(PageId id);
  // Records frame `index` as the holder of `id`. REQUIRES: the shard of `id` locked.
  void HintLocked(PageId id, uint32_t index);

  // Pins the resident or loading frame of `id`, or returns null when absent. `touch` counts the
  // access for CLOCK.
  Frame* PinIfPresent(PageId id, Retention retention, bool touch = true);
  // Takes a frame out of circulation for a new page: free list first, then CLOCK.
  StatusOr<uint32_t> ReserveFrame();
  // One CLOCK pass of up to seven sweeps: a frame evicted (or an invalid one reclaimed), pinned
  // and free for reuse, or kNoFrame. *passed_high is set when a high-retention frame within its
  // share was passed over.
  uint32_t ClockVictimLocked(bool* passed_high) GROVE_REQUIRES(evict_mu_);
  // One attempt of ReserveFrame: kResourceExhausted when every frame is pinned, dirty, flushing
  // or protected.
  StatusOr<uint32_t> ReserveFrameOnce();
  void ReturnFrame(uint32_t index);
  // A read miss of `id`: counted in ghost_hits when its page was evicted lately.
  void CountGhostHit(PageId id);
  // Puts an evicted (pinned, free) frame back on the free list and gives its memory back.
  void ReleaseFrameLocked(uint32_t index) GROVE_REQUIRES(evict_mu_);
  uint64_t InUseLocked() const GROVE_REQUIRES(evict_mu_) {
    return num_frames_ - free_frames_.size();
  }
  // kHigh frames protected from eviction up to this many: a share of the current limit.
  uint64_t HighLimit() const {
    return static_cast<uint64_t>(high_fraction_ * static_cast<double>(capacity_pages()));
  }
  // Inserts `id` -> frame in the table, unless someone else inserted `id` first (then returns
  // false and the caller uses theirs).
  bool InstallLocked(Shard& shard, PageId id, uint32_t index, FrameState state)
      GROVE_REQUIRES(shard.mu);
  // After a read: verify, then publish or invalidate. Returns the page's status.
  Status FinishLoad(Frame* frame, PageId id, const IoOp& op,
                    IoCause cause) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  Status FinishLoad(Frame* frame, PageId id, Status io_status, uint32_t bytes,
                    IoCause cause) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  void InvalidateAndUnpin(Frame* frame, PageId id);
  void Unpin(Frame* frame);
  Status VerifyImage(const char* image, PageId id);
  // `for_write`: a FetchWrite, whose miss is not counted as a ghost hit (see ghost_hits).
  Status LoadPinned(Frame** frame_out, PageId id, IoCause cause, Retention retention,
                    PrefetchBatch* prefetched,
                    bool for_write = false) GROVE_NO_THREAD_SAFETY_ANALYSIS;
  void MarkDirty(Frame* frame);
  // Copy on write for a captured frame (see SnapshotDirty). REQUIRES: the frame's latch held
  // (exclusively by a writer, or shared by CompleteSnapshot).
  void CopyOutCaptured(Frame* frame);
  // Records an access with `retention` (usage count, high-retention membership).
  void Touch(Frame* frame, Retention retention);
  // The frame leaves the page table: it no longer counts as a high-retention page.
  void ForgetHigh(Frame* frame);
  // Evicts frames_[index] if it is resident, unpinned, clean and not being flushed; the frame is
  // then pinned and free for reuse. Caller holds evict_mu_.
  bool TryEvictLocked(uint32_t index) GROVE_REQUIRES(evict_mu_);
  // An over-budget high-retention frame to reuse, oldest first; kNoFrame if none can go.
  uint32_t EvictOverBudgetHighLocked() GROVE_REQUIRES(evict_mu_);
  static constexpr uint32_t kNoFrame = UINT32_MAX;

  IoBackend* const io_;
  File* const file_;
  const EpochTable* const epochs_;
  const uint32_t num_frames_;
  const double high_fraction_;   // BufferPoolOptions::high_retention_fraction
  std::atomic<uint64_t> limit_;  // frames the pool may use (SetCapacityPages)
  GhostSet ghost_;               // evicted pages (BufferPoolOptions::ghost_pages)
  const uint64_t ghost_window_;
  std::atomic<uint64_t> ghost_hits_{0};
  char* arena_ = nullptr;  // num_frames_ * kPageSize bytes, mmap'ed (heap if mmap failed)
  bool mmapped_ = true;
  std::unique_ptr<Frame[]> frames_;
  std::array<Shard, kShards> shards_;
  const int hint_bits_;  // log2 of the number of hint buckets (>= kShardBits)
  std::unique_ptr<HintBucket[]> hints_;

  mutable Mutex evict_mu_;
  std::vector<uint32_t> free_frames_ GROVE_GUARDED_BY(evict_mu_);
  uint32_t clock_hand_ GROVE_GUARDED_BY(evict_mu_) = 0;
  // Frames in the order they became high-retention (may hold stale entries: a frame is checked
  // when it is taken). Over budget, these go before CLOCK runs, so the budget is a cap: with a
  // budget of 0 an inner node stays only until the next miss. Lock order: evict_mu_ or a shard's
  // mu, then high_mu_; nothing is acquired while holding high_mu_.
  Mutex high_mu_;
  std::deque<uint32_t> high_queue_ GROVE_GUARDED_BY(high_mu_);

  // Frames captured by the running checkpoint.
  Mutex checkpoint_mu_;
  std::vector<std::pair<uint32_t, PageId>> flushing_ GROVE_GUARDED_BY(checkpoint_mu_);
  // The running snapshot's arena and epoch (set while writers are paused, read by writers that
  // copy a captured frame out under its latch).
  std::atomic<char*> snap_arena_{nullptr};
  std::atomic<uint32_t> snap_epoch_{0};

  // Side pool for PrefetchBatch.
  Mutex side_mu_;
  std::vector<char*> side_free_ GROVE_GUARDED_BY(side_mu_);
  AlignedBuffer side_arena_;

  std::atomic<uint64_t> dirty_count_{0};
  std::atomic<uint64_t> flushing_count_{0};
  std::atomic<uint64_t> resident_{0};
  std::atomic<uint64_t> high_count_{0};
  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0}, checksum_failures_{0};
  std::array<std::atomic<uint64_t>, kNumIoCauses> reads_{}, writes_{};
  std::atomic<uint64_t> prefetch_issued_{0}, prefetch_used_{0}, prefetch_wasted_{0};
};

// Speculative reads of pages a lookup expects to need (SHORTCUT's one-shot path prefetch). Owned
// by one thread for the duration of one lookup. Pages already resident are not read. Issue() sends
// every read in one submission into side-pool buffers; FetchRead(id, ..., this) consumes a
// prefetched page only when the traversal asks for exactly that id and the image verifies.
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
  std::unique_ptr<IoQueue> queue_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace grove
