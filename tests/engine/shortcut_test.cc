// SHORTCUT (btree and hln with prefetch: shortcut / shortcut_base) through the Db API: predictions
// never change results, prefetched pages are used when right, bulk-loaded levels are one extent
// each, BASE predicts (nearly) perfectly on a static tree, and batches run while writers split
// nodes.

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

struct Mode {
  std::string variant;
  std::string prefetch;
};
void PrintTo(const Mode& m, std::ostream* os) { *os << m.variant << " prefetch=" << m.prefetch; }

Options ShortcutOptions(const std::string& dir, const Mode& mode) {
  Options o = SmallOptions(dir);
  o.cache_bytes = 1 << 20;  // 256 frames: inner levels miss too
  o.inner_cache_fraction = 0.05;
  o.index.variant = mode.variant;
  if (mode.variant == "hln") o.index.params["leaf_pages"] = "4";  // more leaves, a taller tree
  o.index.params["prefetch"] = mode.prefetch;
  return o;
}

void BulkLoadKeys(Db* db, uint64_t n, uint64_t stride) {
  uint64_t i = 0;
  ASSERT_OK(db->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (i == n) return false;
    *k = Key(i * stride);
    *v = Value(i, 0);
    ++i;
    return true;
  }));
}

class ShortcutTest : public ::testing::TestWithParam<Mode> {
 protected:
  bool Base() const { return GetParam().prefetch == "shortcut_base"; }
  bool Hln() const { return GetParam().variant == "hln"; }
};

TEST_P(ShortcutTest, BulkLoadedLevelsAreOneExtentAndPredictionsAreUsed) {
  TempDir dir;
  auto db = Db::Open(ShortcutOptions(dir.path(), GetParam()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  BulkLoadKeys(db->get(), 400000, 3);
  const uint32_t height = (*db)->GetStats().index.height;
  ASSERT_GE(height, 3u);
  if (!Base()) {
    for (uint32_t l = 0; l + 1 < height; ++l) {
      EXPECT_EQ(Extra(db->get(), "shortcut_level" + std::to_string(l) + "_extents"), 1)
          << "level " << l;
    }
  }
  std::mt19937_64 rng(1);
  std::string v;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t k = rng() % 400000;
    ASSERT_TRUE(*(*db)->Get(Key(k * 3), &v));
    ASSERT_EQ(v, Value(k, 0));
    ASSERT_FALSE(*(*db)->Get(Key(k * 3 + 1), &v));
  }
  const BufferPoolStats c = (*db)->GetStats().cache;
  EXPECT_GT(c.prefetch_used, 0u);
  const double leaf_accuracy = Extra(db->get(), "shortcut_level0_accuracy");
  if (Base() && !Hln()) {
    EXPECT_EQ(leaf_accuracy, 1.0);  // exact arrays: every prediction is right
    EXPECT_EQ(c.prefetch_wasted, 0u);
  } else if (Base()) {
    // Exact subnode boundaries; only keys within a rounding step of one can be told otherwise.
    EXPECT_GT(leaf_accuracy, 0.99);
  } else {
    EXPECT_GT(leaf_accuracy, 0.5) << "a bulk-loaded uniform tree is nearly linear";
  }
  EXPECT_GT(Extra(db->get(), "shortcut_model_bytes"), 0);
}

// The models are trained on one key set, then the data is replaced by a different one and the
// models are never updated: every prediction points at a wrong (possibly freed or reused) page.
// Results of Get, BatchGet and Scan must not change.
TEST_P(ShortcutTest, StaleAndWrongPredictionsNeverChangeResults) {
  TempDir dir;
  Options o = ShortcutOptions(dir.path(), GetParam());
  o.index.params["shortcut_update"] = "never";
  o.index.params["shortcut_min_uncached"] = "1";
  o.index.params["shortcut_min_accuracy"] = "0";  // keep predicting however wrong
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok());
  BulkLoadKeys(db->get(), 50000, 1);
  std::map<std::string, std::string> model;
  for (uint64_t i = 0; i < 50000; ++i) model[Key(i)] = Value(i, 0);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 15000; ++i) {
    const uint64_t k = rng() % 50000;
    ASSERT_OK((*db)->Delete(Key(k)));
    model.erase(Key(k));
    const std::string nk = "z" + std::to_string(rng() % 50000);
    const std::string nv = Value(i, 1, rng() % 10 == 0 ? 2000 : 16);
    ASSERT_OK((*db)->Put(nk, nv));
    model[nk] = nv;
  }
  std::string v;
  for (int i = 0; i < 10000; ++i) {
    const std::string k = rng() % 2 ? Key(rng() % 50000) : "z" + std::to_string(rng() % 50000);
    auto found = (*db)->Get(k, &v);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    auto it = model.find(k);
    ASSERT_EQ(*found, it != model.end()) << k;
    if (*found) {
      ASSERT_EQ(v, it->second);
    }
  }
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("z" + std::to_string(rng() % 50000));
  std::vector<Slice> slices(keys.begin(), keys.end());
  std::vector<std::optional<std::string>> values;
  ASSERT_OK((*db)->BatchGet(slices, &values));
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = model.find(keys[i]);
    ASSERT_EQ(values[i].has_value(), it != model.end());
    if (values[i]) {
      ASSERT_EQ(*values[i], it->second);
    }
  }
  // Scans start with a predicted descent too.
  for (int i = 0; i < 200; ++i) {
    ScanOptions scan;
    scan.lower = rng() % 2 ? Key(rng() % 50000) : "z" + std::to_string(rng() % 50000);
    auto it = (*db)->NewIterator(scan);
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    auto expect = model.lower_bound(scan.lower);
    for (int n = 0; n < 20 && expect != model.end(); ++n, ++expect, (*it)->Next()) {
      ASSERT_TRUE((*it)->Valid()) << scan.lower;
      ASSERT_EQ((*it)->key(), expect->first) << scan.lower;
      ASSERT_EQ((*it)->value(), expect->second);
    }
    ASSERT_OK((*it)->status());
  }
  EXPECT_GT((*db)->GetStats().cache.prefetch_wasted, 0u) << "the models should have been wrong";
  VerifyReport report;
  ASSERT_OK((*db)->Verify(&report));
  EXPECT_TRUE(report.problems.empty()) << report.problems[0];
}

