// HlnTree + SHORTCUT: one-shot path prefetch driven by predict::PathPredictor, and the point
// lookups that use it (Get, BatchGet); cursors use PredictPath for their first descent.
//
// The predictor's nodes are the inner nodes of every level below the root and, at level 0, the
// packed subnodes of every leaf. A subnode's boundary key is the start of its range as the hints
// predict it, so the level-0 model learns where Algorithm 3 will send a key, from inner nodes
// only. The prediction for level 0 is therefore judged against the first subnode the walk reads
// (the hint guess), which is the page a prefetch can save a round trip on.

#include <algorithm>

#include "index/core/shortcut.h"
#include "index/hln/hln_tree.h"
#include "util/coding.h"

namespace grove {

using core::Fences;
using core::InnerNodeView;

Status HlnTree::CollectShape(predict::TreeSnapshot* snap) {
  // The core collects the inner levels; a leaf contributes its packed subnodes, each starting
  // where the hints predict (nothing with hash: fnv, where hint positions are hash positions).
  return tree_->CollectShape(snap, [this](Slice payload, const Fences& cf,
                                          predict::LevelSnapshot* level0) {
    if (cfg_.fnv) return;
    const hln::LeafRef ref = DecodeLeafRef(payload);
    const hln::KeySpace space = Space(cf);
    const std::vector<double> ends = hln::PredictedBoundaries(ref.hints, HintParamsFor(ref.stash));
    for (int p = 0; p < PackedCount(ref); ++p) {
      level0->low_keys.push_back(space.ProjectedAt(p == 0 ? 0.0 : std::max(0.0, ends[p - 1])));
      level0->pages.push_back(PackedPage(ref, p));
    }
  });
}

void HlnTree::PredictPath(Slice key, PrefetchBatch* batch, PathGuess* guess) {
  if (!predictor_) return;
  shortcut::PredictedPaths p = shortcut::PredictAndIssue(pool_, *predictor_, {key}, batch);
  guess->prediction = std::move(p.predictions[0]);
  guess->issued = p.issued[0];
  guess->active = true;
}

void HlnTree::Feedback(const PathGuess& guess, const core::Path& path) {
  if (guess.active) predictor_->Feedback(guess.prediction, path, guess.issued);
}

StatusOr<bool> HlnTree::Get(Slice key, std::string* cell) {
  if (!predictor_) return Lookup(key, cell, nullptr, nullptr);
  PrefetchBatch batch(pool_);
  PathGuess guess;
  PredictPath(key, &batch, &guess);
  core::Path path;
  StatusOr<bool> found = Lookup(key, cell, &batch, &path);
  if (found.ok()) Feedback(guess, path);
  return found;
}

Status HlnTree::BatchGet(const std::vector<Slice>& keys,
                         std::vector<std::optional<std::string>>* cells) {
  cells->assign(keys.size(), std::nullopt);
  std::string cell;
  if (predictor_) {
    // Every key's path is predicted first and every uncached predicted page read in one
    // submission; the lookups then run one after the other over the same batch.
    PrefetchBatch batch(pool_);
    const shortcut::PredictedPaths p = shortcut::PredictAndIssue(pool_, *predictor_, keys, &batch);
    for (size_t i = 0; i < keys.size(); ++i) {
      core::Path path;
      GROVE_ASSIGN_OR_RETURN(const bool found, Lookup(keys[i], &cell, &batch, &path));
      predictor_->Feedback(p.predictions[i], path, p.issued[i]);
      if (found) (*cells)[i] = cell;
    }
    return Status::Ok();
  }
  // Without models: guess every key's subnode first (inner nodes only, no leaf IO), read all
  // guessed subnodes in one submission, then look the keys up one by one (mostly cache hits now).
  std::vector<PageId> guessed;
  guessed.reserve(keys.size());
  for (Slice key : keys) {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch parent,
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, false));
    const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(parent.child));
    guessed.push_back(PackedPage(ref, Guess(ref, parent.leaf_fences(), key)));
  }
  std::sort(guessed.begin(), guessed.end());
  guessed.erase(std::unique(guessed.begin(), guessed.end()), guessed.end());
  GROVE_RETURN_IF_ERROR(pool_->LoadMany(guessed, IoCause::kDemand));
  for (size_t i = 0; i < keys.size(); ++i) {
    GROVE_ASSIGN_OR_RETURN(const bool found, Lookup(keys[i], &cell, nullptr, nullptr));
    if (found) (*cells)[i] = cell;
  }
  return Status::Ok();
}

void HlnTree::NoteLeafSplit(const hln::LeafRef& original, PageId created) {
  if (!predictor_ || cfg_.fnv) return;
  // The new leaf's subnodes follow the original's last packed subnode in key order, in page order.
  PageId after = PackedPage(original, PackedCount(original) - 1);
  for (int p = 0; p < cfg_.leaf_pages; ++p) {
    predictor_->OnSplit(0, after, created + p);
    after = created + p;
  }
}

void HlnTree::NoteLeafRemoved(const hln::LeafRef& removed) {
  if (!predictor_ || cfg_.fnv) return;
  for (int p = 0; p < PackedCount(removed); ++p) predictor_->OnMerge(0, PackedPage(removed, p));
}

void HlnTree::NoteStashConversion(PageId leaf) {
  // Subnode 0 becomes the overflow subnode; the packed ones keep their pages.
  if (predictor_ && !cfg_.fnv) predictor_->OnMerge(0, leaf);
}

}  // namespace grove
