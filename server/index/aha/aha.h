#pragma once

// The `aha` variant: AHA-tree (Xing and Aref, "Investigation of Adaptive Hotspot-Aware Indexes for
// Oscillating Write-Heavy and Read-Heavy Workloads"; ../shared/specs/aha-tree.md), a buffer tree
// whose every node owns an LSM buffer. docs/variants.md describes how it maps onto Grove and what
// is built so far; docs/formats/aha.md its runs.
//
// Built so far: the write-optimised buffer tree. The root's buffer (the rootLSM) is a memtable
// above levels of sorted runs (run.h); below it, a tree of nodes (node.h) each with a buffer of
// two levels, formed from the root's last level and grown by level-emptying and splits
// (aha_tree.cc). Hot ranges (configured or detected) adapt: their buffers are emptied and their
// leaves turned into B+-tree leaf pages (aha_hot.cc, page_leaf.h).
//
//   Put/Delete: the active memtable (blind writes: a version replaced in the memtable is handed
//               back, one replaced in a run is released when a merge drops it).
//   Get:        the active memtable, the frozen ones newest first, then every buffer on the path
//               from the root to the key's leaf: level 0 newest run first, then one run per
//               deeper level (disjoint runs); the first version found wins (a tombstone:
//               absent). Bloom filters answer most absent keys.
//   Scans:      a merge of the memtables and the tree, whose nodes open as the scan reaches them.
//   Flush:      a full memtable is frozen, written into runs and installed at the top of level 0.
//   Compaction: leveled, as in LevelDB: level 0 into level 1 when it has `l0_runs` runs; a run of
//               level i into level i+1 when level i exceeds its size (level 1: l0_runs memtables,
//               then x `level_ratio`). Outputs are cut at the root's routing keys. When the last
//               level exceeds its size, it is pushed down to the children (the first time: it
//               forms the tree).
//   Below:      node buffers compact, push down, split (aha_tree.cc); hot ranges adapt one node
//               per step, parents first (aha_hot.cc).
//
// Durability: the memtables are memory only; the WAL keeps their records (OldestUnpersistedLsn)
// and their blob cells are listed for recovery. A memtable is flushed before it is full once it
// holds back a quarter of checkpoint.wal_bytes of log (or 200,000 records), so the log stays
// within about 1.25x checkpoint.wal_bytes, and Shutdown flushes them all, so a clean stop
// replays nothing. Runs are written outside the buffer pool
// (RunSpace tracks them in flight, retired and freed); the metadata names the live runs, and a
// flush or compaction becomes visible to checkpoints in one maintenance unit that installs its
// outputs, retires its inputs and releases the cells it dropped.
//
// Concurrency:
//   * Readers take a snapshot: the active memtable and the published Version (frozen memtables,
//     levels), both immutable apart from the active memtable's own locking. Old versions keep
//     their runs alive (shared_ptr), so RunSpace frees a retired run only after its last reader.
//   * mem_mu_ (shared): writers hold it shared while they write into the active memtable; a
//     freeze holds it exclusively while it swaps the memtable and publishes the new Version, so a
//     reader's snapshot (taken under it, shared) never misses a frozen table.
//   * One background thread (bg_) freezes, flushes, compacts and changes the tree; it alone changes
//   the
//     levels and nodes, so a new Version is always derived from the current one without
//     conflicts, and work planned on one version is installed on a version with the same tree.
// Lock order: mem_mu_ -> state_mu_ -> (memtable's, RunSpace's own mutexes).

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/aha/memtable.h"
#include "index/aha/merge.h"
#include "index/aha/node.h"
#include "index/aha/run.h"
#include "index/aha/run_space.h"
#include "index/background.h"
#include "index/variant.h"
#include "util/mutex.h"

