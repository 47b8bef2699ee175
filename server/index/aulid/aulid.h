#pragma once

// The `aulid` variant: AULID (Lan et al., 2023): B+-tree leaves of the core (leaf_node.h: one
// 4 KiB slotted page, sibling-linked) under a learned inner part (inner.h) that indexes only the
// upper bound of each leaf. docs/variants.md tells the design; docs/formats/aulid.md the pages.
//
// Keys are variable-length byte strings; the inner part works on an 8-byte projection:
// Proj(k) = the 8 bytes of k after the tree's key prefix P (the prefix that makes lookups walk
// the fewest leaves, prefix.h: chosen at bulk load and again when a split finds a long run,
// TryReindex), 0 for keys below P's range and UINT64_MAX above it.
// Proj is monotone but not injective, so leaves are grouped into *runs*:
//
//   * Leaves form one chain in key order (left/right links). A run is a maximal stretch of the
//     chain whose leaf-to-leaf boundaries are not projection-strict; a leaf's kRunContinues flag
//     says that its right sibling is in its run.
//   * The inner part holds one entry per run but the last: (p, first leaf of the run), where p
//     bounds the projections of the run's keys; every key of the run has Proj in (p', p], p' the
//     previous entry's. The last run (the *tail*, the paper's last leaf, reached without the
//     inner part when Proj(key) is above every entry) starts at tail_.
//   * A key's leaf: Route(Proj(key)) names the run; within it, the last leaf whose smallest key
//     is <= key (or the run's first). With 8-byte integer keys a run is one leaf, so this is the
//     paper's lookup: one page per mixed level, a packed array or branch page, then the leaf (and
//     one sibling for the predecessor case ScanFward cannot settle).
//
// A full leaf splits as Algorithm 1 says: the new page takes the smaller half and is linked in to
// the left, the original keeps the larger half, so the entry naming it stays valid. If the
// original starts its run and the halves can be cut where the projection changes, the new leaf
// starts a run of its own and its entry goes into the inner part; otherwise the new leaf joins
// the run (and, if the original started it, the run's entry is repointed to the new leaf: the
// paper's duplicate option (b)). So Put never needs inner room it cannot get: when the write's
// room cannot cover an inner insert (a conversion), the leaf joins the run instead.
//
// Concurrency: inner_mu_ (reader-writer). Lookups, cursors and in-place leaf writes hold it
// shared and take page latches one at a time (leaf writes exclusively); the leaf chain and the
// inner part change only under it exclusively (splits, merges, Adjust rebuilds). A writer that
// finds its leaf full (or underfull) lets go and retries exclusively. Lock order: inner_mu_ ->
// page latches. Under the shared lock, inner pages then leaves left to right; under the
// exclusive lock nobody else latches inner pages, so a split or merge latches its leaves left to
// right and then the inner pages it changes.
//
// Deletes remove from the leaf in place. A leaf left under a quarter full merges into its left
// neighbour when both are in one run (only the chain changes), or takes in its right neighbour:
// in one run likewise; when the leaf is a run of its own, the two runs become one (the leaf's
// inner entry goes, the next run's is repointed to it: the paper's merge, one inner entry less).
// A merge happens only when the two fit in one page, the way btree merges.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/aulid/inner.h"
#include "index/core/cursor.h"
#include "index/core/leaf_node.h"
#include "index/variant.h"
#include "util/mutex.h"

namespace grove {

class Aulid final : public Index {
 public:
  static VariantSpec Spec();
  static StatusOr<std::unique_ptr<Index>> Create(const IndexContext& ctx, const ParamMap& params);
  static StatusOr<std::unique_ptr<Index>> Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata);

  StatusOr<bool> Get(Slice key, std::string* cell) override;
  uint64_t PagesDirtiedPerOp() const override { return kPagesPerOp; }
  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override;
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override;
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;
  std::string SerializeMetadata() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  // The leaf, the new leaf and its left neighbour of a split, and one inner page (a repoint).
  static constexpr uint64_t kPagesPerOp = 4;
  static constexpr uint16_t kRunContinues = 1;  // leaf flag

  // The projection the inner part works on (see above).
  uint64_t Proj(Slice key) const GROVE_REQUIRES_SHARED(inner_mu_);

 private:
  class Cursor;
  struct Config {
    double fill = 0.9;  // core::kBulkLoadFill
    aulid::InnerOptions inner;
  };
  static StatusOr<Config> ParseConfig(const ParamMap& params);
  Aulid(const IndexContext& ctx, const Config& cfg);

