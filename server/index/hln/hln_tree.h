#pragma once

// The `hln` variant: an HLN-tree (Brinkmann et al., "HLN-Tree: A Memory-efficient B+-Tree with
// Huge Leaf Nodes and Locality Predictors", TOS 2025; ../shared/specs/hln-tree.md).
//
// Shape: the B+-tree core (index/core/tree.h) above huge leaves. A leaf is one extent of
// n = leaf_pages pages (4..256); each page is a 4 KiB subnode read, written and cached on its own
// (subnode.h). The entry of a leaf in its level-1 ("last inner level") node carries
// the leaf's first page, a stash flag and n * hint_bits hint bits (hints.h); the leaf's key range
// is given by the separators around that entry. Lookups guess the subnode from the hints
// (Algorithm 3) and walk to neighbours when the guess is wrong (checkSubNode); a wrong hint costs
// reads, never correctness. Layout in docs/formats/hln.md; design choices in docs/variants.md.
//
//   level-1 cell:  separator_i -> +-----------------+----------+-------------------------------+
//                                 | leaf first page | flags u8 | hints: n values of l bits     |
//                                 | u64             | 1=stash  | (stash node: n-1 values)      |
//                                 +-----------------+----------+-------------------------------+
//   leaf (one extent):  +-----------+-----------+-----+-------------+
//                       | subnode 0 | subnode 1 | ... | subnode n-1 |  keys ascend across subnodes;
//                       +-----------+-----------+-----+-------------+  stash node: 0 = overflow
//
// The core owns the inner levels and the root (a new tree is a root of level 1 above one empty
// leaf); its level-1 payloads carry the leaf references above.
//
// Concurrency. The level-1 node P above a leaf is the leaf's lock:
//   * Every access to a leaf's subnodes happens while P is latched. Readers (Get, BatchGet,
//     Prepare, cursors) hold P shared while they read subnodes, one subnode latch at a time.
//   * Writes that stay inside one subnode (an insert, update or delete with room to spare) hold
//     P shared, the leaf's stripe of leaf_locks_ (so that writers of one leaf see it unchanging
//     while they pick the owner subnode), and one subnode latch at a time (exclusive to modify).
//     Readers never need the stripe: such writes never move keys between subnodes, so the order
//     invariant holds at every instant.
//   * Structure changes (rebalance, split, stash conversion, merge) hold P exclusively, which
//     excludes every other access to all leaves under P, and the subnode latches of the leaves
//     they rewrite. Splits that must insert into full inner nodes restart with the core's
//     pessimistic path (LatchPath), keeping only the ancestors that may split.
//   * Before a structure change reads a whole leaf it loads the leaf with one submission without
//     any latch held, so that P is held exclusively mostly for CPU work.
// Lock order: inner-node latches top-down -> leaf stripe -> subnode latches in page order ->
// buffer pool internals. A thread holds at most one subnode latch except inside a structure
// change (which holds P exclusively, so nobody else can wait for those subnodes while holding
// something it needs) and in ReadLeaf, which holds a whole leaf's subnodes shared, in page order
// (writers under a shared P hold one subnode at a time and wait for nothing while they do).
//
// Durability: every change happens inside an engine write (after its WAL record is durable);
// pages are no-steal and checkpoints run with writers paused, so a structure change is either
// wholly in a checkpoint or wholly redone by WAL replay. Put is an upsert and Delete removes, so
// replaying onto a state that already holds a write changes nothing.
//
// SHORTCUT (prefetch: shortcut | shortcut_base, hln_shortcut.cc): the inner levels below the root
// are modelled like the btree's, and the leaf level is modelled per subnode: a subnode's boundary
// key is where the hints in its level-1 entry say it starts (PredictedBoundaries mapped back into
// the leaf's key range), so training still reads inner nodes only. A Get predicts every inner
// page and the subnode the hint walk will read first, reads the uncached ones in one submission,
// and descends as usual; BatchGet and a cursor's first descent do the same. With hash: fnv the
// leaf level is not modelled (hint positions are hash positions).

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/core/tree.h"
#include "index/hln/hints.h"
#include "index/hln/leaf_layout.h"
#include "index/hln/subnode.h"
#include "index/variant.h"
#include "predict/path_predictor.h"
#include "util/mutex.h"

