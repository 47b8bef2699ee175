#pragma once

// The `treeline` variant: TreeLine (Yu et al., "TreeLine: An Update-In-Place Key-Value Store for
// Modern Storage", PVLDB 16(1), 2022; ../shared/specs/treeline.md). docs/variants.md describes how
// it maps onto Grove; docs/formats/treeline.md its pages.
//
// Shape: the B+-tree core (index/core/tree.h) is TreeLine's index from segment lower bounds to
// segments: each level-1 cell names a segment (segment.h: an extent of 1..16 pages and the linear
// model that places records in it). Base pages may have one overflow page each (page.h). In
// memory, a record cache (record_cache.h) holds the newest version of every record written since
// it last reached a page, and an insert forecaster (forecast.h) counts inserts per key range.
//
//   Get:        record cache; else the segment's page (one read), then its overflow page.
//   Put/Delete: record cache only (blind: the replaced cell is released when the write reaches its
//               page). When the cache is over capacity, eviction writes the victim's page back
//               with every dirty record of that page (same-page batching). Without the cache
//               (cache: false), the write's own page is written back at once.
//   Write-back: records go into the base page, then into its overflow page (allocated the first
//               time); when both are full the segment is queued for reorganisation.
//   Reorganisation (a maintenance unit of the background thread): the full segment and its
//               neighbours with overflow pages, within `radius` on each side under the same
//               level-1 node, are rebuilt with the dirty records of their range into new segments
//               (PLA models, page groups), which replace them in the core at once.
//   Scans:      the segment's pages from the start key on, read with one IO (LoadMany), merged
//               with the record cache's range (cache wins, tombstones drop).
//
// Durability: the record cache is memory only. Its oldest dirty LSN bounds the WAL's redo point
// and its blob cells are listed for recovery (index.h); a background thread writes back what is
// too old or too much (beyond capacity, or cold while more than dirty_share of the entries are
// dirty), and Shutdown writes back the rest, so a clean stop replays nothing.
// Write-backs and reorganisations run inside writes or maintenance units, so a checkpoint never
// sees one half done; an overflow page and the base page that points to it are written by the same
// checkpoint (the double-write file makes it atomic), which keeps the paper's "overflow first"
// order.
//
// Concurrency:
//   * The core's level-1 node P above a segment guards the segment: readers and write-backs hold
//     it shared (a reader latches its pages shared; a write-back latches the base page, then its
//     overflow page, exclusively); Phase I of a reorganisation holds it exclusively for a moment
//     to mark its segments busy, and Phase IV holds the path from P up as far as a split of P may
//     reach while it swaps the segments (treeline_reorg.cc).
//   * Busy segments are skipped by write-backs (their records stay dirty) from Phase I to the
//     end; since in-flight write-backs held P shared, the segments' pages are stable meanwhile
//     and the reorganisation reads them without holding P. One background thread runs every
//     reorganisation, so only it changes the core's structure.
//   * The record cache has its own mutex. It is taken after page latches (a write-back holds its
//     pages while the cache hands it the dirty records and marks them clean, so no write can free
//     a replaced cell that the page is taking) and no latch is taken while holding it: Get admits
//     what it read after letting the page go, under a read ticket (record_cache.h).
// Lock order: inner latches top-down -> data page latches (base, then overflow) -> record cache
// -> state_mu_.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/background.h"
#include "index/core/tree.h"
#include "index/treeline/forecast.h"
#include "index/treeline/memory_split.h"
#include "index/treeline/page.h"
#include "index/treeline/record_cache.h"
#include "index/treeline/segment.h"
#include "index/variant.h"
#include "util/mutex.h"

namespace grove {

namespace treeline {

struct Config {
  double goal = 0.815;            // records per page, as a share of what fits (44 of 54)
  double epsilon = -1;            // model error, as a share of what fits; < 0: (1 - goal) / 2
  bool grouping = true;           // false: every segment one page
  bool cache = true;              // false: every write goes to its page at once (cache bypass)
  bool optimistic = false;        // admit a fetched page's other records at priority 1
  bool batched_writeback = true;  // false: a write-back writes only the evicted record
  bool forecasting = false;
  uint64_t forecast_epoch = 100000;
  uint32_t forecast_partitions = 1000;
  double forecast_future_epochs = 1;
  int radius = 5;             // reorganisation reaches this many neighbours on each side
  double pool_share = 0.05;   // share of cache_bytes for the buffer pool; the rest caches records
  double pool_max_share = 0;  // the pool may grow to this share (memory_split.h); 0: fixed
  double dirty_share = 0.5;   // cold dirty records are written back while more are dirty
};

// Parses and checks the parameters (errors name the parameter).
StatusOr<Config> ParseConfig(const ParamMap& params);

}  // namespace treeline

class TreeLine final : public Index {
 public:
  static VariantSpec Spec();
  static StatusOr<std::unique_ptr<Index>> Create(const IndexContext& ctx, const ParamMap& params);
  static StatusOr<std::unique_ptr<Index>> Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata);
  ~TreeLine() override;

