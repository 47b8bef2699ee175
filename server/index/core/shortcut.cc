#include "index/core/shortcut.h"

#include <fmt/format.h>

namespace grove::shortcut {

std::vector<ParamSpec> ParamSpecs() {
  return {
      {"prefetch", "none", false,
       "path prefetch: none | shortcut (learned one-shot traversal) | shortcut_base (exact "
       "key and mapping arrays)"},
      {"shortcut_epsilon", "1", false, "error bound of the phase-1 PLA, in nodes (1..64)"},
      {"shortcut_retrain_fraction", "0.05", false,
       "retrain a level when pending splits/merges reach this share of its nodes (0.001..1)"},
      {"shortcut_update", "batch", false,
       "batch (apply splits in background batches, then retrain) | never (keep the first models)"},
      {"shortcut_min_accuracy", "0.2", false,
       "a model segment whose rolling hit rate falls below this stops predicting (0..1)"},
      {"shortcut_accuracy_window", "1000", false, "predictions per rolling window (10..10000000)"},
      {"shortcut_min_uncached", "2", false,
       "prefetch only when at least this many predicted pages are not cached (1..16)"},
  };
}

StatusOr<predict::ShortcutOptions> ParseOptions(const ParamMap& params) {
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

PredictedPaths PredictAndIssue(BufferPool* pool, const predict::PathPredictor& predictor,
                               const std::vector<Slice>& keys, PrefetchBatch* batch) {
  PredictedPaths out;
  out.predictions.resize(keys.size());
  out.issued.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) predictor.Predict(Project(keys[i]), &out.predictions[i]);
  std::vector<PageId> pages;
  std::vector<std::pair<size_t, int>> owners;  // (prediction, level) of each page
  for (size_t p = 0; p < out.predictions.size(); ++p) {
    const predict::Prediction& pr = out.predictions[p];
    for (int l = 0; l < pr.levels; ++l) {
      if (pr.pages[l] == kInvalidPageId || pool->IsResident(pr.pages[l])) continue;
      pages.push_back(pr.pages[l]);
      owners.push_back({p, l});
    }
  }
  // A lookup with a single uncached level gains nothing from reading it early (the traversal
  // reaches it a microsecond later), and a wrong guess would only waste bandwidth. A BatchGet's
  // leaves, on the other hand, overlap with each other.
  if (pages.size() < predictor.options().min_uncached) return out;
  batch->Issue(pages);
  for (const auto& [p, l] : owners) {
    out.issued[p][l] = batch->Has(out.predictions[p].pages[l]);
  }
  return out;
}

void AddStats(const predict::PathPredictor& predictor, IndexStats* s) {
  const predict::PredictorStats p = predictor.GetStats();
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

}  // namespace grove::shortcut