namespace grove {

namespace hln {

struct Config {
  int leaf_pages = 16;       // n (layout)
  int hint_bits = 4;         // l (layout)
  bool fnv = false;          // hash: fnv (layout)
  bool stash = false;        // stash nodes (layout)
  double hint_range = 0.2;   // hint_max as a fraction of a subnode's expected range (layout)
  double threshold = 0.97;   // rebalance while the leaf is at most this full
  double fill_factor = 0.9;  // bulk load fills leaves to this fraction
};

// A leaf's entry in its level-1 node, decoded.
struct LeafRef {
  PageId leaf = kInvalidPageId;  // first page of the extent
  bool stash = false;
  std::vector<int> hints;
};

}  // namespace hln

class HlnTree final : public Index {
 public:
  static VariantSpec Spec();
  static StatusOr<std::unique_ptr<Index>> Create(const IndexContext& ctx, const ParamMap& params);
  static StatusOr<std::unique_ptr<Index>> Open(const IndexContext& ctx, const ParamMap& params,
                                               Slice metadata);

  StatusOr<bool> Get(Slice key, std::string* cell) override;
  Status BatchGet(const std::vector<Slice>& keys,
                  std::vector<std::optional<std::string>>* cells) override;
  Status Prepare(Slice key) override;
  uint64_t PagesDirtiedPerOp() const override;
  uint64_t MinPoolPages() const override;
  Status Put(const WriteContext& w, Slice key, Slice cell,
             std::optional<std::string>* old_cell) override;
  Status Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) override;
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions& options) override;
  Status BulkLoad(const BulkSource& source) override;
  std::string SerializeMetadata() override;
  Status Verify(IndexVerifier* verifier) override;
  IndexStats GetStats() override;

  // --- Used by the cursor (hln_cursor.cc) ---
  core::BTreeCore& tree() { return *tree_; }
  hln::LeafRef DecodeLeafRef(Slice payload) const;
  // SHORTCUT (hln_shortcut.cc). PredictPath predicts the path to `key` and issues the uncached
  // predicted pages into `batch`; Feedback reports what the descent visited (path[0]: the first
  // subnode the walk read). Both do nothing while prefetch is off.
  struct PathGuess {
    predict::Prediction prediction;
    std::array<bool, predict::kMaxLevels> issued{};
    bool active = false;
  };
  void PredictPath(Slice key, PrefetchBatch* batch, PathGuess* guess);
  void Feedback(const PathGuess& guess, const core::Path& path);
  const hln::Config& config() const { return cfg_; }
  const hln::LeafOrder& order() const { return order_; }
  BufferPool* pool() const { return pool_; }

  // Where a key falls among a leaf's packed subnodes (0-based among them), found by the walk.
  struct Located {
    bool in_range = false;  // the key lies within [min, max] of packed subnode `sub`
    int sub = -1;           // in_range: that subnode
    int u = -1, t = 0;      // otherwise: the nonempty neighbours around the gap (-1 / k: none)
    int guess = 0;
    int reads = 0;        // subnodes read
    PageReadGuard guard;  // in_range: subnode `sub`, still latched
  };
  int PackedCount(const hln::LeafRef& ref) const {
    return ref.stash ? cfg_.leaf_pages - 1 : cfg_.leaf_pages;
  }
  PageId PackedPage(const hln::LeafRef& ref, int p) const {
    return ref.leaf + (ref.stash ? 1 : 0) + p;
  }
  hln::HintParams HintParamsFor(bool stash) const;
  // Positions of keys in a leaf with these fences (see hln::KeySpace).
  hln::KeySpace Space(const core::Fences& leaf_fences) const {
    return hln::KeySpace(cfg_.fnv, leaf_fences, key_floor_.load(std::memory_order_relaxed),
                         key_ceiling_.load(std::memory_order_relaxed));
  }
  int Guess(const hln::LeafRef& ref, const core::Fences& leaf_fences, Slice key) const;
  // The walk (checkSubNode). REQUIRES: the leaf's parent is latched.
  StatusOr<Located> Locate(const hln::LeafRef& ref, int guess, Slice key, IoCause cause,
                           PrefetchBatch* batch = nullptr);
  // All entries of a leaf in leaf order (packed merged with overflow). REQUIRES: parent latched.
  StatusOr<std::vector<hln::Entry>> ReadLeaf(const hln::LeafRef& ref, IoCause cause);

 private:
  HlnTree(const IndexContext& ctx, const hln::Config& cfg,
          const predict::ShortcutOptions& prefetch);
  // Creates (metadata null: a root above one empty leaf) or opens the core under this tree (its
  // part of *metadata), reporting to the predictor.
  Status AttachCore(Slice* metadata);
  core::TreeOptions CoreOptions() const;

  // --- Reads (hln_read.cc) ---
  // Get, using prefetched pages from `batch` and recording the path when given.
  StatusOr<bool> Lookup(Slice key, std::string* cell, PrefetchBatch* batch, core::Path* path);

  // --- SHORTCUT (hln_shortcut.cc) ---
  // The shape the path models are trained on: the inner nodes of every level below the root with
  // their lower fences, and every leaf's packed subnodes with the boundaries its hints predict.
  Status CollectShape(predict::TreeSnapshot* snap);
  // Reports a structure change of the leaf level to the predictor (a leaf's subnodes are its
  // nodes): `created`'s packed subnodes inserted after those of `original` / `removed`'s taken
  // out / a leaf's subnode 0 leaving the packed ones (stash conversion).
  void NoteLeafSplit(const hln::LeafRef& original, PageId created);
  void NoteLeafRemoved(const hln::LeafRef& removed);
  void NoteStashConversion(PageId leaf);

  size_t LeafPayloadBytes() const { return 9 + hln::HintBytes(cfg_.leaf_pages, cfg_.hint_bits); }
  std::string EncodeLeafRef(PageId leaf, bool stash, const std::vector<int>& hints) const;
  // Widens the key floor and ceiling to include `key` (before the key is stored).
  void NoteKey(Slice key);
  Mutex& LeafLock(PageId leaf) {
    return leaf_locks_[(leaf / cfg_.leaf_pages) % leaf_locks_.size()];
  }

  // --- Writes (hln_write.cc) ---
  enum class Outcome { kDone, kRestructure, kTidy };
  // Upsert within one subnode (or the overflow subnode). REQUIRES: exclusive write access to the
  // leaf (P shared + its stripe, or P exclusive).
  StatusOr<Outcome> TryUpsert(const hln::LeafRef& ref, const core::Fences& leaf_fences, Slice key,
                              Slice cell, std::optional<std::string>* old_cell);
  StatusOr<Outcome> TryDelete(const hln::LeafRef& ref, const core::Fences& leaf_fences, Slice key,
                              std::optional<std::string>* old_cell);

  // --- Structure changes (hln_restructure.cc) ---
  // Rewrites the leaf for `key` with the upsert applied: rebalance, stash node or split. With
  // `full_path` false only the level-1 node is latched exclusively; a split that does not fit in
  // it returns kAborted and the caller retries with the full path.
  Status Restructure(Slice key, Slice cell, std::optional<std::string>* old_cell, bool full_path);
  // After a delete emptied a subnode: merge the leaf with a sibling or rebalance it.
  Status Tidy(Slice key);
  // Writes `image` into the leaf's subnodes (guards in subnode order).
  void WriteLeaf(std::vector<PageWriteGuard>* subnodes, const hln::LeafImage& image);
  // Latches every subnode of a leaf exclusively (one load submission first).
  Status LatchLeaf(PageId leaf, std::vector<PageWriteGuard>* subnodes);
  // A new empty leaf extent with its subnodes formatted; freed again on failure.
  Status NewLeaf(std::vector<PageWriteGuard>* subnodes);
  void FreeLeaf(std::vector<PageWriteGuard>* subnodes);

  // --- Verify (hln_verify.cc) ---
  struct VerifyTotals;
  void VerifyLeaf(Slice payload, const core::Fences& fences, IndexVerifier* v,
                  VerifyTotals* totals);

  IndexContext ctx_;
  BufferPool* const pool_;
  const hln::Config cfg_;
  const hln::LeafOrder order_;
  const size_t max_key_;
  std::array<Mutex, 256> leaf_locks_;

  // Shape (persisted in the metadata, with the core's).
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> leaves_{1};
  std::atomic<uint64_t> stash_leaves_{0};
  std::atomic<uint64_t> used_bytes_{0};  // cell and slot bytes in all leaves
  // Smallest and largest Project(key) ever inserted: the open ends of the first and last leaf.
  std::atomic<uint64_t> key_floor_{UINT64_MAX};
  std::atomic<uint64_t> key_ceiling_{0};

  // Activity since open (IndexStats::extra, docs/variants.md).
  std::atomic<uint64_t> lookups_{0}, extra_reads_{0}, overflow_reads_{0};
  std::atomic<uint64_t> rebalances_{0}, splits_{0}, merges_{0}, stash_conversions_{0},
      stash_rebuilds_{0};
  std::atomic<uint64_t> split_fill_ppm_{0};  // sum over splits of the leaf's fill, in 1e-6
  std::atomic<uint64_t> writes_single_{0}, writes_rebalance_{0}, writes_split_{0};
  std::atomic<uint64_t> tidies_{0}, tidy_failures_{0};
  // From the last Verify(): packed keys, and those whose hint-guessed subnode is not their own.
  std::atomic<uint64_t> verify_keys_guessed_{0}, verify_keys_misguessed_{0};

  std::unique_ptr<core::BTreeCore> tree_;
  // Path prediction (prefetch: shortcut | shortcut_base); null when off. The core reports to it.
  // Declared last so that its background thread stops before the rest of the tree goes away.
  std::unique_ptr<predict::PathPredictor> predictor_;
};

}  // namespace grove
