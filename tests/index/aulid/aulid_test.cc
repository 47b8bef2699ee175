// The aulid variant through the Db, on key shapes the conformance suite (8-byte integer keys)
// does not reach: keys that share their first 8 bytes (runs of leaves under one inner entry),
// keys around and outside a bulk load's key prefix, and the inner part's shape after a bulk load.

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "testutil/temp_dir.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

Options AulidOptions(const std::string& dir, ParamMap params = {}) {
  Options o = SmallOptions(dir);
  o.index.variant = "aulid";
  o.index.params = std::move(params);
  return o;
}

// Random puts, replacements and deletes against a model, with scans, Verify and a reopen.
// Returns the mean leaf pages per lookup (the run walks included).
double RunModel(const std::string& dir, const ParamMap& params,
                const std::function<std::string(uint64_t)>& key, uint64_t seed) {
  Model model;
  std::mt19937_64 rng(seed);
  auto db = Db::Open(AulidOptions(dir, params));
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return -1;
  for (int step = 0; step < 30000; ++step) {
    const uint64_t i = rng() % 20000;
    const std::string k = key(i);
    if (rng() % 5 == 0) {
      EXPECT_OK((*db)->Delete(k));
      model.erase(k);
    } else {
      const std::string v = Value(i, step, 8 + rng() % 200);
      EXPECT_OK((*db)->Put(k, v));
      model[k] = v;
    }
  }
  ExpectMatches(db->get(), model, "after the writes");
  ExpectVerifyClean(db->get(), model.size(), "after the writes");
  EXPECT_GT(Extra(db->get(), "smo_split_total"), 0);
  EXPECT_OK((*db)->Close());
  db = Db::Open(AulidOptions(dir, params));
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return -1;
  ExpectMatches(db->get(), model, "after reopening");
  ExpectVerifyClean(db->get(), model.size(), "after reopening");
  std::string v;
  for (const auto& [k, want] : model) {
    EXPECT_TRUE(*(*db)->Get(k, &v));
    EXPECT_EQ(v, want);
  }
  return Extra(db->get(), "leaf_pages_per_lookup");
}

// "user:0000012345": every key shares its first 8 bytes, so an index built by inserts starts
// with one projection and every split joins one run, until a split that walks a long run takes
// the shared prefix off (TryReindex); lookups then read one leaf.
TEST(AulidTest, KeysSharingTheirFirstEightBytes) {
  TempDir dir;
  auto key = [](uint64_t i) { return fmt::format("user:{:010d}", i); };
  const double leaves = RunModel(dir.path(), {}, key, 1);
  EXPECT_LT(leaves, 1.5);
}

// Clusters: keys that share 8 bytes within a cluster, clusters far apart, and no prefix common to
// all: runs of many leaves that lookups walk (correct, not fast: docs/variants.md).
TEST(AulidTest, ClusteredSharedPrefixes) {
  TempDir dir;
  RunModel(
      dir.path(), {}, [](uint64_t i) { return fmt::format("{:04d}abcd-{:06d}", i % 37, i); }, 2);
}

TEST(AulidTest, LippBModeOnSharedPrefixes) {
  TempDir dir;
  RunModel(
      dir.path(), {{"mode", "lipp_b"}, {"scan_forward", "off"}},
      [](uint64_t i) { return fmt::format("k{:08d}", i * 7919 % 20000); }, 3);
}