namespace grove {

namespace aha {

// [lo, hi): a key range range searches favour.
struct HotRange {
  std::string lo, hi;
  bool operator==(const HotRange&) const = default;
};

// Sorted by lo, overlapping and touching ranges merged.
std::vector<HotRange> MergeHotRanges(std::vector<HotRange> ranges);

struct Config {
  double pool_share = 0.75;     // of cache_bytes for the buffer pool; the rest holds the memtables
  uint64_t memtable_bytes = 0;  // freeze threshold; 0: half the memtables' share of the cache
  uint32_t run_pages = 256;     // largest run (extent)
  double bloom_bits_per_key = 10;
  uint32_t l0_runs = 4;      // level 0 runs that start a compaction into level 1
  uint32_t root_levels = 3;  // the rootLSM's disk levels: L0, L1, L2
  double level_ratio = 10;
  uint32_t readahead_pages = 8;  // scan read-ahead within a run
  uint32_t fanout = 64;          // most children of a node
  uint64_t node_pages = 2048;    // a node buffer's size limit (pages, >= 2 x run_pages)
  uint32_t node_l0_runs = 8;     // level 0 runs of a node buffer that start its compaction
  // Hot ranges and adaptation (aha_hot.cc).
  std::vector<HotRange> hot_ranges;  // configured
  bool hot_detect = true;            // also detect one from range searches
  // When hot ranges adapt: when range searches meet them (the paper), as soon as they hold
  // buffered data (eager: ahead of a known read phase), or never.
  enum class Adapt { kQuery, kEager, kOff } adapt = Adapt::kQuery;
  bool down_split = true;  // split: down (true) | side
  LeafAlloc leaf_alloc = LeafAlloc::kEven;
  // Writes to adapted leaves: through the buffers like every write (batch insert, false), or
  // straight into the leaf pages when their memtable is flushed (tree insert, true).
  bool tree_insert = false;
};

StatusOr<Config> ParseConfig(const ParamMap& params);

// What readers see; immutable once published.
struct Version {
  std::vector<std::shared_ptr<const MemTable>> frozen;  // being flushed, newest first
  std::shared_ptr<const Node> root;                     // its levels are the rootLSM's disk levels
};

}  // namespace aha

class AhaTree final : public Index {
 public:
  static VariantSpec Spec();
  static StatusOr<std::unique_ptr<Index>> Create(const IndexContext& ctx, const ParamMap& params);
  static StatusOr<std::unique_ptr<Index>> Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata);
  ~AhaTree() override;

  StatusOr<bool> Get(Slice key, std::string* cell) override;
  Status Prepare(Slice key) override;
  uint64_t PagesDirtiedPerOp() const override { return 0; }
  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override;
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override;
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;

  Status PrepareCheckpoint(uint64_t epoch) override;
  std::string SerializeMetadata() override;
  Lsn OldestUnpersistedLsn() const override;
  void ListMemoryOnlyCells(std::vector<std::string>* cells) override;
  void OnCheckpointDurable(uint64_t epoch) override { space_.OnCheckpointDurable(epoch); }
  void OnCheckpointAbandoned(uint64_t epoch) override { space_.OnCheckpointAbandoned(epoch); }
  void Shutdown() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  // A reader's view: the active memtable and the published version.
  struct Snapshot {
    std::shared_ptr<const aha::MemTable> active;
    std::shared_ptr<const aha::Version> version;
  };
  Snapshot TakeSnapshot() const;
  BufferPool* pool() const { return pool_; }
  const aha::Config& config() const { return cfg_; }

 private:
  AhaTree(const IndexContext& ctx, const aha::Config& cfg);
  Status Restore(Slice* metadata);
  void Start();
  std::shared_ptr<const aha::Version> current() const;
  void Publish(std::shared_ptr<const aha::Version> v);
  uint64_t FreezeBytes() const;
  uint64_t LevelLimitPages(size_t level) const;

  // --- Writes (aha_write.cc) ---
  Status Write(const WriteContext& w, Slice key, bool tombstone, Slice cell,
               std::optional<std::string>* old_cell);
  // Tree insert: a frozen table's versions bound for the pages of adapted leaves.
  struct DirectLeaf {
    aha::Path path;
    std::vector<aha::Entry> entries;  // ascending keys
  };
  // Splits `table` into the versions that go into runs (*rest) and those merged straight into
  // adapted leaves' pages (*direct): a key's version goes to the pages only when no buffer on
  // its path holds an older version of it, so the pages stay the oldest versions (freshness).
  Status SplitForTreeInsert(const aha::Version& v, std::shared_ptr<const aha::MemTable> table,
                            std::vector<aha::Entry>* rest, std::vector<DirectLeaf>* direct);

