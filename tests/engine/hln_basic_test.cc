// Engine-level tests of the hln variant: basic operations, structure changes and their metrics,
// bulk load, and the refusal to reopen with other layout parameters.

#include <random>

#include "engine/db_impl.h"
#include "engine/hln_test_util.h"
#include "index/registry.h"

namespace grove::testing {
namespace {

TEST(HlnBasic, PutGetDeleteScan) {
  TempDir dir;
  auto db = Db::Open(HlnOptions(dir.path(), {{"leaf_pages", "4"}}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::map<std::string, std::string> model;
  for (uint64_t i = 0; i < 3000; ++i) {
    const uint64_t k = (i * 7919) % 3000;
    ASSERT_OK((*db)->Put(Key(k), Value(k, 1)));
    model[Key(k)] = Value(k, 1);
  }
  for (uint64_t k = 0; k < 3000; k += 3) {
    ASSERT_OK((*db)->Delete(Key(k)));
    model.erase(Key(k));
  }
  for (uint64_t k = 1; k < 3000; k += 5) {
    ASSERT_OK((*db)->Put(Key(k), Value(k, 2, 40)));
    model[Key(k)] = Value(k, 2, 40);
  }
  ExpectMatches(db->get(), model, "before reopen");
  ExpectVerifyClean(db->get(), model.size(), "before reopen");
  const IndexStats s = (*db)->GetStats().index;
  EXPECT_EQ(s.variant, "hln");
  EXPECT_EQ(s.entries, model.size());
  EXPECT_GT(Extra(db->get(), "splits_total"), 0);
  EXPECT_GT(Extra(db->get(), "rebalances_total"), 0);
  ASSERT_OK((*db)->Close());
  db = Db::Open(HlnOptions(dir.path(), {{"leaf_pages", "4"}}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectMatches(db->get(), model, "after reopen");
  ExpectVerifyClean(db->get(), model.size(), "after reopen");
}

TEST(HlnBasic, ReopenWithOtherLayoutIsRefused) {
  TempDir dir;
  const HlnParams base = {{"leaf_pages", "16"}, {"hint_bits", "4"}};
  {
    auto db = Db::Open(HlnOptions(dir.path(), base));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_OK((*db)->Put("k", "v"));
    ASSERT_OK((*db)->Close());
  }
  for (const auto& [param, value] :
       std::vector<std::pair<std::string, std::string>>{{"leaf_pages", "64"},
                                                        {"hint_bits", "8"},
                                                        {"hash", "fnv"},
                                                        {"stash", "true"},
                                                        {"hint_range", "0.3"}}) {
    HlnParams p = base;
    p[param] = value;
    auto db = Db::Open(HlnOptions(dir.path(), p));
    ASSERT_FALSE(db.ok()) << param;
    EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition) << param;
    EXPECT_NE(db.status().message().find(param + "=" + value), std::string::npos)
        << db.status().ToString();
  }
  // Not a layout parameter: may change between opens.
  HlnParams p = base;
  p["rebalance_threshold"] = "0.9";
  auto db = Db::Open(HlnOptions(dir.path(), p));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::string v;
  ASSERT_TRUE(*(*db)->Get("k", &v));
  // Another variant is refused too.
  ASSERT_OK((*db)->Close());
  Options o = HlnOptions(dir.path(), {});
  o.index.variant = "btree";
  o.index.params.clear();
  EXPECT_FALSE(Db::Open(o).ok());
}

TEST(HlnBasic, BadParametersAndSmallCacheAreRejected) {
  for (const auto& [param, value] :
       std::vector<std::pair<std::string, std::string>>{{"leaf_pages", "8"},
                                                        {"hint_bits", "3"},
                                                        {"hash", "xxh"},
                                                        {"stash", "yes"},
                                                        {"rebalance_threshold", "1.5"}}) {
    TempDir dir;
    auto db = Db::Open(HlnOptions(dir.path(), {{param, value}}));
    ASSERT_FALSE(db.ok()) << param;
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(db.status().message().find(param), std::string::npos) << db.status().ToString();
  }
  TempDir dir;
  Options o = HlnOptions(dir.path(), {{"leaf_pages", "256"}});
  o.cache_bytes = 8 << 20;  // 8 leaves of 1 MiB
  auto db = Db::Open(o);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("cache_bytes"), std::string::npos);
}

// Uniform random 8-byte keys, the paper's workload: the leaves rebalance until they reach the
// threshold, then split; stash nodes push the fill grade at the split towards 100 %.
TEST(HlnBasic, RebalanceSplitStashMetrics) {
  auto run = [](const HlnParams& params, double* split_fill, double* extra_per_lookup) {
    TempDir dir;
    auto db = Db::Open(HlnOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    std::mt19937_64 rng(5);
    std::vector<std::string> keys;
    for (int i = 0; i < 30000; ++i) {
      keys.push_back(Key(rng()));
      WriteBatch b;
      b.Put(keys.back(), std::string(8, 'v'));
      ASSERT_OK((*db)->Write(b));
    }
    std::string v;
    for (int i = 0; i < 20000; ++i) ASSERT_TRUE(*(*db)->Get(keys[rng() % keys.size()], &v));
    ExpectVerifyClean(db->get(), keys.size(), ParamsName(params));
    EXPECT_GT(Extra(db->get(), "rebalances_total"), 0) << ParamsName(params);
    EXPECT_GT(Extra(db->get(), "splits_total"), 0) << ParamsName(params);
    *split_fill = Extra(db->get(), "split_fill_grade");
    *extra_per_lookup =
        Extra(db->get(), "extra_subnode_reads_total") / Extra(db->get(), "point_lookups_total");
    if (params.count("stash")) {
      EXPECT_GT(Extra(db->get(), "stash_conversions_total"), 0);
    }
  };
  double plain_fill, plain_extra, stash_fill, stash_extra, nohint_fill, nohint_extra;
  run({{"leaf_pages", "16"}}, &plain_fill, &plain_extra);
  run({{"leaf_pages", "16"}, {"stash", "true"}}, &stash_fill, &stash_extra);
  run({{"leaf_pages", "16"}, {"hint_bits", "0"}}, &nohint_fill, &nohint_extra);
  if (HasFatalFailure()) return;
  EXPECT_NEAR(plain_fill, 0.97, 0.02);
  EXPECT_GT(stash_fill, 0.985);
  EXPECT_LT(plain_extra, 0.03);
  EXPECT_GT(nohint_extra, plain_extra);
}

TEST(HlnBasic, BulkLoadThenWrites) {
  for (const HlnParams& params : std::vector<HlnParams>{{{"leaf_pages", "16"}},
                                                        {{"leaf_pages", "4"}},
                                                        {{"leaf_pages", "16"}, {"hash", "fnv"}},
                                                        {{"leaf_pages", "4"}, {"hash", "fnv"}}}) {
    TempDir dir;
    auto db = Db::Open(HlnOptions(dir.path(), params));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    std::map<std::string, std::string> model;
    for (uint64_t i = 0; i < 20000; ++i) model[Key(i * 10)] = Value(i, 0);
    auto it = model.begin();
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (it == model.end()) return false;
      *k = it->first;
      *v = it->second;
      ++it;
      return true;
    }));
    ExpectVerifyClean(db->get(), model.size(), "after bulk load");
    // Hints computed by the bulk load predict (nearly) every key's subnode.
    EXPECT_LT(Extra(db->get(), "verify_misguessed_fraction"), 0.05) << ParamsName(params);
    {
      std::string v;
      for (const auto& [k, val] : model) ASSERT_TRUE(*(*db)->Get(k, &v));
      EXPECT_LT(Extra(db->get(), "extra_subnode_reads_total"), 0.05 * model.size())
          << ParamsName(params);
    }
    for (uint64_t i = 0; i < 5000; ++i) {
      const uint64_t k = i * 37 % 200000;
      ASSERT_OK((*db)->Put(Key(k), Value(k, 1)));
      model[Key(k)] = Value(k, 1);
    }
    ExpectMatches(db->get(), model, ParamsName(params));
    ExpectVerifyClean(db->get(), model.size(), ParamsName(params));
  }
}

// Keys that share a long prefix make separators long and inner nodes split, and give Project()
// nothing to work with: every guess is subnode 0 and the walk does all the work.
TEST(HlnBasic, LongKeysGrowInnerLevels) {
  TempDir dir;
  auto db = Db::Open(HlnOptions(dir.path(), {{"leaf_pages", "4"}, {"hint_bits", "8"}}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::map<std::string, std::string> model;
  const std::string prefix(100, 'k');
  for (uint64_t i = 0; i < 12000; ++i) {
    const uint64_t k = (i * 104729) % 12000;
    model[prefix + Key(k)] = "v";
    ASSERT_OK((*db)->Put(prefix + Key(k), "v"));
  }
  EXPECT_GE((*db)->GetStats().index.height, 3u);
  ExpectMatches(db->get(), model, "long keys");
  ExpectVerifyClean(db->get(), model.size(), "long keys");
  // Deleting a long range empties leaves, which merge with their neighbours.
  for (uint64_t k = 500; k < 11500; ++k) {
    ASSERT_OK((*db)->Delete(prefix + Key(k)));
    model.erase(prefix + Key(k));
  }
  EXPECT_GT(Extra(db->get(), "merges_total"), 0);
  ExpectMatches(db->get(), model, "after deletes");
  ExpectVerifyClean(db->get(), model.size(), "after deletes");
}

// A write reserves cache room for every page an operation may dirty before it applies it (pages
// are no-steal). With huge leaves that is the subnodes of two leaves per operation, not btree's
// two pages, so the whole worst case of a batch of a few dozen operations outgrows a small cache:
// such batches are applied operation by operation, letting checkpoints run between them, and
// keep splitting leaves with every page accounted for.
TEST(HlnBasic, BatchesBeyondTheWriteRoomApplyStepwise) {
  TempDir dir;
  Options o = HlnOptions(dir.path(), {{"leaf_pages", "64"}});
  o.cache_bytes = 16 * 64 * 4096;  // the smallest cache hln allows at 256 KiB leaves
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(static_cast<DbImpl*>(db->get())->index()->PagesDirtiedPerOp(), 2u * 64 + 2);
  // groved's startup check asks the registry, before any index is open: the same figure.
  EXPECT_EQ((*IndexRegistry::Builtins()).PagesPerOp("hln", o.index.params), 2u * 64 + 2);
  const uint64_t fits = MaxBatchEntries(o);
  ASSERT_GE(fits, 2u);

  std::map<std::string, std::string> model;
  auto batch_of = [&](uint64_t n, uint64_t seed) {
    WriteBatch b;
    for (uint64_t i = 0; i < n; ++i) {
      const std::string k = Key((seed * 7919 + i * 104729) % 1000003);
      b.Put(k, std::string(200, 'v'));
    }
    return b;
  };
  for (uint64_t round = 0; round < 300; ++round) {
    // Every tenth batch is ten times what fits at once.
    const WriteBatch b = batch_of(round % 10 == 0 ? 10 * fits : fits, round + 2);
    ASSERT_OK((*db)->Write(b));
    ASSERT_OK(b.ForEach([&](WriteBatch::OpType, Slice k, Slice v) {
      model[std::string(k)] = std::string(v);
      return Status::Ok();
    }));
  }
  EXPECT_GT(Extra(db->get(), "splits_total"), 0) << "no leaf split: the test exercises nothing";
  ExpectMatches(db->get(), model, "batches");
  ExpectVerifyClean(db->get(), model.size(), "batches");
  ASSERT_OK((*db)->Close());
  db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ExpectMatches(db->get(), model, "after reopening");
}

}  // namespace
}  // namespace grove::testing
