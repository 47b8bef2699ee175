// BTree + SHORTCUT: one-shot path prefetch driven by predict::PathPredictor.
//
// Lookups predict the page of every level below the root from the key alone, read the uncached
// predicted pages in one IO submission into the buffer pool's side pool, and then descend as
// usual. The descent hands the prefetch batch to FetchRead, which uses a prefetched image only for
// the exact page the child pointer names (and only if it verifies), so mispredictions cost a wasted
// read and nothing else. Splits, merges and height changes are reported to the predictor from the
// structure-changing code in btree.cc.

#include "index/btree/btree.h"
#include "index/shortcut.h"
#include "util/coding.h"

namespace grove {

using btree::NodeView;

Status BTree::CollectShape(predict::TreeSnapshot* snap) {
  snap->levels.clear();
  const uint32_t height = height_.load();
  if (height <= 1) return Status::Ok();
  snap->levels.resize(height - 1);
  // Breadth first over the inner nodes, handing each child the lower fence it inherits: the
  // separator in front of it, or its parent's own lower fence for a leftmost child (Fig. 5).
  // Leaves are never read. Copies bypass the cache so that training does not change what is
  // cached.
  struct Node {
    PageId id;
    std::string low;
    bool has_low;
  };
  std::vector<Node> current = {{root_, "", false}};
  AlignedBuffer buf(kPageSize);
  for (int level = static_cast<int>(height) - 1; level >= 1; --level) {
    std::vector<Node> next;
    for (const Node& it : current) {
      GROVE_RETURN_IF_ERROR(pool_->ReadCopy(it.id, buf.data(), IoCause::kScan));
      const NodeView n(buf.data());
      if (n.level() != level) {
        return Status::Aborted("btree: the tree changed shape while its models were collected");
      }
      for (int i = -1; i < n.count(); ++i) {
        if (i < 0) {
          next.push_back({n.child(i), it.low, it.has_low});
        } else {
          next.push_back({n.child(i), std::string(n.key(i)), true});
        }
      }
    }
    predict::LevelSnapshot& ls = snap->levels[level - 1];
    ls.low_keys.reserve(next.size());
    ls.pages.reserve(next.size());
    for (const Node& c : next) {
      ls.low_keys.push_back(c.has_low ? Project(c.low) : 0);
      ls.pages.push_back(c.id);
    }
    current = std::move(next);
  }
  return Status::Ok();
}

StatusOr<PageReadGuard> BTree::DescendPredicted(Slice key, Seek mode, IoCause cause,
                                                Fences* fences) {
  if (!predictor_ || mode == Seek::kLast) return DescendToLeaf(key, mode, cause, fences);
  PrefetchBatch batch(pool_);
  const shortcut::PredictedPaths p = shortcut::PredictAndIssue(pool_, *predictor_, {key}, &batch);
  Path path;
  auto leaf = DescendToLeaf(key, mode, cause, fences, &batch, &path);
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
    Path path;
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard leaf,
        DescendToLeaf(keys[i], Seek::kAtOrAfter, IoCause::kDemand, nullptr, &batch, &path));
    predictor_->Feedback(p.predictions[i], path, p.issued[i]);
    const NodeView n(leaf.data());
    bool found;
    const int pos = n.slots().LowerBound(keys[i], &found);
    if (found) (*cells)[i] = std::string(n.payload(pos));
  }
  return Status::Ok();
}

}  // namespace grove