  // Where a key belongs: its leaf, and the run that leaf is in.
  struct Target {
    PageId leaf = kInvalidPageId;
    PageId run_start = kInvalidPageId;
    std::optional<uint64_t> run_key;  // the run's inner entry; none for the tail
  };
  // REQUIRES: inner_mu_ held (shared or exclusive). With `exact` (splits), the run's inner
  // entry is found even where a lookup would step along the chain.
  // `cost` and `leaves_read` (may be null) count the pages read; `leaf` (may be null) receives
  // the chosen leaf latched shared, so that a lookup does not fetch it again.
  StatusOr<Target> Locate(Slice key, bool exact, aulid::RouteCost* cost, uint64_t* leaves_read,
                          PageReadGuard* leaf = nullptr) GROVE_REQUIRES_SHARED(inner_mu_);
  // The run after the one starting at `start`: its first leaf (read through the chain).
  StatusOr<PageId> NextRunStart(PageId start, uint64_t* leaves_read);
  // Under a quarter full: a delete then tries to merge the leaf with a neighbour.
  static bool Underfull(const core::LeafView& v) { return v.used_bytes() < v.capacity() / 4; }
  // The pessimistic half of Delete: under inner_mu_ exclusively, merge the (underfull) leaf of
  // `key` with a neighbour when the two fit in one page and the runs allow it.
  // `leaf` is where the delete of `key` left it.
  // *halfway: it failed after changing pages (and fail-stopped the store).
  Status MergeUnderfull(const WriteContext& w, Slice key, PageId leaf, bool* halfway)
      GROVE_EXCLUDES(inner_mu_);
  static constexpr uint64_t kMergeMaxWalk = 64;  // leaves of a run walked to find the leaf
  // The pessimistic half of Put: under inner_mu_ exclusively, split the leaf and insert.
  Status PutWithSplit(const WriteContext& w, Slice key, Slice cell,
                      std::optional<std::string>* old_cell) GROVE_EXCLUDES(inner_mu_);
  // Inserts or replaces in `leaf` if the cell fits; false when it does not.
  static bool PutInPlace(PageWriteGuard& leaf, Slice key, Slice cell,
                         std::optional<std::string>* old_cell);
  Status AdjustIfNeeded(const WriteContext& w, uint64_t key,
                        const aulid::InnerPart::AdjustHint& hint) GROVE_REQUIRES(inner_mu_);
  // Re-derives the key prefix from the keys the tree holds now and, if it changed, recomputes the
  // runs (leaf flags) and rebuilds the inner part over them, when the write's room covers it.
  Status TryReindex(const WriteContext& w) GROVE_REQUIRES(inner_mu_);
  static constexpr uint64_t kReindexRunLeaves = 16;  // a split walking this many leaves tries it
  static constexpr uint64_t kReindexMaxLeaves = 1 << 16;  // beyond, the walk would stall writers
  static uint64_t ProjWith(const std::string& prefix, Slice key);
  StatusOr<PageWriteGuard> NewLeaf();

  IndexContext ctx_;
  BufferPool* const pool_;
  const Config cfg_;
  const size_t max_key_;
  const size_t max_cell_;
  SharedMutex inner_mu_;
  aulid::InnerPart inner_ GROVE_GUARDED_BY(inner_mu_);
  std::string prefix_ GROVE_GUARDED_BY(inner_mu_);            // the key prefix P
  PageId tail_ GROVE_GUARDED_BY(inner_mu_) = kInvalidPageId;  // first leaf of the last run
  // The last leaf (splits add leaves to the left; a merge may fold it into its left neighbour).
  PageId last_ GROVE_GUARDED_BY(inner_mu_) = kInvalidPageId;
  uint64_t last_entry_ = 0;  // the largest inner key (valid when the inner part is not empty)
  // Changes of the leaf chain's shape (splits and merges; read under the inner lock): a cursor
  // that carries its next leaf trusts it only while this stays the same.
  uint64_t ChainVersion() const {
    return splits_.load(std::memory_order_relaxed) + merges_.load(std::memory_order_relaxed);
  }

  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> leaf_pages_{0};
  std::atomic<uint64_t> splits_{0};
  std::atomic<uint64_t> run_joins_{0};  // splits whose new leaf joined its run
  std::atomic<uint64_t> merges_{0};
  std::atomic<uint64_t> merge_run_joins_{0};  // merges that joined two runs (an inner entry gone)
  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> lookup_inner_pages_{0};
  std::atomic<uint64_t> lookup_mixed_pages_{0};  // lookup_inner_pages_ by kind
  std::atomic<uint64_t> lookup_packed_pages_{0};
  std::atomic<uint64_t> lookup_branch_pages_{0};
  std::atomic<uint64_t> lookup_leaf_pages_{0};
  std::atomic<uint64_t> bulk_load_ms_{0};
  std::atomic<uint64_t> reindexes_{0};
  uint64_t reindex_tried_at_ = 0;  // leaf count at the last attempt; GROVE_GUARDED_BY(inner_mu_)
  aulid::InnerPart::Shape shape_;  // of the last bulk load or Verify; GROVE_GUARDED_BY(inner_mu_)
};

}  // namespace grove
