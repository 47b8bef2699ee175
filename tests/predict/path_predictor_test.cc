#include "predict/path_predictor.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

namespace grove::predict {
namespace {

// A synthetic two-level shape: `leaves` leaves with evenly spaced lower fences over the key space,
// `inner` nodes above them; pages are contiguous per level.
TreeSnapshot Shape(uint64_t leaves, uint64_t inner, PageId leaf_base, PageId inner_base,
                   uint64_t jitter_seed = 0) {
  TreeSnapshot s;
  s.levels.resize(2);
  std::mt19937_64 rng(jitter_seed);
  const uint64_t step = UINT64_MAX / leaves;
  for (uint64_t i = 0; i < leaves; ++i) {
    uint64_t k = i * step;
    if (jitter_seed != 0 && i > 0) k += rng() % (step / 2);
    s.levels[0].low_keys.push_back(k);
    s.levels[0].pages.push_back(leaf_base + i);
  }
  for (uint64_t j = 0; j < inner; ++j) {
    s.levels[1].low_keys.push_back(s.levels[0].low_keys[j * leaves / inner]);
    s.levels[1].pages.push_back(inner_base + j);
  }
  return s;
}

PageId TrueLeaf(const TreeSnapshot& s, uint64_t key) {
  const auto& k = s.levels[0].low_keys;
  const size_t r = static_cast<size_t>(std::upper_bound(k.begin(), k.end(), key) - k.begin()) - 1;
  return s.levels[0].pages[r];
}

TEST(PathPredictorTest, LinearShapePredictsExactly) {
  const TreeSnapshot shape = Shape(5000, 25, 1000, 100);
  ShortcutOptions o;
  o.update = UpdateMode::kNever;
  PathPredictor p(
      o,
      [&](TreeSnapshot* s) {
        *s = shape;
        return Status::Ok();
      },
      nullptr);
  ASSERT_TRUE(p.Rebuild().ok());
  std::mt19937_64 rng(2);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t key = rng();
    Prediction pr;
    p.Predict(key, &pr);
    ASSERT_EQ(pr.levels, 2);
    EXPECT_EQ(pr.pages[0], TrueLeaf(shape, key));
  }
  const PredictorStats st = p.GetStats();
  ASSERT_EQ(st.levels.size(), 2u);
  EXPECT_EQ(st.levels[0].segments, 1u);
  EXPECT_EQ(st.levels[0].extents, 1u);
  EXPECT_GT(st.model_bytes, 0u);
}

TEST(PathPredictorTest, BaseIsExactOnIrregularShapes) {
  const TreeSnapshot shape = Shape(5000, 25, 1000, 100, /*jitter_seed=*/7);
  ShortcutOptions o;
  o.mode = PrefetchMode::kBase;
  o.update = UpdateMode::kNever;
  PathPredictor p(
      o,
      [&](TreeSnapshot* s) {
        *s = shape;
        return Status::Ok();
      },
      nullptr);
  ASSERT_TRUE(p.Rebuild().ok());
  std::mt19937_64 rng(4);
  for (int i = 0; i < 5000; ++i) {
    const uint64_t key = rng();
    Prediction pr;
    p.Predict(key, &pr);
    ASSERT_EQ(pr.pages[0], TrueLeaf(shape, key));
  }
  EXPECT_EQ(p.GetStats().map_bytes, (5000 + 25) * sizeof(PageId));
}

TEST(PathPredictorTest, SelectivePrefetchSwitchesOffBadSegments) {
  const TreeSnapshot shape = Shape(2000, 10, 1000, 100);
  ShortcutOptions o;
  o.update = UpdateMode::kNever;
  o.accuracy_window = 50;
  o.min_accuracy = 0.5;
  PathPredictor p(
      o,
      [&](TreeSnapshot* s) {
        *s = shape;
        return Status::Ok();
      },
      nullptr);
  ASSERT_TRUE(p.Rebuild().ok());
  // The traversal keeps reporting other pages than predicted: the segment must switch off.
  for (int i = 0; i < 200; ++i) {
    Prediction pr;
    p.Predict(12345, &pr);
    std::array<PageId, kMaxLevels> actual{};
    actual[0] = pr.pages[0] + 1;
    actual[1] = pr.pages[1];
    p.Feedback(pr, actual, {});
  }
  Prediction pr;
  p.Predict(12345, &pr);
  EXPECT_EQ(pr.pages[0], 0u) << "a segment that keeps missing must stop predicting";
  EXPECT_NE(pr.pages[1], 0u) << "the other level was right and keeps predicting";
  EXPECT_GE(p.GetStats().levels[0].segments_off, 1u);
}

// Splits go to the stash; a batch applies them to the map and retrains.
TEST(PathPredictorTest, BatchAppliesSplitsAndRetrains) {
  TreeSnapshot shape = Shape(1000, 10, 1000, 100);
  Mutex mu;
  ShortcutOptions o;
  // The batch starts with the 60th split (59.5 nodes), not before: a batch that ran after 50
  // would see the 10 later nodes in the tree but not in its stash.
  o.retrain_fraction = 0.0595;
  PathPredictor p(
      o,
      [&](TreeSnapshot* s) {
        MutexLock lock(&mu);
        *s = shape;
        return Status::Ok();
      },
      nullptr);
  ASSERT_TRUE(p.Rebuild().ok());
  // Split 60 leaves (6% of the level): each new node goes right after its original.
  {
    MutexLock lock(&mu);
    auto& lv = shape.levels[0];
    for (int i = 0; i < 60; ++i) {
      const size_t at = 10 + static_cast<size_t>(i) * 15;
      const uint64_t mid = lv.low_keys[at] + (lv.low_keys[at + 1] - lv.low_keys[at]) / 2;
      lv.low_keys.insert(lv.low_keys.begin() + at + 1, mid);
      lv.pages.insert(lv.pages.begin() + at + 1, 50000 + i);
    }
  }
  const uint64_t before = p.GetStats().retrains;
  for (int i = 0; i < 60; ++i) {
    const size_t at = 10 + static_cast<size_t>(i) * 15;
    p.OnSplit(0, shape.levels[0].pages[at], 50000 + i);
  }
  // The batch runs on the predictor's thread; wait for it (bounded).
  for (int spin = 0; spin < 2000 && p.GetStats().retrains == before; ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const PredictorStats st = p.GetStats();
  ASSERT_GT(st.retrains, before) << "no batch after 6% splits";
  EXPECT_EQ(st.map_repairs, 0u) << "insert-range semantics must reproduce the collected order";
  EXPECT_EQ(st.levels[0].nodes, 1060u);
  std::mt19937_64 rng(8);
  int hits = 0;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t key = rng();
    Prediction pr;
    p.Predict(key, &pr);
    hits += pr.pages[0] == TrueLeaf(shape, key);
  }
  EXPECT_GT(hits, 1000);
}

}  // namespace
}  // namespace grove::predict
