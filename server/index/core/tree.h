#pragma once

// BTreeCore: the inner levels of a B+-tree whose leaves belong to a variant. btree (one page per
// leaf), hln (huge leaves of subnodes) and the variants to come sit on it; docs/variants.md shows
// how, with a minimal variant written against it.
//
// The core owns the inner nodes (inner_node.h; every inner node of every variant has this one
// format and page type), the root, the height and the count of inner pages. A leaf is whatever
// the payload of its cell in a level-1 node names: a page id, plus fixed-size extras the variant
// chooses (TreeOptions::leaf_payload_bytes). The core gives variants:
//
//   * descent with latch coupling to the level-1 node above a key's leaf (DescendToParent), with
//     SHORTCUT's prefetch batch and the path it took;
//   * pessimistic latching of the path a structure change may touch (LatchPath);
//   * inserting a child into a level-1 node, splitting inner nodes upward and growing the root,
//     with every new page acquired before the first change (PlanInsert, InsertChild);
//   * removing a child and merging underfull inner nodes upward, shrinking the root
//     (RemoveChild);
//   * Verify of the inner levels, SHORTCUT's shape collection, and bulk building of the inner
//     levels above a sorted list of leaves;
//   * structure changes reported to a predict::TreeObserver (SHORTCUT's path predictor).
//
// Root: the root keeps its page id for the life of the tree and is always an inner node: a new
// tree is a root of level 1 above one leaf. A root that must split first moves its content into a
// new child; a root left with a single inner child absorbs it. So no root pointer needs latching.
//
// Concurrency (latch coupling on page latches):
//   * Descents take the child's latch before releasing the parent's. Shared descents end at the
//     level-1 node latched shared (or, on request, exclusively): while a variant holds it, no
//     structure change can touch the leaves below it, because every such change holds it
//     exclusively. What a variant does under a shared level-1 latch (latch the leaf, write in
//     place) is its own protocol.
//   * A structure change latches exclusively from the root down (LatchPath), letting go of every
//     ancestor as soon as a node below it is "safe" (cannot split when it gains a child / cannot
//     underflow when it loses one), so it holds exactly the nodes it may change.
//   * Latch order: top-down; among siblings left to right. A merge with a left sibling releases
//     the node first (its parent stays exclusive, so nobody can reach it meanwhile).
//   * RemoveChild lets go of the levels below a node before it latches that node's sibling:
//     whoever holds the sibling may be waiting for one of those lower nodes. Variants release
//     their leaf latches before they call it for the same reason.
// Lock order: inner latches top-down -> the variant's leaf latches -> buffer pool internals.

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/core/inner_node.h"
#include "index/variant.h"
#include "predict/path_predictor.h"
#include "predict/tree_observer.h"

namespace grove::core {

// The default fill of bulk-loaded pages (parameter fill_factor), one for every tree variant so
// that their sizes and split rates compare (docs/variants.md): room for a tenth more per page
// before the first splits.
inline constexpr const char* kBulkLoadFill = "0.9";

// The page types of the core (kLeafPage, kInnerPage), claimed once for every variant on it.
std::vector<PageTypeClaim> PageTypes();

struct TreeOptions {
  std::string name;               // for messages and Verify claims: "btree", "hln"
  size_t max_key = 128;           // longest key, so separators are at most this long
  size_t leaf_payload_bytes = 8;  // payload of a level-1 cell: the leaf's page id + extras
  predict::TreeObserver* observer = nullptr;  // may be null
};

// How a descent chooses the child at each node.
enum class Seek {
  kAtOrAfter,  // the child whose range holds the key
  kBefore,     // the child holding the largest keys below the key
  kLast,       // the last child (the key is ignored)
};

// The page visited at each level (index = node level; the variant fills level 0).
using Path = std::array<PageId, predict::kMaxLevels>;

// The level-1 node above the leaf a descent reached, latched shared or exclusively, with the
// leaf's position and the fences of the node.
struct ParentLatch {
  PageReadGuard shared;
  PageWriteGuard excl;
  Fences fences;  // of the level-1 node itself
  int child = 0;  // the leaf's cell in it
  const char* data() const { return excl ? excl.data() : shared.data(); }
  PageId id() const { return excl ? excl.id() : shared.id(); }
  Slice leaf_payload() const { return InnerNodeView(data()).payload(child); }
  Fences leaf_fences() const { return InnerNodeView(data()).ChildFences(child, fences); }
};

// A child of a level under construction (bulk load), as its parent will reference it.
struct ChildRef {
  std::string low;  // its lower fence; empty for the first child of a level
  std::string payload;
};

class BTreeCore {
 public:
  // A new tree: a root of level 1 above one leaf whose payload is `first_leaf`.
  static StatusOr<std::unique_ptr<BTreeCore>> Create(const IndexContext& ctx,
                                                     const TreeOptions& options, Slice first_leaf);
  // Reopens the tree from what Serialize() wrote, consumed from the front of *metadata.
  static StatusOr<std::unique_ptr<BTreeCore>> Open(const IndexContext& ctx,
                                                   const TreeOptions& options, Slice* metadata);
  // Appends root, height and inner page count (varints) to *out.
  void Serialize(std::string* out) const;

