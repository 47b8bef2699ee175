#pragma once

// PathPredictor: SHORTCUT's per-level path models (docs/variants.md, ../shared/specs/shortcut.md).
//
// For every level below the root, a keyless model maps a key to the rank of the node holding it,
// and a PhantomMap turns the rank into a page. A lookup asks for all predicted pages at once,
// reads the uncached ones in one submission, and then traverses as usual, using a prefetched page
// only when the child pointer it follows is exactly that page. Predictions therefore never change
// results; a wrong one costs a wasted read.
//
// Models are trained from the tree's inner nodes only: each node's boundary key is its lower fence,
// inherited from the separators above it (TreeSnapshot). Phase 1 is a PLA with error bound
// epsilon, phase 2 a least-squares refit per segment (server/learned/pla.h). SHORTCUT-BASE keeps
// the exact boundary-key array and the node -> page mapping array instead: perfect predictions for
// 8-byte keys, 16 bytes per node.
//
// Updates: splits and merges are logged to a stash queue. When the pending changes of a level reach
// retrain_fraction of its nodes, a background batch switches prediction off for that level only,
// applies the changes to the level's map with insert-range / collapse-range semantics, collects
// boundary keys again, retrains, and publishes the new models (a shared_ptr swap under a
// reader-writer lock held only for the pointer copy: lookups keep running on the old state
// meanwhile). With update = never the models are left as trained.
//
// Selective prefetching: every segment keeps a rolling hit rate over accuracy_window predictions;
// one that falls below min_accuracy is switched off until the next retrain.
//
// State machine of a level:   valid --(stash reaches threshold)--> rebuilding --(publish)--> valid
//                             valid --(tree height changes)--> rebuilding (all levels)
//
// Thread safety: Predict and Feedback are lock-free readers of the published state; OnSplit,
// OnMerge and OnShapeChange take the stash mutex briefly; Rebuild serialises with the background
// batch through rebuild_mu_. Lock order: rebuild_mu_ -> stash_mu_.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grove/logger.h"
#include "grove/status.h"

#include "learned/pla.h"
#include "predict/phantom_map.h"
#include "predict/tree_observer.h"
#include "util/mutex.h"

namespace grove::predict {

enum class PrefetchMode { kNone, kShortcut, kBase };
enum class UpdateMode { kBatch, kNever };

struct ShortcutOptions {
  PrefetchMode mode = PrefetchMode::kShortcut;
  uint64_t epsilon = 1;            // phase-1 PLA error bound, in ranks
  double retrain_fraction = 0.05;  // batch when pending splits/merges reach this share of a level
  UpdateMode update = UpdateMode::kBatch;
  double min_accuracy = 0.2;        // segments below this rolling hit rate stop predicting
  uint32_t accuracy_window = 1000;  // predictions per segment before its rate is judged
  uint32_t min_uncached = 2;        // prefetch only when at least this many predicted pages miss
};

inline constexpr int kMaxLevels = 16;

// The tree's shape below the root: for each node level (0 = leaves), the nodes in key order with
// their projected lower fences.
struct LevelSnapshot {
  std::vector<uint64_t> low_keys;
  std::vector<PageId> pages;
};
struct TreeSnapshot {
  std::vector<LevelSnapshot> levels;  // index = node level; the root's level is not included
};
using SnapshotFn = std::function<Status(TreeSnapshot*)>;

struct ModelState;

// One lookup's predictions: pages[level] or 0 where no prediction was made.
struct Prediction {
  std::shared_ptr<const ModelState> state;
  int levels = 0;
  std::array<PageId, kMaxLevels> pages{};
  std::array<uint32_t, kMaxLevels> segments{};
};

struct LevelStats {
  uint64_t nodes = 0;
  uint64_t segments = 0;
  uint64_t extents = 0;
  uint64_t predictions = 0;   // predictions made
  uint64_t correct = 0;       // ... that named the page the traversal then visited
  uint64_t issued = 0;        // prefetch reads issued (the page was not cached)
  uint64_t used = 0;          // issued and confirmed by the traversal
  uint64_t wasted = 0;        // issued and not used
  uint64_t segments_off = 0;  // switched off by selective prefetching
};

struct PredictorStats {
  std::vector<LevelStats> levels;  // index = node level
  uint64_t model_bytes = 0;        // segments (SHORTCUT) or key arrays (BASE)
  uint64_t map_bytes = 0;          // phantom maps (SHORTCUT) or mapping arrays (BASE)
  uint64_t retrains = 0;
  double retrain_seconds_total = 0;
  double last_retrain_seconds = 0;
  uint64_t pending_changes = 0;
  uint64_t map_repairs = 0;  // level maps a batch rebuilt because changes raced its collection
};

class PathPredictor final : public TreeObserver {
 public:
  PathPredictor(const ShortcutOptions& options, SnapshotFn snapshot, Logger* logger);
  ~PathPredictor() override;
  PathPredictor(const PathPredictor&) = delete;
  PathPredictor& operator=(const PathPredictor&) = delete;