  StatusOr<bool> Get(Slice key, std::string* cell) override;
  Status Prepare(Slice key) override;
  uint64_t PagesDirtiedPerOp() const override { return cfg_.cache ? 0 : 2; }
  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override;
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override;
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;
  std::string SerializeMetadata() override;
  Lsn OldestUnpersistedLsn() const override { return cache_.OldestDirtyLsn(); }
  void ListMemoryOnlyCells(std::vector<std::string>* cells) override { cache_.DirtyCells(cells); }
  void Shutdown() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  // --- Used by the cursor (treeline_read.cc) ---
  core::BTreeCore& tree() { return *tree_; }
  treeline::RecordCache& cache() { return cache_; }
  // Pages a cursor's read of a segment takes to return about `records` records from a key
  // somewhere inside its first page, at the tree's current records per page (page_entries_ over
  // data and overflow pages), 1..16. kScanRecordsHint stands in when the caller gave no
  // CursorOptions::expected_entries.
  static constexpr uint64_t kScanRecordsHint = 64;
  int ScanPagesFor(uint64_t records) const;
  // Pages [first, last] of `seg`, base and overflow, latched shared (in `guards`, base pages in
  // order, then overflow pages), with their records merged per page, ascending. Base pages are
  // read with one IO, overflow pages with another. REQUIRES: the caller holds the segment's
  // level-1 node latched, or the segment is busy (a reorganisation's own reads).
  struct SegmentRead {
    std::vector<PageReadGuard> guards;
    std::vector<treeline::Record> records;
    std::vector<PageId> overflow;
  };
  Status ReadPages(const treeline::Segment& seg, int first, int last, IoCause cause,
                   SegmentRead* out);

 private:
  struct ReorgTask {
    PageId segment;   // the full segment's first page, as it was queued
    std::string key;  // a key it holds
  };
  struct VerifyTotals;
  using DirtyMap = std::map<std::string, std::optional<std::string>>;

  TreeLine(const IndexContext& ctx, const treeline::Config& cfg);
  Status AttachCore(Slice* metadata);
  treeline::BuildOptions BuildOptionsFor(double goal_scale) const;

  // The key range [*low, *high) of page `i` of `seg`, whose segment has `fences` (no high: open).
  void PageRange(const treeline::Segment& seg, int i, const core::Fences& fences, std::string* low,
                 std::string* high, bool* has_high) const;
  // DataLoss unless `data` is page `index` of `seg` (its overflow page when `overflow`).
  Status CheckDataPage(const char* data, PageId id, const treeline::Segment& seg, int index,
                       bool overflow) const;
  StatusOr<PageReadGuard> ReadDataPage(PageId id, const treeline::Segment& seg, int index,
                                       bool overflow, IoCause cause);

  // --- Writes (treeline_write.cc) ---
  void NoteLsn(Lsn lsn);
  // After a write of `key`: evicts until the cache fits, writing back a few dirty victims' pages
  // with `room`, and leaves the rest to the background thread (a write cannot wait for room).
  // Without the cache, writes back `key`'s own page instead.
  void MakeRoom(Slice key, WriteRoom* room);
  enum class WriteBackResult { kDone, kBusy, kNoRoom, kFull };
  // Makes the base pages of `keys` resident, the missing ones read with one IO submission
  // (BufferPool::LoadMany), before their write-backs latch them one by one. Best effort: a page
  // that fails here is read (and its failure reported) by the write-back itself.
  void PrefetchBasePages(const std::vector<std::string>& keys);
  // Writes the dirty records of the page holding `key` (or only `key`'s, without batched
  // write-back) into it. kFull: some did not fit base and overflow; the segment is queued.
  StatusOr<WriteBackResult> WriteBack(Slice key, WriteRoom* room, uint64_t* prepaid);
  void QueueReorganisation(PageId segment, std::string key);
  void NoteBackgroundError(const char* what, const Status& s);

