// The aulid variant through the Db, on key shapes the conformance suite (8-byte integer keys)
// does not reach: keys that share their first 8 bytes (runs of leaves under one inner entry),
// keys around and outside a bulk load's key prefix, and the inner part's shape after a bulk load.

#include <map>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

Options AulidOptions(const std::string& dir, ParamMap params = {}) {
  Options o = SmallOptions(dir);
  o.index.variant = "aulid";
  o.index.params = std::move(params);
  return o;
}

double Extra(Db* db, const std::string& name) {
  const IndexStats s = db->GetStats().index;
  auto it = s.extra.find(name);
  EXPECT_NE(it, s.extra.end()) << name;
  return it == s.extra.end() ? -1 : it->second;
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

}  // namespace
}  // namespace grove::testing
