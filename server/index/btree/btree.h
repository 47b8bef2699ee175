#pragma once

// The baseline `btree` variant: a B+-tree of 4 KiB slotted pages (node.h) with update in place.
//
// Root: the root keeps its page id for the life of the tree. A root split moves the root's content
// into a new child and turns the root into an inner node above it; a root with a single child
// absorbs that child. So no separate root pointer needs latching.
//
// Concurrency (latch coupling on page latches):
//   * Readers descend with shared latches, taking the child's latch before releasing the parent's.
//   * Writers first try optimistically: shared latches down to the leaf's parent, an exclusive
//     latch on the leaf. If the leaf can absorb the change without a split or merge, that is all a
//     write holds. Otherwise they restart pessimistically: exclusive latches from the root, letting
//     go of every ancestor as soon as a child is "safe" (cannot split on insert / cannot underflow
//     on delete). A split or merge therefore holds exactly the pages it changes.
//   * Latch order: top-down, and left-to-right among siblings. A merge with a left sibling first
//     releases the node (its parent stays exclusively latched, so nobody can reach the node
//     meanwhile), then latches left, then node.
//   * Cursors copy one leaf's entries at a time and hold no latch between calls; they find the next
//     leaf by descending again with the leaf's fence key, so they never follow a sibling pointer
//     that may have gone stale.
//
// Deletes reclaim space by merging: a node left below a quarter full merges with its right sibling
// (or, for the last child, its left sibling) under the same parent when the union fits in one page;
// the emptied page is freed. Otherwise it stays underfull (lazy: no redistribution).
//
// Bulk load writes leaves and inner nodes packed to `fill_factor` straight to disk through the
// DirectPageWriter, in contiguous runs of up to 256 pages, and installs the top node into the root.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/btree/node.h"
#include "index/registry.h"
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
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;
  std::string SerializeMetadata() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  PageId root() const { return root_; }

  // How a descent chooses the child at each inner node.
  enum class Seek { kAtOrAfter, kBefore, kLast };
  // Fence keys of the leaf a descent reached: the leaf holds keys in [low, high).
  struct Fences {
    std::string low, high;
    bool has_low = false, has_high = false;
  };
  using Path = std::array<PageId, predict::kMaxLevels>;
  // Descends with shared latches to the leaf for `key` under `mode` and returns it latched. With
  // `batch`, a prefetched page is used where the traversal asks for exactly that page; `path`
  // receives the page visited at each level (index = node level).
  StatusOr<PageReadGuard> DescendToLeaf(Slice key, Seek mode, IoCause cause, Fences* fences,
                                        PrefetchBatch* batch = nullptr, Path* path = nullptr);
  // DescendToLeaf with SHORTCUT's one-shot path prefetch when `prefetch` is on (btree_shortcut.cc):
  // predict the page of every level, read the uncached ones in one submission, then traverse.
  StatusOr<PageReadGuard> DescendPredicted(Slice key, Seek mode, IoCause cause, Fences* fences);

 private:
  BTree(const IndexContext& ctx, double fill_factor, PageId root,
        const predict::ShortcutOptions& prefetch);

  // --- SHORTCUT (btree_shortcut.cc) ---
  // The shape the path models are trained on: every level below the root, nodes in key order
  // with their lower fences, collected from inner nodes only.
  Status CollectShape(predict::TreeSnapshot* snap);

  Retention RetentionFor(uint16_t level) const {
    return level > 0 ? Retention::kHigh : Retention::kNormal;
  }
  bool InsertSafe(const btree::NodeView& n) const;
  bool DeleteSafe(const btree::NodeView& n) const;
  size_t MinFill(const btree::NodeView& n) const { return n.capacity() / 4; }

  // Latches the leaf for `key` exclusively with shared latches above it (the optimistic path).
  StatusOr<PageWriteGuard> LatchLeafOptimistic(Slice key);
  // Exclusive latches from the root; keeps only the nodes that may change. `safe` decides.
  Status LatchPathPessimistic(Slice key, bool for_insert, std::vector<PageWriteGuard>* path);

  // What a chain of splits along a latched path may need: the new nodes, and the right sibling of
  // the leaf that splits (its left link changes). All of it is acquired before the first change,
  // so that a failure (no free frame, an unreadable sibling) leaves the tree as it was.
  struct SplitPlan {
    std::vector<PageWriteGuard> spares;  // formatted new nodes, NewNode'd for their level
    PageWriteGuard leaf_right;
  };
  // Plans the insert of a cell into path.back(); `leaf_fits` says whether the leaf takes it
  // without a split. Ancestors are assumed to receive separators of max_key_ bytes, so the plan
  // may hold more than the splits use. On failure the plan is empty and nothing changed.
  Status PlanSplits(const std::vector<PageWriteGuard>& path, bool leaf_fits, SplitPlan* plan);
  // Frees the new nodes the splits did not use and releases the sibling.
  void ReleasePlan(SplitPlan* plan);
  StatusOr<PageWriteGuard> TakeSpare(SplitPlan* plan, uint16_t level);

  // Inserts (key, payload) into path.back(), splitting upwards as needed with planned nodes.
  Status InsertWithSplits(std::vector<PageWriteGuard>* path, SplitPlan* plan, std::string key,
                          std::string payload);
  // Splits the node at path[i] while inserting (key, payload); returns the new right sibling's
  // separator and id through *sep / *right.
  Status SplitInsert(PageWriteGuard& node, SplitPlan* plan, Slice key, Slice payload,
                     std::string* sep, PageId* right);
  // Moves the root's content into a new child so that the root can take a separator.
  Status GrowRoot(std::vector<PageWriteGuard>* path, SplitPlan* plan);
  // Merges underfull nodes bottom-up along `path` after a removal from path.back().
  Status Rebalance(std::vector<PageWriteGuard>* path, Slice key);
  Status MergeSiblings(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& parent,
                       int sep_index);
  Status ShrinkRoot(PageWriteGuard& root);
  StatusOr<PageWriteGuard> NewNode(uint16_t level);
  void FreeNode(PageWriteGuard& node);

  Status VerifySubtree(PageId id, int expected_level, const Fences& fences, IndexVerifier* v,
                       std::vector<PageId>* leaves, uint64_t* entries);

  IndexContext ctx_;
  BufferPool* const pool_;
  const double fill_factor_;
  const PageId root_;
  const size_t max_key_;
  const size_t max_cell_;
  std::atomic<uint32_t> height_{1};
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> leaf_pages_{1};
  std::atomic<uint64_t> inner_pages_{0};
  std::atomic<uint64_t> splits_{0};
  std::atomic<uint64_t> merges_{0};
  // Path prediction (prefetch: shortcut | shortcut_base); null when off. Declared last so that its
  // background thread stops before the rest of the tree goes away.
  std::unique_ptr<predict::PathPredictor> predictor_;
};

}  // namespace grove