  PageId root() const { return root_; }
  // Levels including the leaves (>= 2).
  uint32_t height() const { return height_.load(std::memory_order_relaxed); }
  uint64_t inner_pages() const { return inner_pages_.load(std::memory_order_relaxed); }
  const TreeOptions& options() const { return options_; }
  // The observer, so that variants report their leaf level to the same one.
  predict::TreeObserver* observer() const { return options_.observer; }

  // Descends with shared latches to the level-1 node for `key`. With `exclusive`, the level-1
  // node is latched exclusively (its parent shared). With `batch`, a prefetched page is used where
  // the traversal asks for exactly that page; `path` receives the inner pages visited.
  StatusOr<ParentLatch> DescendToParent(Slice key, Seek mode, IoCause cause, bool exclusive,
                                        PrefetchBatch* batch = nullptr, Path* path = nullptr);

  // Latches exclusively, from the root, the path to the level-1 node for `key`, keeping only the
  // nodes a change below may reach: for kInsert those without room for one more separator, for
  // kRemove those that may underflow when they lose a child. path.back() is the level-1 node;
  // *fences receives its fences.
  enum class Change { kInsert, kRemove };
  Status LatchPath(Slice key, Change change, std::vector<PageWriteGuard>* path, Fences* fences);
  // The same for ReplaceChildren with `cells` new children of `cell_bytes` in all (their
  // separators and payloads): the level-1 node is kept alone when it has that much room; above it,
  // a node is kept unless it has room for as many more separators of max_key bytes.
  Status LatchPathToReplace(Slice key, size_t cells, size_t cell_bytes,
                            std::vector<PageWriteGuard>* path, Fences* fences);

  // What inserting one child into path.back() may need: a new inner node per level that splits
  // and two for the root. Acquired before anything changes, so that a failure (no free frame,
  // no space) leaves the tree as it was.
  struct SplitPlan {
    std::vector<PageWriteGuard> spares;  // formatted new inner nodes
  };
  // Plans the insert of a child with a separator of `separator_len` bytes into path.back();
  // ancestors are assumed to receive separators of max_key bytes. On failure the plan is empty.
  Status PlanInsert(const std::vector<PageWriteGuard>& path, size_t separator_len, SplitPlan* plan);
  // Inserts (separator -> payload) into path.back(), splitting upwards and growing the root as
  // planned; gives back the spares it did not use. REQUIRES: a plan from PlanInsert for this path.
  Status InsertChild(std::vector<PageWriteGuard>* path, SplitPlan* plan, std::string separator,
                     std::string payload);
  // Frees the spares of a plan that was not used.
  void ReleasePlan(SplitPlan* plan);

  // Replaces children [first, first + count) of path.back() with `cells` (separator -> leaf
  // payload, in key order), splitting inner nodes upward and growing the root as needed: a leaf
  // reorganisation that turns some leaves into others at once, so that no reader sees the range
  // half replaced. The first new child keeps the replaced first child's lower bound (cells[0]'s
  // key is ignored); the others' keys must lie strictly inside the replaced range, ascending.
  // Every new inner node is acquired before anything changes: on failure nothing did. REQUIRES: a
  // path from LatchPathToReplace for these cells, count >= 1, !cells.empty(). Releases `path`.
  Status ReplaceChildren(std::vector<PageWriteGuard>* path, int first, int count,
                         std::vector<Cell> cells);

  // Removes child `index` (>= 1) of path.back() (its leaf is already gone), then Rebalance().
  // `key` is a key the removed child held.
  Status RemoveChild(std::vector<PageWriteGuard>* path, int index, Slice key);
  // Merges underfull inner nodes with a sibling under the same parent, bottom-up along `path`
  // (only the nodes the path holds can change: with a path of the level-1 node alone, nothing
  // does), and lets the root absorb a single inner child. `key` locates the path's nodes in their
  // parents. Releases `path`. REQUIRES: the caller holds no leaf latch.
  Status Rebalance(std::vector<PageWriteGuard>* path, Slice key);