  const ShortcutOptions& options() const { return options_; }

  // Collects the tree's shape and trains every level now (at open and after a bulk load).
  Status Rebuild() GROVE_EXCLUDES(rebuild_mu_);

  // Predicts the page at every modelled level for the projected key.
  void Predict(uint64_t key, Prediction* out) const;
  // Reports the pages the traversal actually visited (actual[level]) and which predicted pages
  // were issued as prefetch reads.
  void Feedback(const Prediction& p, const std::array<PageId, kMaxLevels>& actual,
                const std::array<bool, kMaxLevels>& issued);

  // Structural changes, reported by the tree as they happen.
  void OnSplit(int level, PageId original, PageId created) override GROVE_EXCLUDES(stash_mu_);
  void OnMerge(int level, PageId removed) override GROVE_EXCLUDES(stash_mu_);
  void OnShapeChange() override GROVE_EXCLUDES(stash_mu_);

  PredictorStats GetStats() const;

 private:
  struct Change {
    int level;
    PageId original;  // split: the node split from; merge: unused
    PageId page;      // split: the new node; merge: the removed node
    bool split;
  };

  // Queues a split or merge for the next batch; asks for one when the level's share is reached.
  void Enqueue(const Change& change) GROVE_EXCLUDES(stash_mu_);
  Status RunBatch() GROVE_EXCLUDES(rebuild_mu_);
  std::shared_ptr<const ModelState> Train(const TreeSnapshot& snap,
                                          const std::vector<PhantomMap>* maps) const;
  void BackgroundLoop();
  void Publish(std::shared_ptr<const ModelState> state);

  const ShortcutOptions options_;
  const SnapshotFn snapshot_;
  Logger* const logger_;

  // The published models. Readers copy the pointer under state_mu_ (shared) and use the state
  // without it. Not std::atomic<std::shared_ptr>: libstdc++ 12's lock-bit implementation of it is
  // reported as a data race by ThreadSanitizer, which would hide real ones.
  std::shared_ptr<const ModelState> LoadState() const;
  mutable SharedMutex state_mu_;
  std::shared_ptr<const ModelState> state_ GROVE_GUARDED_BY(state_mu_);
  std::array<std::atomic<bool>, kMaxLevels> rebuilding_{};

  Mutex rebuild_mu_;

  Mutex stash_mu_;
  CondVar stash_cv_{&stash_mu_};
  std::vector<Change> stash_ GROVE_GUARDED_BY(stash_mu_);
  std::array<uint64_t, kMaxLevels> pending_ GROVE_GUARDED_BY(stash_mu_){};
  bool shape_changed_ GROVE_GUARDED_BY(stash_mu_) = false;
  bool batch_wanted_ GROVE_GUARDED_BY(stash_mu_) = false;
  bool stop_ GROVE_GUARDED_BY(stash_mu_) = false;
  std::thread background_;

  struct Counters {
    std::atomic<uint64_t> predictions{0}, correct{0}, used{0}, wasted{0};  // issued = used + wasted
  };
  std::array<Counters, kMaxLevels> counters_;
  std::atomic<uint64_t> retrains_{0}, retrain_nanos_{0}, last_retrain_nanos_{0}, map_repairs_{0};
};

}  // namespace grove::predict
