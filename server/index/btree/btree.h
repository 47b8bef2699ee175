#pragma once

// The baseline `btree` variant: the B+-tree core (index/core/tree.h) with one 4 KiB page per leaf
// (index/core/leaf_node.h), updated in place. Layout in docs/formats/tree.md.
//
// Concurrency, on top of the core's latch coupling:
//   * Readers descend with shared latches to the level-1 node and latch the leaf shared before
//     they let go of it.
//   * Writers first try optimistically: the same descent, then the leaf latched exclusively. If
//     the leaf can absorb the change without a split or merge, that is all a write holds.
//     Otherwise they restart with the core's pessimistic path (LatchPath) and latch the leaf under
//     the exclusive level-1 node, so a split or merge holds exactly the pages it changes.
//   * A leaf split latches the leaf's right sibling too (left to right), to link the new leaf in.
//     A merge with a left sibling first releases the leaf (its level-1 node stays exclusive, so
//     nobody can reach it meanwhile), then latches left, then the leaf, then the leaf after the
//     pair.
//   * Cursors copy one leaf's entries at a time and hold no latch between calls
//   (core::BatchCursor).
//
// Deletes reclaim space by merging: a leaf left below a quarter full merges with its right
// sibling (or, for the last child, its left sibling) under the same level-1 node when the union
// fits in one page; the emptied page is freed and the core merges inner nodes upward. Otherwise
// it stays underfull (lazy: no redistribution).
//
// Bulk load writes leaves packed to `fill_factor` straight to disk through the DirectPageWriter in
// contiguous runs of up to 256 pages, and the core builds the inner levels above them.
//
// SHORTCUT (prefetch: shortcut | shortcut_base, btree_shortcut.cc): the predictor learns every
// level below the root from the inner nodes; leaf splits and merges are reported to it as level 0
// and the core reports the inner levels.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/core/leaf_node.h"
#include "index/core/readahead.h"
#include "index/core/tree.h"
#include "index/variant.h"
#include "predict/path_predictor.h"

namespace grove {

class BTree final : public Index {
 public:
  static VariantSpec Spec();

  static StatusOr<std::unique_ptr<Index>> Create(const IndexContext& ctx, const ParamMap& params);
  static StatusOr<std::unique_ptr<Index>> Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata);

  StatusOr<bool> Get(Slice key, std::string* cell) override;
  Status BatchGet(const std::vector<Slice>& keys,
                  std::vector<std::optional<std::string>>* cells) override;
  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override;
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override;
  Status Prepare(Slice key) override;
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;
  std::string SerializeMetadata() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  PageId root() const { return tree_->root(); }

  // Descends to the leaf for `key` under `mode` and returns it latched shared, with its fences.
  // With `batch`, a prefetched page is used where the traversal asks for exactly that page;
  // `path` receives the page visited at each level; `at_parent` sees the level-1 node above the
  // leaf while it is latched (a scan picks the leaves to read ahead there).
  StatusOr<PageReadGuard> DescendToLeaf(Slice key, core::Seek mode, IoCause cause,
                                        core::Fences* fences, PrefetchBatch* batch = nullptr,
                                        core::Path* path = nullptr,
                                        const core::ParentVisitor* at_parent = nullptr);
  // DescendToLeaf with SHORTCUT's one-shot path prefetch when `prefetch` is on (btree_shortcut.cc):
  // predict the page of every level, read the uncached ones in one submission, then traverse.
  // The predicted pages go into `batch` when given (a scan's readahead batch), else a batch of
  // this lookup's own.
  StatusOr<PageReadGuard> DescendPredicted(Slice key, core::Seek mode, IoCause cause,
                                           core::Fences* fences, PrefetchBatch* batch = nullptr,
                                           const core::ParentVisitor* at_parent = nullptr);

 private:
  BTree(const IndexContext& ctx, double fill_factor, const predict::ShortcutOptions& prefetch);
  // Creates (metadata null) or opens the core under this tree, reporting to the predictor.
  Status AttachCore(const Slice* metadata);

  // --- SHORTCUT (btree_shortcut.cc) ---
  Status CollectShape(predict::TreeSnapshot* snap);

  size_t MinFill(const core::LeafView& n) const { return n.capacity() / 4; }
  // The largest cell a leaf may have to take, with the largest key.
  size_t LargestCellBytes() const { return SlottedPageView::CellBytes(max_key_, max_cell_); }

  // Inserts or replaces within `leaf` when the cell fits there; false when a split is needed.
  bool PutInPlace(PageWriteGuard& leaf, Slice key, Slice cell,
                  std::optional<std::string>* old_cell);
  // The pessimistic halves of Put and Delete (btree.cc).
  Status PutWithSplit(Slice key, Slice cell, std::optional<std::string>* old_cell);
  Status DeleteWithMerge(Slice key, std::optional<std::string>* old_cell);
  StatusOr<PageWriteGuard> NewLeaf();
  void FreeLeaf(PageWriteGuard& leaf);

  IndexContext ctx_;
  BufferPool* const pool_;
  const double fill_factor_;
  const size_t max_key_;
  const size_t max_cell_;
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> leaf_pages_{1};
  std::atomic<uint64_t> splits_{0};
  std::atomic<uint64_t> merges_{0};
  std::unique_ptr<core::BTreeCore> tree_;
  // Path prediction (prefetch: shortcut | shortcut_base); null when off. The core reports to it.
  // Declared last so that its background thread (which reads the tree) stops before the tree
  // goes away.
  std::unique_ptr<predict::PathPredictor> predictor_;
};

}  // namespace grove