// A bulk load of keys that share a long prefix: the prefix is taken off, so every leaf but the
// last has an inner entry, and later keys below and above the prefix's range still work.
TEST(AulidTest, BulkLoadTakesTheSharedPrefixOff) {
  TempDir dir;
  auto db = Db::Open(AulidOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Model model;
  uint64_t i = 0;
  ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (i == 50000) return false;
    *k = fmt::format("tenant-42/user:{:012d}", i * 3);
    *v = Value(i, 0);
    model[*k] = *v;
    ++i;
    return true;
  }));
  const IndexStats s = (*db)->GetStats().index;
  EXPECT_EQ(Extra(db->get(), "inner_entries") + 1, static_cast<double>(s.leaf_pages));
  EXPECT_GT(s.inner_pages, 0u);
  ExpectVerifyClean(db->get(), model.size(), "after the bulk load");
  // Inserts between, below and above the loaded keys.
  std::mt19937_64 rng(4);
  for (int step = 0; step < 20000; ++step) {
    std::string k;
    switch (rng() % 4) {
      case 0:
        k = fmt::format("tenant-41/{}", rng() % 100000);
        break;
      case 1:
        k = fmt::format("tenant-43/{}", rng() % 100000);
        break;
      default:
        k = fmt::format("tenant-42/user:{:012d}", rng() % 150000);
    }
    const std::string v = Value(step, 1);
    ASSERT_OK((*db)->Put(k, v));
    model[k] = v;
  }
  ExpectMatches(db->get(), model, "after the inserts");
  ExpectVerifyClean(db->get(), model.size(), "after the inserts");
  // A reindex, when the write room lets one run, keeps the bulk load's prefix: the common prefix
  // of all keys ("tenant-4") would make the 50,000 loaded keys one run of ~1,000 leaves, walked
  // by every lookup (aulid/prefix.h). Lookups walk the runs of the keys outside the prefix
  // (8.0 leaves per lookup here), not the loaded keys'.
  EXPECT_EQ(Extra(db->get(), "prefix_bytes"), 21);
  EXPECT_LT(Extra(db->get(), "leaf_pages_per_lookup"), 20);
}

// With 8-byte integer keys bulk loaded, lookups of present keys read the inner pages and one
// leaf, and the inner part is shallow.
TEST(AulidTest, IntegerKeysAreOneLeafPerRun) {
  TempDir dir;
  auto db = Db::Open(AulidOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  uint64_t i = 0;
  ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (i == 100000) return false;
    *k = Key(i * i % 1000003 + i * 1000003);  // uneven gaps, ascending
    *v = Value(i, 0);
    ++i;
    return true;
  }));
  const IndexStats s = (*db)->GetStats().index;
  EXPECT_EQ(Extra(db->get(), "inner_entries") + 1, static_cast<double>(s.leaf_pages));
  EXPECT_LE(Extra(db->get(), "data_slot_depth"), 2.0);
  std::mt19937_64 rng(5);
  std::string v;
  for (int n = 0; n < 2000; ++n) {
    const uint64_t j = rng() % 100000;
    ASSERT_TRUE(*(*db)->Get(Key(j * j % 1000003 + j * 1000003), &v));
    ASSERT_EQ(v, Value(j, 0));
  }
  // One leaf per lookup, plus the sibling when ScanFward cannot settle a predecessor.
  EXPECT_LE(Extra(db->get(), "leaf_pages_per_lookup"), 1.3);
  EXPECT_LE(Extra(db->get(), "inner_pages_per_lookup"), 2.5);
}