  // --- Background work (aha_compact.cc) ---
  // One round of the background thread: a step; whether another is ready at once.
  bool BackgroundRound();
  // One step of background work; whether it did anything.
  StatusOr<bool> Step();
  // Whether a memtable whose oldest record is `first` holds the log back too far (records or
  // bytes): it is then flushed before it is full.
  bool HoldsTooMuchLog(Lsn first) const;
  Status Freeze();
  Status FlushOldest();
  // A compaction of the root's level `level`, or its push-down when it is the last.
  StatusOr<bool> RootStep(const aha::Version& v, int level);
  // Level `from` of the node at `path` into level from + 1 (from 0: every run of level 0), cut
  // at the node's routing keys (guarded compaction).
  Status Compact(const aha::Path& path, size_t from);
  // The level of the root buffer that most needs a compaction (score >= 1), or -1. The last
  // level's score says when to push it down (or form the tree).
  int PickCompaction(const aha::Version& v) const;
  // Merges `sources` (freshest first) into runs cut at `run_pages` and at `guards` (sorted; may
  // be null); written in units of one run. Shadowed versions' cells go to *released; tombstones
  // are dropped with `bottom`.
  Status WriteRuns(std::vector<std::unique_ptr<aha::Source>> sources, bool bottom,
                   const std::vector<std::string>* guards,
                   std::vector<std::shared_ptr<const aha::Run>>* out,
                   std::vector<std::string>* released);
  // Writes the builder's run, in a unit of its own unless `in_unit` is false (bulk loads).
  Status FinishRun(aha::RunBuilder* builder, std::vector<std::shared_ptr<const aha::Run>>* out,
                   bool in_unit);
  // Makes background work visible in one unit: `edit` changes a copy of the current version,
  // `outputs` become installed, `retired` are retired and `released` cells released. The
  // outputs are abandoned when the unit fails.
  // Leaf pages likewise: `page_extents` written are installed, `retired_pages` retired.
  Status Install(const std::function<void(aha::Version*)>& edit,
                 const std::vector<std::shared_ptr<const aha::Run>>& outputs,
                 const std::vector<std::shared_ptr<const aha::Run>>& retired,
                 const std::vector<std::string>& released,
                 const std::vector<aha::PageExtent>& page_extents = {},
                 const aha::LeafPages& retired_pages = {});
  void AbandonPages(const std::vector<aha::PageExtent>& extents);
  void AbandonOutputs(const std::vector<std::shared_ptr<const aha::Run>>& outputs);

  // --- The tree (aha_tree.cc) ---
  enum class NodeWorkKind {
    kNone,
    kCompact,
    kEmpty,
    kSplitLeaf,
    kSplitInner,
    kMergePages,
    kSplitPages
  };
  struct NodeWork {
    NodeWorkKind kind = NodeWorkKind::kNone;
    aha::Path path;
  };
  // The first node, parents before children, over a limit: too many children, a buffer over
  // node_pages or with too many level 0 runs.
  NodeWork FindNodeWork(const aha::Version& v) const;
  Status DoNodeWork(const NodeWork& w);
  // Level-emptying: the bottom level of the node's buffer moves to its children's level 0 (a
  // run straddling a routing key is cut first). The root as a leaf: the first tree formation.
  Status EmptyLevel(const aha::Path& path);
  Status FormTree();
  // A leaf's whole buffer compacted and shared out among new sibling leaves (multi-way split).
  Status SplitLeaf(const aha::Path& path);
  // A node with too many children split in two, its buffer split at the separator. The root
  // keeps its buffer and gets two children instead.
  Status SplitInner(const aha::Path& path);
  // Guards of a node's compactions: its routing keys and the hot bounds inside its range.
  std::vector<std::string> Guards(const aha::Node& node, const aha::KeyRange& range) const;
  // Every run of a node's buffer, as merge sources freshest first (level 0 run by run, each
  // deeper level as one) read for compaction, and the runs themselves in *inputs.
  void BufferSources(const aha::Node& node, std::vector<std::unique_ptr<aha::Source>>* sources,
                     std::vector<std::shared_ptr<const aha::Run>>* inputs) const;
  // `run` rewritten into pieces cut at `guards`; nothing is dropped.
  Status CutRun(const std::shared_ptr<const aha::Run>& run, const std::vector<std::string>& guards,
                std::vector<std::shared_ptr<const aha::Run>>* pieces);
  void NoteBackgroundError(const char* what, const Status& s);

  // --- Hot ranges and adaptation (aha_hot.cc) ---
 public:
  // The hot ranges in force: the configured ones and the detected one, sorted, disjoint.
  std::vector<aha::HotRange> HotRanges() const;
  // A finished range search's span, from its first to its last key: the detector's input; a
  // search that meets a hot range asks for adaptation.
  void NoteScan(Slice first, Slice last, uint64_t runs_opened);