  // --- Reorganisation (treeline_reorg.cc) ---
  // Rebuilds the task's segment and its neighbours with overflow pages within `radius`. When the
  // unit's room cannot be extended enough, returns kResourceExhausted with *need_pages set.
  Status Reorganise(const ReorgTask& task, int radius, WriteRoom* room, uint64_t* need_pages);
  // The goal scale for rebuilding `records` over `old_pages` pages of range [low, high): forecast
  // inserts leave room (paper §4.6); 1 without forecasting.
  // The most new pages one reorganisation builds: a quarter of the buffer pool, at most an
  // extent's 256 pages (the pool has 256 pages at least, so 64 at least: a full segment of 16
  // pages with 16 overflow pages rebuilt at the goal fill takes some 40).
  uint64_t ReorganisationBudgetPages() const;
  double ForecastScale(const std::vector<treeline::Record>& records, uint64_t old_pages,
                       const std::string& low, const std::string* high) const;

  // --- Verify (treeline_verify.cc) ---
  void VerifySegment(Slice payload, const core::Fences& fences, const DirtyMap& dirty,
                     IndexVerifier* v, VerifyTotals* t);
  void VerifyPage(const char* data, PageId id, const treeline::Segment& seg, int index,
                  const core::Fences& fences, const DirtyMap& dirty, IndexVerifier* v,
                  VerifyTotals* t) const;

  // --- Background work (treeline.cc) ---
  // One round of the background thread: queued reorganisations, then write-backs; whether
  // another is ready at once.
  bool BackgroundRound();

  enum class ReorgResult { kDone, kFailed, kLater };
  // kDone: it ran (or found nothing to do); kFailed: it failed and was logged; kLater: no
  // maintenance unit can run yet (recovery is replaying the log) or any more (closing).
  ReorgResult RunReorganisation(const ReorgTask& task);
  // Runs the queued reorganisations, in order; stops at the first that does not run.
  ReorgResult RunQueuedReorganisations();
  // One unit of write-backs; whether any was done.
  bool FlushRound();
  // Whether more of the record cache is dirty than dirty_share.
  bool TooDirty() const;
  // Moves memory between the buffer pool and the record cache (memory_split.h), at most every
  // kSplitIntervalNanos; background thread only.
  void Rebalance();
  // Whether write-backs must leave `segment` alone: it is being reorganised, or full and queued
  // for a reorganisation (its records wait in the cache; retrying would copy them every time).
  bool Waiting(PageId segment) const GROVE_EXCLUDES(state_mu_);
  // Shutdown: writes every dirty record of the cache back (reorganising full segments on the
  // way) in maintenance units, so that the final checkpoint leaves nothing to replay. Stops at
  // the first unit that cannot run.
  void WriteBackAll();

  IndexContext ctx_;
  BufferPool* const pool_;
  const treeline::Config cfg_;
  treeline::RecordCache cache_;
  treeline::InsertForecaster forecaster_;
  std::unique_ptr<core::BTreeCore> tree_;

  mutable Mutex state_mu_;
  std::set<PageId> busy_ GROVE_GUARDED_BY(state_mu_);  // segments being reorganised
  std::set<PageId> overflowed_
      GROVE_GUARDED_BY(state_mu_);                       // segments known to have overflow pages
  std::set<PageId> queued_ GROVE_GUARDED_BY(state_mu_);  // segments in reorg_queue_
  std::vector<ReorgTask> reorg_queue_ GROVE_GUARDED_BY(state_mu_);

  // Shape (persisted).
  std::atomic<uint64_t> page_entries_{0};  // records on pages (the cache's not counted)
  std::atomic<uint64_t> segments_{1};
  std::atomic<uint64_t> segments_single_{1};  // segments of one page
  std::atomic<uint64_t> data_pages_{1};
  std::atomic<uint64_t> overflow_pages_{0};
  // Activity since open.
  std::atomic<uint64_t> latest_lsn_{0};
  std::atomic<uint64_t> writebacks_{0}, writeback_records_{0}, overflows_created_{0};
  std::atomic<uint64_t> reorganisations_{0}, reorg_segments_in_{0}, reorg_segments_out_{0};
  std::atomic<uint64_t> page_reads_{0}, overflow_reads_{0};
  LogThrottle error_log_;

  // The memory split (background thread only, but for the atomics).
  treeline::MemorySplit split_;
  uint64_t next_split_ns_ = 0;
  uint64_t split_pool_ghosts_ = 0, split_cache_ghosts_ = 0;  // counts at the last Rebalance
  std::atomic<uint64_t> read_ghost_hits_{0};  // record misses a larger cache would have hit
  std::atomic<uint64_t> split_pool_bytes_{0};

  uint64_t reorg_pause_until_ns_ = 0;  // background thread only
  // Last: stopped (by Shutdown or its destructor) before anything it uses is destroyed.
  BackgroundThread bg_;
};

}  // namespace grove