// A forward scan carries the leaf after each batch instead of routing again; splits and merges
// between batches (inserts that fill leaves ahead of and behind the cursor, deletes that empty
// them) must send it back to routing. Every key present throughout is returned once, in order.
TEST(AulidTest, ScansCarryTheNextLeafUntilTheChainChanges) {
  TempDir dir;
  auto db = Db::Open(AulidOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  uint64_t i = 0;
  ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (i == 40000) return false;
    *k = Key(i * 10);  // gaps for the inserts below
    *v = Value(i, 0);
    ++i;
    return true;
  }));
  std::mt19937_64 rng(3);
  std::set<uint64_t> deleted;  // of the loaded keys (multiples of 10)
  auto it = (*db)->NewIterator(ScanOptions());
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  std::string last;
  uint64_t seen_loaded = 0;
  for (int n = 0; (*it)->Valid(); (*it)->Next(), ++n) {
    const std::string k((*it)->key());
    ASSERT_TRUE(last.empty() || last < k) << "out of order or repeated after " << last;
    last = k;
    ASSERT_EQ(k.size(), 8u);
    const uint64_t id = DecodeBigEndian64(k.data());
    if (id % 10 == 0) {
      EXPECT_FALSE(deleted.count(id)) << id << " was deleted before the cursor reached it";
      ++seen_loaded;
    }
    if (n % 150 != 0) continue;
    // Between batches: a burst of inserts (splits) around a random place, sometimes right
    // ahead of the cursor, and deletes that empty a stretch of leaves (merges).
    // (Inserted keys are never multiples of 10, which are the loaded ones.)
    const uint64_t at = rng() % 2 == 0 ? (id / 10 + 1) * 10 : (rng() % 40000) * 10;
    for (uint64_t j = 0; j < 150; ++j) {
      ASSERT_OK((*db)->Put(Key(at + 1 + (j % 9) + (j / 9) * 10), Value(j, 1, 120)));
    }
    if (n % 1500 == 0) {
      const uint64_t from = (rng() % 40000) * 10;
      for (uint64_t d = from; d < from + 3000 && d < 400000; d += 10) {
        // Well ahead of the cursor only (past the batch it holds, a leaf's rest): those must
        // not come back.
        if (d <= id + 20000) continue;
        ASSERT_OK((*db)->Delete(Key(d)));
        deleted.insert(d);
      }
    }
  }
  ASSERT_OK((*it)->status());
  EXPECT_EQ(seen_loaded, 40000 - deleted.size());
  EXPECT_GT(Extra(db->get(), "smo_split_total"), 0);
  EXPECT_GT(Extra(db->get(), "smo_merge_total"), 0);
}

// Deletes of most keys: leaves under a quarter full merge, within runs and across them (an
// inner entry goes), and everything left is still found, before and after reopening.
TEST(AulidTest, DeletesMergeLeavesAndRuns) {
  TempDir dir;
  Model model;
  uint64_t leaves_loaded = 0;
  {
    auto db = Db::Open(AulidOptions(dir.path()));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    uint64_t i = 0;
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (i == 60000) return false;
      *k = Key(i * 7);
      *v = Value(i, 0);
      model[*k] = *v;
      ++i;
      return true;
    }));
    leaves_loaded = (*db)->GetStats().index.leaf_pages;
    std::vector<uint64_t> order(60000);
    for (uint64_t j = 0; j < order.size(); ++j) order[j] = j;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(6));
    for (size_t n = 0; n < 54000; ++n) {
      ASSERT_OK((*db)->Delete(Key(order[n] * 7)));
      model.erase(Key(order[n] * 7));
    }
    ExpectMatches(db->get(), model, "after the deletes");
    ExpectVerifyClean(db->get(), model.size(), "after the deletes");
    const IndexStats s = (*db)->GetStats().index;
    EXPECT_LT(s.leaf_pages * 3, leaves_loaded) << "a tenth of the keys in a third of the leaves";
    EXPECT_GT(Extra(db->get(), "smo_merge_total"), 0);
    EXPECT_GT(Extra(db->get(), "merge_run_joins_total"), 0);
    EXPECT_EQ(Extra(db->get(), "inner_entries") + 1, static_cast<double>(s.leaf_pages))
        << "integer keys: one leaf per run";
    // Inserts into the merged ranges split the leaves again.
    for (uint64_t j = 0; j < 20000; ++j) {
      const std::string k = Key(j * 21 + 3);
      ASSERT_OK((*db)->Put(k, Value(j, 1)));
      model[k] = Value(j, 1);
    }
    ExpectVerifyClean(db->get(), model.size(), "after inserting again");
    ASSERT_OK((*db)->Close());
  }
  auto db = Db::Open(AulidOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_GT(Extra(db->get(), "smo_merge_total"), 0) << "merges are counted across reopening";
  ExpectMatches(db->get(), model, "after reopening");
  ExpectVerifyClean(db->get(), model.size(), "after reopening");
}

