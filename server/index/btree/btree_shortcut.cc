// BTree + SHORTCUT: one-shot path prefetch driven by predict::PathPredictor.
//
// Lookups predict the page of every level below the root from the key alone, read the uncached
// predicted pages in one IO submission into the buffer pool's side pool, and then descend as
// usual. The descent hands the prefetch batch to FetchRead, which uses a prefetched image only for
// the exact page the child pointer names (and only if it verifies), so mispredictions cost a wasted
// read and nothing else. The core reports inner splits, merges and height changes to the
// predictor; btree.cc reports the leaves'.

#include <optional>

#include "index/btree/btree.h"
#include "index/core/shortcut.h"

namespace grove {

Status BTree::CollectShape(predict::TreeSnapshot* snap) {
  // Every level below the root, leaves included (each leaf is a child of a level-1 node).
  return tree_->CollectShape(snap);
}

StatusOr<PageReadGuard> BTree::DescendPredicted(Slice key, core::Seek mode, IoCause cause,
                                                core::Fences* fences, PrefetchBatch* batch,
                                                const core::ParentVisitor* at_parent) {
  if (!predictor_ || mode == core::Seek::kLast) {
    return DescendToLeaf(key, mode, cause, fences, batch, nullptr, at_parent);
  }
  std::optional<PrefetchBatch> own;
  if (batch == nullptr) batch = &own.emplace(pool_);
  const shortcut::PredictedPaths p = shortcut::PredictAndIssue(pool_, *predictor_, {key}, batch);
  core::Path path;
  auto leaf = DescendToLeaf(key, mode, cause, fences, batch, &path, at_parent);
  if (leaf.ok()) predictor_->Feedback(p.predictions[0], path, p.issued[0]);
  return leaf;
}

Status BTree::BatchGet(const std::vector<Slice>& keys,
                       std::vector<std::optional<std::string>>* cells) {
  if (!predictor_) return Index::BatchGet(keys, cells);
  // All keys' paths are predicted first and every uncached predicted page is read in one
  // submission; the traversals then run one after the other over the same batch.
  PrefetchBatch batch(pool_);
  const shortcut::PredictedPaths p = shortcut::PredictAndIssue(pool_, *predictor_, keys, &batch);
  cells->assign(keys.size(), std::nullopt);
  for (size_t i = 0; i < keys.size(); ++i) {
    core::Path path;
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard leaf,
        DescendToLeaf(keys[i], core::Seek::kAtOrAfter, IoCause::kDemand, nullptr, &batch, &path));
    predictor_->Feedback(p.predictions[i], path, p.issued[i]);
    const core::LeafView n(leaf.data());
    bool found;
    const int pos = n.Find(keys[i], &found);
    if (found) (*cells)[i] = std::string(n.cell(pos));
  }
  return Status::Ok();
}

}  // namespace grove