 private:
  enum class AdaptKind { kNone, kFreeze, kForm, kEmptyHot, kTransform, kMergePages };
  struct AdaptWork {
    AdaptKind kind = AdaptKind::kNone;
    aha::Path path;
  };
  // Parents first (one level at a time, paper §5): the memtable when it holds versions in the
  // hot ranges and `writes_quiet` (the root buffer's memory part: every search there would merge
  // it), then the first node whose buffer holds hot-range runs, or hot leaf still in runs.
  AdaptWork FindAdaptWork(const Snapshot& snap, const std::vector<aha::HotRange>& hot,
                          bool writes_quiet) const;
  Status DoAdaptWork(const AdaptWork& w, const std::vector<aha::HotRange>& hot);
  // Hotspot-emptying (§4.5): the node's runs that meet a hot range are cut at its routing keys
  // and the hot bounds; the hot pieces go to the children's level 0, the rest stays in place.
  Status EmptyHot(const aha::Path& path, const std::vector<aha::HotRange>& hot);
  // Leaf transformation (§6): a leaf meeting a hot range is split at the hot bounds, down (it
  // becomes an inner node over one empty leaf per part, keeping its buffer) or side (compacted
  // into sibling leaves); a wholly hot leaf's runs become leaf pages.
  Status Transform(const aha::Path& path, const std::vector<aha::HotRange>& hot);
  // An adapted leaf's buffer merged into its pages, copy-on-write.
  Status MergePages(const aha::Path& path);
  // An adapted leaf with too many pages split in two (its buffer empty): no IO.
  Status SplitPages(const aha::Path& path);
  // The detector's guess from the recent range searches, or nothing.
  std::vector<aha::HotRange> DetectLocked(const aha::Version& v) const GROVE_REQUIRES(hot_mu_);

  IndexContext ctx_;
  BufferPool* const pool_;
  const aha::Config cfg_;
  aha::RunSpace space_;

  mutable SharedMutex mem_mu_;
  std::shared_ptr<aha::MemTable> active_ GROVE_GUARDED_BY(mem_mu_);
  mutable Mutex state_mu_;
  std::shared_ptr<const aha::Version> version_ GROVE_GUARDED_BY(state_mu_);

  // Activity (since open unless said).
  std::atomic<Lsn> latest_lsn_{0};
  std::atomic<uint64_t> flushes_{0}, compactions_{0}, compaction_bytes_read_{0},
      compaction_bytes_written_{0}, flush_bytes_{0}, tombstones_dropped_{0}, cells_released_{0};
  std::atomic<uint64_t> gets_{0}, runs_probed_{0}, filter_skips_{0}, stalls_{0};
  std::atomic<uint64_t> bulk_load_us_{0};
  std::atomic<uint64_t> run_index_rebuilds_{0};  // at open: runs whose index page was damaged
  std::atomic<uint64_t> bg_steps_{0};  // background steps that did work (Prepare's pacing)
  // Admission control's inputs, kept where they change (Write, Freeze, Publish) so that Prepare
  // takes no lock: the active memtable's bytes, the frozen ones', the root's level 0 runs.
  std::atomic<uint64_t> active_bytes_{0}, frozen_bytes_{0}, root_l0_runs_{0};

  std::atomic<uint64_t> formations_{0}, pushdowns_{0}, runs_moved_{0}, runs_cut_{0},
      leaf_splits_{0}, inner_splits_{0}, node_compactions_{0};

  mutable Mutex hot_mu_;
  std::vector<aha::HotRange> detected_ GROVE_GUARDED_BY(hot_mu_);
  std::vector<aha::HotRange> hot_ GROVE_GUARDED_BY(hot_mu_);  // configured and detected, merged
  std::vector<std::pair<std::string, std::string>> spans_ GROVE_GUARDED_BY(hot_mu_);  // ring
  uint64_t spans_seen_ GROVE_GUARDED_BY(hot_mu_) = 0;
  std::atomic<bool> adapt_requested_{false};
  std::atomic<bool> adapting_{false};
  std::atomic<uint64_t> adapt_start_ns_{0};
  std::atomic<uint64_t> adaptations_{0}, last_adaptation_us_{0}, adaptation_us_total_{0},
      first_adaptation_us_{0}, adapt_steps_{0}, transforms_{0}, page_merges_{0},
      hot_runs_emptied_{0}, scans_{0}, scan_runs_{0}, detections_{0}, tree_inserts_{0},
      tree_insert_merges_{0};

  // Background thread only.
  std::vector<std::string> compact_pointer_;  // per root level: where the next compaction starts
  bool tree_work_ = true;                     // the tree may have a node over its limits
  int turn_ = 0;                              // whose turn: root compaction, node work, adaptation
  Lsn quiet_lsn_ = 0;                         // the latest LSN when last seen to change
  uint64_t quiet_since_ns_ = 0;               // and when

  LogThrottle error_log_;
  // Last: stopped (by Shutdown or its destructor) before anything it uses is destroyed.
  BackgroundThread bg_;
};

}  // namespace grove