// Writers split leaves while the predictor's batches apply the stash and retrain.
TEST_P(ShortcutTest, BatchesRunWhileWritersSplitNodes) {
  TempDir dir;
  Options o = ShortcutOptions(dir.path(), GetParam());
  o.index.params["shortcut_retrain_fraction"] = "0.01";
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok());
  BulkLoadKeys(db->get(), 200000, 4);
  const double retrains_after_load = Extra(db->get(), "shortcut_retrains_total");
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(10 + t);
      for (int i = 0; i < 6000 && !stop; ++i) {
        const uint64_t k = (rng() % 200000) * 4 + 1 + t;  // new keys between the loaded ones
        if (!(*db)->Put(Key(k), Value(k, 1)).ok()) stop = true;
      }
      ++finished;
    });
  }
  // Readers check the loaded keys throughout.
  std::mt19937_64 rng(3);
  std::string v;
  while (finished.load() < 3) {
    const uint64_t k = rng() % 200000;
    auto found = (*db)->Get(Key(k * 4), &v);
    ASSERT_TRUE(found.ok() && *found);
    ASSERT_EQ(v, Value(k, 0));
  }
  for (auto& w : writers) w.join();
  ASSERT_FALSE(stop.load()) << "a writer failed";
  // Let the last batch finish, then check the predictor took part and the tree is sound.
  for (int i = 0; i < 400 && Extra(db->get(), "shortcut_pending_changes") > 2000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(Extra(db->get(), "shortcut_retrains_total"), retrains_after_load)
      << "no batch ran while the writers split nodes";
  VerifyReport report;
  ASSERT_OK((*db)->Verify(&report));
  EXPECT_TRUE(report.problems.empty()) << report.problems[0];
  EXPECT_EQ(report.entries_checked, (*db)->GetStats().index.entries);
}

INSTANTIATE_TEST_SUITE_P(Modes, ShortcutTest,
                         ::testing::Values(Mode{"btree", "shortcut"},
                                           Mode{"btree", "shortcut_base"}, Mode{"hln", "shortcut"},
                                           Mode{"hln", "shortcut_base"}),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return info.param.variant + "_" + info.param.prefetch;
                         });

}  // namespace
}  // namespace grove::testing
