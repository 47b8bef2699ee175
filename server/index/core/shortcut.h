#pragma once

// SHORTCUT glue shared by the variants on the B+-tree core (btree, hln): the
// `prefetch` parameters, issuing a lookup's predicted pages in one submission, and the predictor's
// statistics. The models themselves live in predict/path_predictor.h; what a "node" of each level
// is (a btree node, an hln subnode) is the variant's business, through its TreeSnapshot.

#include <array>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/variant.h"
#include "predict/path_predictor.h"

namespace grove::shortcut {

// The prefetch and shortcut_* parameters, with defaults and help text.
std::vector<ParamSpec> ParamSpecs();
StatusOr<predict::ShortcutOptions> ParseOptions(const ParamMap& params);

// Which predicted levels of a prediction were read by the batch.
using IssuedLevels = std::array<bool, predict::kMaxLevels>;

// The predicted paths of some lookups (Get: one, BatchGet: all its keys), in key order, and which
// of their pages the batch read. Hand predictions[i] and issued[i] back through
// PathPredictor::Feedback once lookup i has descended.
struct PredictedPaths {
  std::vector<predict::Prediction> predictions;
  std::vector<IssuedLevels> issued;
};

// Predicts the path of every key and reads the predicted pages that are not cached in one
// submission into `batch`, when at least options().min_uncached of them miss.
PredictedPaths PredictAndIssue(BufferPool* pool, const predict::PathPredictor& predictor,
                               const std::vector<Slice>& keys, PrefetchBatch* batch);

// model_bytes, prefetch_levels and the shortcut_* extras of IndexStats.
void AddStats(const predict::PathPredictor& predictor, IndexStats* s);

}  // namespace grove::shortcut
