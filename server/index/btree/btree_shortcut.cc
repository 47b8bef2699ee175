// BTree + SHORTCUT: one-shot path prefetch driven by predict::PathPredictor.
//
// Lookups predict the page of every level below the root from the key alone, read the uncached
// predicted pages in one IO submission into the buffer pool's side pool, and then descend as
// usual. The descent hands the prefetch batch to FetchRead, which uses a prefetched image only for
// the exact page the child pointer names (and only if it verifies), so mispredictions cost a wasted
// read and nothing else. Splits, merges and height changes are reported to the predictor from the
// structure-changing code in btree.cc.

#include <fmt/format.h>

#include "index/btree/btree.h"
#include "util/coding.h"

namespace grove {

using btree::NodeView;

StatusOr<predict::ShortcutOptions> BTree::ParseShortcut(const ParamMap& params) {
  predict::ShortcutOptions o;
  GROVE_ASSIGN_OR_RETURN(const std::string mode,
                         ParseEnumParam(params, "prefetch", {"none", "shortcut", "shortcut_base"}));
  o.mode = mode == "none"       ? predict::PrefetchMode::kNone
           : mode == "shortcut" ? predict::PrefetchMode::kShortcut
                                : predict::PrefetchMode::kBase;
  GROVE_ASSIGN_OR_RETURN(o.epsilon, ParseUintParam(params, "shortcut_epsilon", 1, 64));
  GROVE_ASSIGN_OR_RETURN(o.retrain_fraction,
                         ParseDoubleParam(params, "shortcut_retrain_fraction", 0.001, 1.0));
  GROVE_ASSIGN_OR_RETURN(const std::string update,
                         ParseEnumParam(params, "shortcut_update", {"batch", "never"}));
  o.update = update == "batch" ? predict::UpdateMode::kBatch : predict::UpdateMode::kNever;
  GROVE_ASSIGN_OR_RETURN(o.min_accuracy, ParseDoubleParam(params, "shortcut_min_accuracy", 0, 1));
  GROVE_ASSIGN_OR_RETURN(const uint64_t window,
                         ParseUintParam(params, "shortcut_accuracy_window", 10, 10000000));
  o.accuracy_window = static_cast<uint32_t>(window);
  GROVE_ASSIGN_OR_RETURN(const uint64_t min_uncached,
                         ParseUintParam(params, "shortcut_min_uncached", 1, 16));
  o.min_uncached = static_cast<uint32_t>(min_uncached);
  return o;
}

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

void BTree::IssuePredicted(const std::vector<const predict::Prediction*>& predictions,
                           PrefetchBatch* batch,
                           std::vector<std::array<bool, predict::kMaxLevels>>* issued) {
  std::vector<PageId> pages;
  std::vector<std::pair<size_t, int>> owners;  // (prediction, level) of each page
  for (size_t p = 0; p < predictions.size(); ++p) {
    const predict::Prediction& pr = *predictions[p];
    for (int l = 0; l < pr.levels; ++l) {
      if (pr.pages[l] == kInvalidPageId || pool_->IsResident(pr.pages[l])) continue;
      pages.push_back(pr.pages[l]);
      owners.push_back({p, l});
    }
  }
  // A lookup with a single uncached level gains nothing from reading it early (the traversal
  // reaches it a microsecond later), and a wrong guess would only waste bandwidth. A BatchGet's
  // leaves, on the other hand, overlap with each other.
  if (pages.size() < predictor_->options().min_uncached) return;
  batch->Issue(pages);
  for (const auto& [p, l] : owners) {
    (*issued)[p][l] = batch->Has(predictions[p]->pages[l]);
  }
}

StatusOr<PageReadGuard> BTree::DescendPredicted(Slice key, Seek mode, IoCause cause,
                                                Fences* fences) {
  if (!predictor_ || mode == Seek::kLast) return DescendToLeaf(key, mode, cause, fences);
  predict::Prediction p;
  predictor_->Predict(Project(key), &p);
  PrefetchBatch batch(pool_);
  std::vector<std::array<bool, predict::kMaxLevels>> issued(1);
  IssuePredicted({&p}, &batch, &issued);
  Path path;
  auto leaf = DescendToLeaf(key, mode, cause, fences, &batch, &path);
  if (leaf.ok()) predictor_->Feedback(p, path, issued[0]);
  return leaf;
}

Status BTree::BatchGet(const std::vector<Slice>& keys,
                       std::vector<std::optional<std::string>>* cells) {
  if (!predictor_) return Index::BatchGet(keys, cells);
  // All keys' paths are predicted first and every uncached predicted page is read in one
  // submission; the traversals then run one after the other over the same batch.
  std::vector<predict::Prediction> predictions(keys.size());
  std::vector<const predict::Prediction*> refs;
  for (size_t i = 0; i < keys.size(); ++i) {
    predictor_->Predict(Project(keys[i]), &predictions[i]);
    refs.push_back(&predictions[i]);
  }
  PrefetchBatch batch(pool_);
  std::vector<std::array<bool, predict::kMaxLevels>> issued(keys.size());
  IssuePredicted(refs, &batch, &issued);
  cells->assign(keys.size(), std::nullopt);
  for (size_t i = 0; i < keys.size(); ++i) {
    Path path;
    GROVE_ASSIGN_OR_RETURN(
        PageReadGuard leaf,
        DescendToLeaf(keys[i], Seek::kAtOrAfter, IoCause::kDemand, nullptr, &batch, &path));
    predictor_->Feedback(predictions[i], path, issued[i]);
    const NodeView n(leaf.data());
    bool found;
    const int pos = n.slots().LowerBound(keys[i], &found);
    if (found) (*cells)[i] = std::string(n.payload(pos));
  }
  return Status::Ok();
}

void BTree::AddShortcutStats(IndexStats* s) const {
  if (!predictor_) return;
  const predict::PredictorStats p = predictor_->GetStats();
  s->model_bytes = p.model_bytes + p.map_bytes;
  auto& x = s->extra;
  x["shortcut_model_bytes"] = static_cast<double>(p.model_bytes);
  x["shortcut_map_bytes"] = static_cast<double>(p.map_bytes);
  x["shortcut_retrains_total"] = static_cast<double>(p.retrains);
  x["shortcut_retrain_seconds_total"] = p.retrain_seconds_total;
  x["shortcut_last_retrain_seconds"] = p.last_retrain_seconds;
  x["shortcut_pending_changes"] = static_cast<double>(p.pending_changes);
  x["shortcut_map_repairs_total"] = static_cast<double>(p.map_repairs);
  for (size_t l = 0; l < p.levels.size(); ++l) {
    const predict::LevelStats& ls = p.levels[l];
    const std::string pre = fmt::format("shortcut_level{}_", l);
    x[pre + "nodes"] = static_cast<double>(ls.nodes);
    x[pre + "segments"] = static_cast<double>(ls.segments);
    x[pre + "segments_off"] = static_cast<double>(ls.segments_off);
    x[pre + "extents"] = static_cast<double>(ls.extents);
    s->prefetch_levels.push_back(
        {static_cast<uint32_t>(l), ls.predictions, ls.correct, ls.issued, ls.used, ls.wasted});
    x[pre + "accuracy"] =
        ls.predictions == 0 ? 0
                            : static_cast<double>(ls.correct) / static_cast<double>(ls.predictions);
  }
}

}  // namespace grove
