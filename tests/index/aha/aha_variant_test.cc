// The aha variant through the Db: the root buffer's life cycle (freezes, flushes, leveled
// compactions and trivial moves) under random writes with replacements and deletes, values large
// enough to live in the value store (so that every dropped version must be released, or Verify
// finds its blob leaked), and the shape the levels keep.

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conformance/cases.h"
#include "engine/db_impl.h"
#include "engine/db_test_util.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

Options AhaOptions(const std::string& dir, ParamMap params) {
  Options o = SmallOptions(dir);
  o.cache_bytes = 8 << 20;
  o.index.variant = "aha";
  o.index.params = std::move(params);
  return o;
}

// Waits (bounded) until the background thread has flushed every frozen memtable and level 0
// is under its compaction trigger.
void Settle(Db* db, double l0_runs) {
  for (int i = 0; i < 2000; ++i) {
    if (Extra(db, "frozen_memtables") == 0 && Extra(db, "root_level0_runs") < l0_runs) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(AhaVariantTest, RootBufferFlushesCompactsAndReleasesWhatItDrops) {
  TempDir dir;
  const ParamMap params = {
      {"memtable_bytes", "32768"}, {"run_pages", "16"}, {"l0_runs", "2"}, {"level_ratio", "3"}};
  Model model;
  std::mt19937_64 rng(7);
  {
    auto db = Db::Open(AhaOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (int step = 0; step < 20000; ++step) {
      const uint64_t i = rng() % 3000;
      const std::string k = Key(i);
      if (rng() % 6 == 0) {
        ASSERT_OK((*db)->Delete(k));
        model.erase(k);
      } else {
        // One value in eight goes to the value store: its pages must be freed exactly when the
        // last version naming them is dropped.
        const size_t len = rng() % 8 == 0 ? 1500 + rng() % 3000 : 8 + rng() % 100;
        const std::string v = Value(i, step, len);
        ASSERT_OK((*db)->Put(k, v));
        model[k] = v;
      }
    }
    Settle(db->get(), 2);
    ExpectMatches(db->get(), model, "after the writes");
    ExpectVerifyClean(db->get(), model.size(), "after the writes");
    EXPECT_GT(Extra(db->get(), "flushes_total"), 10);
    EXPECT_GT(Extra(db->get(), "compactions_total"), 2);
    EXPECT_GT(Extra(db->get(), "cells_released_total"), 0);
    EXPECT_GT(Extra(db->get(), "tombstones_dropped_total"), 0);
    EXPECT_GT(Extra(db->get(), "root_level2_runs") + Extra(db->get(), "formations_total"), 0)
        << "data reached the last level";
    const DbStats s = (*db)->GetStats();
    EXPECT_GT(s.cache.page_writes[static_cast<int>(IoCause::kCompaction)], 0u);
    ASSERT_OK((*db)->Close());
  }
  // Reopened: the runs are read back from their descriptors; retired extents were freed.
  auto db = Db::Open(AhaOptions(dir.path(), params));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectMatches(db->get(), model, "after reopening");
  ExpectVerifyClean(db->get(), model.size(), "after reopening");
  // The flush of the clean stop may start a compaction at once, which retires runs again: they
  // are freed by the first checkpoint after it ends.
  for (int i = 0; i < 400 && Extra(db->get(), "retired_runs") > 0; ++i) {
    Settle(db->get(), 2);
    ASSERT_OK((*db)->Checkpoint());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Extra(db->get(), "retired_runs"), 0);
  std::string v;
  for (const auto& [k, want] : model) {
    ASSERT_TRUE(*(*db)->Get(k, &v)) << k;
    ASSERT_EQ(v, want);
  }
  // Absent keys inside the runs' ranges: the Bloom filters answer most of them.
  for (uint64_t i = 0; i < 500; ++i) ASSERT_FALSE(*(*db)->Get(Key(i) + "~", &v));
  EXPECT_GT(Extra(db->get(), "filter_skips_total"), 400);
}

// Every key of `model` within [lower, upper), both ways, as a bounded scan returns it.
void ExpectRange(Db* db, const Model& model, const std::string& lower, const std::string& upper,
                 bool reverse) {
  ScanOptions o;
  o.lower = lower;
  o.upper = upper;
  o.has_upper = true;
  o.reverse = reverse;
  std::vector<std::string> want;
  for (auto it = model.lower_bound(lower); it != model.end() && it->first < upper; ++it) {
    want.push_back(it->first);
  }
  if (reverse) std::reverse(want.begin(), want.end());
  auto it = db->NewIterator(o);
  ASSERT_TRUE(it.ok());
  size_t i = 0;
  for (; (*it)->Valid(); (*it)->Next(), ++i) {
    ASSERT_LT(i, want.size()) << "[" << lower << ", " << upper << ") reverse " << reverse;
    ASSERT_EQ((*it)->key(), want[i]);
    ASSERT_EQ((*it)->value(), model.at(want[i]));
  }
  ASSERT_OK((*it)->status());
  EXPECT_EQ(i, want.size()) << "[" << lower << ", " << upper << ") reverse " << reverse;
}

// Past the root buffer: the tree forms from its last level, level-emptying pushes runs down
// (cutting the ones that straddle a routing key), leaves split many ways, inner nodes split with
// their buffers, and reads merge every buffer on the way.
TEST(AhaVariantTest, TreeFormsPushesDownAndSplits) {
  TempDir dir;
  const ParamMap params = {{"memtable_bytes", "16384"}, {"run_pages", "8"}, {"l0_runs", "2"},
                           {"level_ratio", "2"},        {"fanout", "3"},    {"node_pages", "16"},
                           {"node_l0_runs", "2"}};
  Model model;
  std::mt19937_64 rng(11);
  auto check_ranges = [&](Db* db) {
    for (int q = 0; q < 40; ++q) {
      std::string a = Key(rng() % 6000), b = Key(rng() % 6000);
      if (b < a) std::swap(a, b);
      ExpectRange(db, model, a, b, q % 2 == 1);
    }
  };
  {
    auto db = Db::Open(AhaOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (int step = 0; step < 40000; ++step) {
      const uint64_t i = rng() % 6000;
      const std::string k = Key(i);
      if (rng() % 8 == 0) {
        ASSERT_OK((*db)->Delete(k));
        model.erase(k);
      } else {
        const size_t len = rng() % 16 == 0 ? 1500 + rng() % 2000 : 8 + rng() % 80;
        const std::string v = Value(i, step, len);
        ASSERT_OK((*db)->Put(k, v));
        model[k] = v;
      }
      if (step % 10000 == 9999) check_ranges(db->get());
    }
    Settle(db->get(), 2);
    ExpectMatches(db->get(), model, "after the writes");
    check_ranges(db->get());
    ExpectVerifyClean(db->get(), model.size(), "after the writes");
    EXPECT_EQ(Extra(db->get(), "formations_total"), 1);
    EXPECT_GT(Extra(db->get(), "pushdowns_total"), 2);
    EXPECT_GT(Extra(db->get(), "runs_moved_total"), 0);
    EXPECT_GT(Extra(db->get(), "leaf_splits_total"), 0);
    EXPECT_GT(Extra(db->get(), "inner_splits_total"), 0);
    EXPECT_GT(Extra(db->get(), "leaves"), 3);
    EXPECT_GE((*db)->GetStats().index.height, 3u);
    ASSERT_OK((*db)->Close());
  }
  // The tree comes back from the metadata as it was.
  auto db = Db::Open(AhaOptions(dir.path(), params));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_GE((*db)->GetStats().index.height, 3u);
  ExpectMatches(db->get(), model, "after reopening");
  check_ranges(db->get());
  ExpectVerifyClean(db->get(), model.size(), "after reopening");
}

// A bulk load larger than the root's last level forms the tree at once (the paper's bottom-up
// first formation): each run a leaf, no rewrite.
TEST(AhaVariantTest, BulkLoadFormsTheTree) {
  TempDir dir;
  const ParamMap params = {{"memtable_bytes", "16384"}, {"run_pages", "8"}, {"l0_runs", "2"},
                           {"level_ratio", "2"},        {"fanout", "4"},    {"node_pages", "16"}};
  auto db = Db::Open(AhaOptions(dir.path(), params));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Model model;
  uint64_t n = 0;
  ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (n == 20000) return false;
    *k = Key(n);
    *v = Value(n, 0, 40);
    model[*k] = *v;
    ++n;
    return true;
  }));
  EXPECT_EQ(Extra(db->get(), "formations_total"), 1);
  EXPECT_GT(Extra(db->get(), "leaves"), 4);
  EXPECT_EQ(Extra(db->get(), "root_level2_runs"), 0);
  ExpectMatches(db->get(), model, "after the load");
  ExpectVerifyClean(db->get(), model.size(), "after the load");
  for (uint64_t i = 0; i < 20000; i += 7) {
    ASSERT_OK((*db)->Put(Key(i), "new"));
    model[Key(i)] = "new";
  }
  ASSERT_OK((*db)->Delete(Key(5)));
  model.erase(Key(5));
  Settle(db->get(), 2);
  ExpectMatches(db->get(), model, "after writes over the load");
  ExpectVerifyClean(db->get(), model.size(), "after writes over the load");
}

// Range searches over `lo..hi` (keys i in [lo, hi)) until adaptation has converged, bounded.
void ScanUntilAdapted(Db* db, uint64_t lo, uint64_t hi, double adaptations) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 3000; ++round) {
    ScanOptions o;
    o.lower = Key(lo + rng() % (hi - lo));
    auto it = db->NewIterator(o);
    ASSERT_TRUE(it.ok());
    for (int n = 0; n < 20 && (*it)->Valid(); ++n) (*it)->Next();
    ASSERT_OK((*it)->status());
    it->reset();
    if (Extra(db, "adaptations_total") >= adaptations && Extra(db, "adaptation_in_progress") == 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ADD_FAILURE() << "adaptation did not converge: " << Extra(db, "adaptations_total")
                << " adaptations (waiting for " << adaptations << "), in progress "
                << Extra(db, "adaptation_in_progress") << ", "
                << Extra(db, "adaptation_steps_total") << " steps, memtable "
                << Extra(db, "memtable_entries") << " entries, frozen "
                << Extra(db, "frozen_memtables");
}

// Runs a range search inside [lo, hi) probed, as the variant counts them.
double RunsProbedByScans(Db* db, uint64_t lo, uint64_t hi, int scans) {
  const double before = Extra(db, "scan_runs_probed_total");
  for (int q = 0; q < scans; ++q) {
    ScanOptions o;
    o.lower = Key(lo + (hi - lo) * q / scans);
    o.upper = Key(std::min(hi, lo + (hi - lo) * q / scans + 30));
    o.has_upper = true;
    auto it = db->NewIterator(o);
    EXPECT_TRUE(it.ok());
    while ((*it)->Valid()) (*it)->Next();
  }
  return Extra(db, "scan_runs_probed_total") - before;
}

// Range searches over [lo, hi) until adaptation has converged (searches probe no run) with,
// when `empty_memtable`, nothing left in the memtable either, bounded.
void ScanUntilConverged(Db* db, uint64_t lo, uint64_t hi, bool empty_memtable = true) {
  for (int round = 0; round < 3000; ++round) {
    if (RunsProbedByScans(db, lo, hi, 20) == 0 &&
        (!empty_memtable || Extra(db, "memtable_entries") == 0) &&
        Extra(db, "frozen_memtables") == 0 && Extra(db, "adaptation_in_progress") == 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ADD_FAILURE() << "adaptation did not converge: memtable " << Extra(db, "memtable_entries")
                << " entries, in progress " << Extra(db, "adaptation_in_progress");
}

struct AdaptCase {
  std::string split, alloc, insert;
};
void PrintTo(const AdaptCase& c, std::ostream* os) {
  *os << c.split << "/" << c.alloc << "/" << c.insert;
}

class AhaAdaptTest : public ::testing::TestWithParam<AdaptCase> {};

// A configured hot range: range searches on it empty its buffers from the root down and turn its
// leaves into B+-tree pages; then a search reads pages only. Writes to it go back through the
// buffers (batch insert) and the next searches adapt it again, or straight into the pages (tree
// insert) and it stays adapted; the pages survive a reopen.
TEST_P(AhaAdaptTest, HotRangeAdaptsBothWaysAndSurvivesAReopen) {
  TempDir dir;
  const ParamMap params = {{"memtable_bytes", "16384"},
                           {"run_pages", "8"},
                           {"l0_runs", "2"},
                           {"level_ratio", "2"},
                           {"fanout", "4"},
                           {"node_pages", "16"},
                           {"node_l0_runs", "2"},
                           {"hot_ranges", Key(2000) + ".." + Key(2600)},
                           {"hot_detect", "false"},
                           {"split", GetParam().split},
                           {"leaf_alloc", GetParam().alloc},
                           {"insert", GetParam().insert}};
  const bool tree_insert = GetParam().insert == "tree";
  Model model;
  std::mt19937_64 rng(5);
  auto write = [&](Db* db, uint64_t lo, uint64_t span, int n, int seed) {
    for (int step = 0; step < n; ++step) {
      const uint64_t i = lo + rng() % span;
      if (rng() % 10 == 0) {
        ASSERT_OK(db->Delete(Key(i)));
        model.erase(Key(i));
      } else {
        const size_t len = rng() % 20 == 0 ? 1500 : 10 + rng() % 60;
        const std::string v = Value(i, seed * 100000 + step, len);
        ASSERT_OK(db->Put(Key(i), v));
        model[Key(i)] = v;
      }
    }
  };
  {
    auto db = Db::Open(AhaOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    write(db->get(), 0, 6000, 30000, 1);
    Settle(db->get(), 2);
    ScanUntilAdapted(db->get(), 2000, 2600, 1);
    ExpectMatches(db->get(), model, "after adapting");
    ExpectVerifyClean(db->get(), model.size(), "after adapting");
    EXPECT_GT(Extra(db->get(), "adapted_leaves"), 0);
    EXPECT_GT(Extra(db->get(), "leaf_pages"), 0);
    EXPECT_GT(Extra(db->get(), "leaf_transforms_total"), 0);
    // Adapted: a search inside the hot range probes no run, only leaf pages. (The first
    // adaptation may leave hot versions in the memtable, which a later top-up adapts once writes
    // have stopped: converge first.)
    ScanUntilConverged(db->get(), 2000, 2600);
    EXPECT_EQ(RunsProbedByScans(db->get(), 2000, 2600, 20), 0);
    // Writes come back. Batch insert: hot keys through the buffers again, then the searches
    // adapt again. Tree insert: into the pages as their memtables are flushed.
    write(db->get(), 2000, 600, 4000, 2);
    write(db->get(), 0, 6000, 2000, 3);
    Settle(db->get(), 2);
    ExpectMatches(db->get(), model, "after hot writes");
    if (tree_insert) {
      EXPECT_GT(Extra(db->get(), "tree_inserts_total"), 1000);
      EXPECT_GT(Extra(db->get(), "tree_insert_merges_total"), 0);
    } else {
      EXPECT_EQ(Extra(db->get(), "tree_inserts_total"), 0);
      // The hot versions reach the pages again: through adaptation started by the searches, or
      // by background work already under way when the writes ended.
      ScanUntilConverged(db->get(), 2000, 2600, /*empty_memtable=*/false);
      EXPECT_GT(Extra(db->get(), "page_merges_total"), 0);
    }
    // A few more hot writes, far from filling the memtable, then none: the searches have the
    // memtable frozen and its hot versions adapted too, so that they need not merge it.
    write(db->get(), 2000, 600, 10, 4);
    // (On a loaded machine writes may pause long enough for the memtable to be frozen at once;
    // the searches below must converge either way.)
    ScanUntilConverged(db->get(), 2000, 2600);
    EXPECT_EQ(Extra(db->get(), "memtable_entries"), 0);
    EXPECT_EQ(RunsProbedByScans(db->get(), 2000, 2600, 20), 0);
    ExpectMatches(db->get(), model, "after adapting again");
    ExpectVerifyClean(db->get(), model.size(), "after adapting again");
    ASSERT_OK((*db)->Close());
  }
  auto db = Db::Open(AhaOptions(dir.path(), params));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_GT(Extra(db->get(), "leaf_pages"), 0);
  ExpectMatches(db->get(), model, "after reopening");
  ExpectVerifyClean(db->get(), model.size(), "after reopening");
}

INSTANTIATE_TEST_SUITE_P(Modes, AhaAdaptTest,
                         ::testing::Values(AdaptCase{"down", "even", "batch"},
                                           AdaptCase{"side", "sound_remedy", "batch"},
                                           AdaptCase{"down", "sound_remedy", "tree"}),
                         [](const auto& info) {
                           return info.param.split + "_" + info.param.alloc + "_" +
                                  info.param.insert;
                         });

// Without a configured range, searches concentrated on a narrow range are detected as hot; the
// range stays while the searches stay in it and moves when they move.
TEST(AhaVariantTest, DetectorFindsTheRangeSearchesFavour) {
  TempDir dir;
  const ParamMap params = {{"memtable_bytes", "16384"}, {"run_pages", "8"}, {"l0_runs", "2"},
                           {"level_ratio", "2"},        {"fanout", "4"},    {"node_pages", "16"}};
  Model model;
  auto db = Db::Open(AhaOptions(dir.path(), params));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (uint64_t i = 0; i < 8000; ++i) {
    const std::string v = Value(i, 0, 60);
    ASSERT_OK((*db)->Put(Key((i * 7919) % 8000), v));
    model[Key((i * 7919) % 8000)] = v;
  }
  Settle(db->get(), 2);
  EXPECT_EQ(Extra(db->get(), "hot_ranges"), 0);
  ScanUntilAdapted(db->get(), 4000, 4300, 1);
  EXPECT_EQ(Extra(db->get(), "hot_ranges"), 1);
  EXPECT_GT(Extra(db->get(), "adapted_leaves"), 0);
  ExpectMatches(db->get(), model, "after adapting");
  ExpectVerifyClean(db->get(), model.size(), "after adapting");
  // Searches that drift a little stay inside the range found: it is kept (hysteresis), so its
  // bounds do not move with every window.
  const double detections = Extra(db->get(), "hot_detections_total");
  auto scans = [&](uint64_t lo, uint64_t hi, int n) {
    std::mt19937_64 rng(11);
    for (int q = 0; q < n; ++q) {
      ScanOptions o;
      o.lower = Key(lo + rng() % (hi - lo));
      auto it = (*db)->NewIterator(o);
      ASSERT_TRUE(it.ok());
      for (int k = 0; k < 20 && (*it)->Valid(); ++k) (*it)->Next();
    }
  };
  scans(4010, 4290, 640);
  EXPECT_EQ(Extra(db->get(), "hot_detections_total"), detections);
  // Searches that move elsewhere make a new range.
  scans(6000, 6300, 640);
  EXPECT_GT(Extra(db->get(), "hot_detections_total"), detections);
  ExpectMatches(db->get(), model, "after the searches moved");
  ExpectVerifyClean(db->get(), model.size(), "after the searches moved");
}

TEST(AhaVariantTest, BulkLoadIntoAFilledStoreIsRefusedAndWritesGoOn) {
  TempDir dir;
  auto db = Db::Open(AhaOptions(dir.path(), {}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_OK((*db)->Put("a", "1"));
  EXPECT_GT((*db)->GetStats().index.entries, 0u);
  bool given = false;
  const Status s = (*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (given) return false;
    given = true;
    *k = "b";
    *v = "2";
    return true;
  });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  // A refused bulk load leaves the store writable.
  ASSERT_OK((*db)->Put("c", "3"));
  ExpectMatches(db->get(), {{"a", "1"}, {"c", "3"}}, "after the refused load");
}

// Overwrites of a small working set never fill a memtable. The log the memtable holds back still
// stays within about checkpoint.wal_bytes (it is flushed once it keeps a quarter of that), and a
// clean close writes the memtables out, so the next open replays nothing.
TEST(AhaVariantTest, OverwritesKeepTheLogBoundedAndACleanCloseReplaysNothing) {
  TempDir dir;
  Options o = AhaOptions(dir.path(), {});
  o.wal.segment_bytes = 8 << 20;  // the smallest max_unsynced_bytes allows
  o.checkpoint.wal_bytes = 16 << 20;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Model model;
  // About 100 MiB of log over 64 keys (64 KiB of live data), under the 200,000-record window.
  for (int i = 0; i < 100000; ++i) {
    const std::string k = fmt::format("k{:03d}", i % 64);
    std::string v = fmt::format("{}:", i);
    v.resize(1000, 'x');
    ASSERT_OK((*db)->Put(k, v));
    model[k] = v;
  }
  Settle(db->get(), 1e9);
  ASSERT_OK((*db)->Checkpoint());
  const WalStats wal = (*db)->GetStats().wal;
  EXPECT_LE(wal.segments, 4u) << "the log keeps about 1.25x checkpoint.wal_bytes at most";
  EXPECT_GT(Extra(db->get(), "flushes_total"), 0);
  ASSERT_OK((*db)->Close());
  db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ((*db)->GetStats().recovery_replayed_records, 0u);
  ExpectMatches(db->get(), model, "after a clean close");
  ExpectVerifyClean(db->get(), model.size(), "after a clean close");
}

// The runs' extents, as Verify claims them.
std::vector<std::pair<PageId, uint32_t>> RunExtents(Db* db) {
  class Claims final : public IndexVerifier {
   public:
    void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
      if (what == "aha run") runs.emplace_back(first, count);
    }
    void OnCell(Slice, Slice) override {}
    void OnShadowedCell(Slice, Slice) override {}
    void Problem(std::string) override {}
    std::vector<std::pair<PageId, uint32_t>> runs;
  };
  Claims claims;
  EXPECT_OK(static_cast<DbImpl*>(db)->index()->Verify(&claims));
  return claims.runs;
}

// A run's index and filter pages only repeat what its data pages hold: with one of each damaged
// on disk, the store opens (the fences are read off the data pages), every key reads right, and
// Verify names the damage.
TEST(AhaVariantTest, DamagedRunIndexAndFilterPagesLoseNothing) {
  TempDir dir;
  const Options o = AhaOptions(dir.path(), {{"memtable_bytes", "65536"}});
  Model model;
  std::vector<std::pair<PageId, uint32_t>> runs;
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (uint64_t i = 0; i < 20000; ++i) {
      const std::string v = Value(i, 0, 40);
      ASSERT_OK((*db)->Put(Key(i * 7), v));
      model[Key(i * 7)] = v;
    }
    Settle(db->get(), 1e9);
    ASSERT_OK((*db)->Checkpoint());
    runs = RunExtents(db->get());
    ASSERT_OK((*db)->Close());
  }
  ASSERT_FALSE(runs.empty());
  // The largest run: its last page is an index page, the one before it (with enough entries)
  // a filter page.
  const auto run = *std::max_element(
      runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  ASSERT_GE(run.second, 3u);
  const std::string path = dir.path() + "/grove.data";
  for (const PageId page : {run.first + run.second - 1, run.first + run.second - 2}) {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::streamoff at = static_cast<std::streamoff>(page * 4096 + 200);
    f.seekg(at);
    char byte;
    f.read(&byte, 1);
    f.seekp(at);
    const char flipped = static_cast<char>(byte ^ 0x10);
    f.write(&flipped, 1);
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(Extra(db->get(), "run_index_rebuilds_total"), 1);
  std::string v;
  for (const auto& [k, want] : model) {
    auto found = (*db)->Get(k, &v);
    ASSERT_TRUE(found.ok()) << k << ": " << found.status().ToString();
    ASSERT_TRUE(*found) << k;
    ASSERT_EQ(v, want) << k;
    auto absent = (*db)->Get(k + "x", &v);
    ASSERT_TRUE(absent.ok()) << absent.status().ToString();
    EXPECT_FALSE(*absent);
  }
  ExpectMatches(db->get(), model, "with damaged index and filter pages");
  VerifyReport report;
  const Status vs = (*db)->Verify(&report);
  EXPECT_TRUE(!vs.ok() || !report.problems.empty()) << "Verify must name the damage";
}

TEST(AhaVariantTest, BadParametersAreRefusedByName) {
  TempDir dir;
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"run_pages", "4"},
                                                        {"memtable_bytes", "12"},
                                                        {"l0_runs", "0"},
                                                        {"root_levels", "1"},
                                                        {"bloom_bits_per_key", "-1"},
                                                        {"buffer_pool_share", "1"},
                                                        {"fanout", "1"},
                                                        {"node_pages", "100"},
                                                        {"node_l0_runs", "0"},
                                                        {"hot_ranges", "b..a"},
                                                        {"hot_ranges", "nodots"},
                                                        {"split", "up"},
                                                        {"leaf_alloc", "odd"},
                                                        {"adapt", "yes"}}) {
    auto db = Db::Open(AhaOptions(dir.path(), {{name, value}}));
    ASSERT_FALSE(db.ok()) << name;
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument) << db.status().ToString();
    EXPECT_NE(db.status().ToString().find(name), std::string::npos) << db.status().ToString();
  }
}

}  // namespace
}  // namespace grove::testing