// Keys that share their first 8 bytes, inserted one by one, then mostly deleted: merges inside
// multi-leaf runs (the tail's included) as well as between runs.
TEST(AulidTest, DeletesMergeInsideRuns) {
  TempDir dir;
  auto db = Db::Open(AulidOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto key = [](uint64_t i) { return fmt::format("user:{:02d}-{:08d}", i % 7, i); };
  Model model;
  for (uint64_t i = 0; i < 30000; ++i) {
    ASSERT_OK((*db)->Put(key(i), Value(i, 0, 40)));
    model[key(i)] = Value(i, 0, 40);
  }
  const uint64_t leaves = (*db)->GetStats().index.leaf_pages;
  std::mt19937_64 rng(9);
  for (uint64_t i = 0; i < 30000; ++i) {
    if (rng() % 10 == 0) continue;
    ASSERT_OK((*db)->Delete(key(i)));
    model.erase(key(i));
  }
  EXPECT_GT(Extra(db->get(), "smo_merge_total"), 0);
  EXPECT_LT((*db)->GetStats().index.leaf_pages * 2, leaves);
  ExpectMatches(db->get(), model, "after the deletes");
  ExpectVerifyClean(db->get(), model.size(), "after the deletes");
}

// Fulfill: a bulk load copies DATA entries into the NULL slots before them, and lookups of
// present and absent keys alike are answered right while the copies are trusted, in no more
// inner page reads than without them. The first change of the inner part retires them.
TEST(AulidTest, FulfillCopiesServeLookupsUntilTheFirstInnerChange) {
  auto key = [](uint64_t i) { return Key(i * i % 1000003 + i * 1000003); };
  double inner_reads[2] = {0, 0};
  for (const bool fulfill : {false, true}) {
    SCOPED_TRACE(fulfill ? "fulfill on" : "fulfill off");
    TempDir dir;
    const ParamMap params = {{"fulfill", fulfill ? "on" : "off"}};
    Model model;
    {
      auto db = Db::Open(AulidOptions(dir.path(), params));
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      uint64_t i = 0;
      ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
        if (i == 100000) return false;
        *k = key(i);
        *v = Value(i, 0);
        model[*k] = *v;
        ++i;
        return true;
      }));
      EXPECT_EQ(Extra(db->get(), "fulfill_copies_valid"), fulfill ? 1 : 0);
      ExpectVerifyClean(db->get(), model.size(), "after the bulk load");
      std::mt19937_64 rng(8);
      std::string v;
      for (int n = 0; n < 4000; ++n) {
        const uint64_t j = rng() % 100000;
        ASSERT_TRUE(*(*db)->Get(key(j), &v)) << j;
        ASSERT_EQ(v, Value(j, 0));
        const std::string absent = Key(rng() % (100000 * 1000003ull));
        EXPECT_EQ(*(*db)->Get(absent, &v), model.count(absent) == 1) << absent;
      }
      inner_reads[fulfill] = Extra(db->get(), "inner_pages_per_lookup");
      ASSERT_OK((*db)->Close());
    }
    auto db = Db::Open(AulidOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(Extra(db->get(), "fulfill_copies_valid"), fulfill ? 1 : 0) << "after reopening";
    // Inserts packed into a few leaves split them and change the inner part: the copies are
    // retired.
    for (uint64_t j = 0; j < 20000; ++j) {
      const std::string k = Key(j * 7 + 1);
      ASSERT_OK((*db)->Put(k, Value(j, 1)));
      model[k] = Value(j, 1);
    }
    EXPECT_GT(Extra(db->get(), "smo_split_total"), 0);
    EXPECT_EQ(Extra(db->get(), "fulfill_copies_valid"), 0);
    ExpectMatches(db->get(), model, "after the inserts");
    ExpectVerifyClean(db->get(), model.size(), "after the inserts");
  }
  EXPECT_LT(inner_reads[1], inner_reads[0]) << "lookups landing on NULL slots read less";
}

}  // namespace
}  // namespace grove::testing