  // Walks every inner node: claims it, checks its type, level, structure and fences, and calls
  // `leaf(payload, fences)` for every level-1 child in key order. Counts against inner_pages().
  // `before_leaves` (may be null) gets the payloads of each level-1 node's children before they
  // are visited, so that a variant can read them ahead in one submission.
  using LeafVisitor = std::function<Status(Slice payload, const Fences& fences)>;
  using LeavesAhead = std::function<void(const std::vector<std::string>& payloads)>;
  Status Verify(IndexVerifier* v, const LeafVisitor& leaf, const LeavesAhead& before_leaves = {});

  // SHORTCUT's training data: the nodes of every level below the root in key order with their
  // projected lower fences, read from inner nodes only (copies that do not disturb the cache).
  // Level 0 comes from `leaves(payload, fences, level0)` per level-1 child; the default adds the
  // child's page with its lower fence.
  using LeafShape =
      std::function<void(Slice payload, const Fences& fences, predict::LevelSnapshot* level0)>;
  Status CollectShape(predict::TreeSnapshot* snap, const LeafShape& leaves = nullptr);

  // Bulk load: builds the inner levels above `leaves` (key order; the first with an empty low),
  // written straight to disk through the DirectPageWriter, each level in contiguous runs, and
  // installs the top node in the root. REQUIRES: the tree is the empty tree Create made (its
  // one leaf the caller frees), nothing else runs.
  Status BuildAbove(std::vector<ChildRef> leaves, double fill_factor);

 private:
  BTreeCore(const IndexContext& ctx, const TreeOptions& options, PageId root);

  size_t PayloadBytes(uint16_t level) const { return level == 1 ? options_.leaf_payload_bytes : 8; }
  // Bytes a node at `level` must have free to take one more child.
  size_t RoomForChild(uint16_t level) const;
  bool RemoveSafe(const InnerNodeView& n) const;
  // LatchPath with `safe` saying which nodes a change below cannot reach beyond.
  Status LatchPathIf(Slice key, const std::function<bool(const InnerNodeView&)>& safe,
                     std::vector<PageWriteGuard>* path, Fences* fences);
  size_t MinFill(const InnerNodeView& n) const { return n.capacity() / 4; }

  StatusOr<PageWriteGuard> NewInner(uint16_t level);
  void FreeInner(PageWriteGuard& node);
  StatusOr<PageWriteGuard> TakeSpare(SplitPlan* plan, uint16_t level);
  Status SplitInner(PageWriteGuard& node, SplitPlan* plan, Slice key, Slice payload,
                    std::string* separator, PageId* right);
  Status GrowRoot(std::vector<PageWriteGuard>* path, SplitPlan* plan);
  // Merges `right` into `left` (siblings, children sep_index - 1 and sep_index of `parent`) when
  // the union fits; otherwise leaves them.
  void MergeInner(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& parent,
                  int sep_index);
  Status ShrinkRoot(PageWriteGuard& root);
  Status VerifyNode(PageId id, int level, const Fences& fences, IndexVerifier* v,
                    const LeafVisitor& leaf, const LeavesAhead& before_leaves, uint64_t* inner);

  IndexContext ctx_;
  BufferPool* const pool_;
  const TreeOptions options_;
  const PageId root_;
  std::atomic<uint32_t> height_{2};
  std::atomic<uint64_t> inner_pages_{1};
};

// Writes the nodes of one level in contiguous runs of up to 256 pages through the
// DirectPageWriter (bulk loads). Node ids are assigned from the run before the node is filled, so
// a node can link to the next one before it is written: a full run is written only at the
// following Next() or at Finish(), after that link was set.
class RunWriter {
 public:
  explicit RunWriter(const IndexContext& ctx);
  // The id and memory of the next node's page.
  StatusOr<std::pair<PageId, char*>> Next();
  // Writes what is left and returns the unused rest of the current run to the allocator.
  Status Finish();

 private:
  Status WritePrev();

  const IndexContext& ctx_;
  AlignedBuffer cur_, prev_;
  PageId first_ = kInvalidPageId, prev_first_ = kInvalidPageId;
  uint32_t used_ = 0, prev_used_ = 0;
};

}  // namespace grove::core
