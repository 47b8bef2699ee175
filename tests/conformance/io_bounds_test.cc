// Conformance: the IO bound each variant declares (VariantCase::max_reads_per_get and
// max_mean_reads_per_get). With every inner node cached and a cache far smaller than the leaves,
// a point lookup of an inline value reads at most that many pages; inner nodes are never read
// again once the cache is warm.

#include <random>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class ConformanceIoBoundsTest : public ::testing::TestWithParam<VariantCase> {};

// Reads a lookup causes: on demand, and ahead of need (path prediction).
uint64_t DemandReads(Db* db) {
  const auto& r = db->GetStats().cache.page_reads;
  return r[static_cast<int>(IoCause::kDemand)] + r[static_cast<int>(IoCause::kPrefetch)];
}

TEST_P(ConformanceIoBoundsTest, LookupsReadWhatTheVariantDeclares) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.path());
  o.cache_bytes = std::max<uint64_t>(1 << 20, c.min_cache_bytes);
  // 400,000 keys make leaves of four times a cache of up to 4 MiB (about 90 of these entries
  // fill a leaf page); a case that needs a larger cache (hln_l256: 16 MiB) gets proportionally
  // more. Not more for the others: AULID's inner nodes grow with the keys and must stay under
  // half the cache.
  const uint64_t kKeys = 400000 * std::max<uint64_t>(1, o.cache_bytes / (4 << 20));
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    uint64_t i = 0;
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (i == kKeys) return false;
      *k = Key(i * 5);
      *v = Value(i, 0, 16);
      ++i;
      return true;
    }));
    ASSERT_OK((*db)->Close());
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const IndexStats shape = (*db)->GetStats().index;
  const uint64_t frames = o.cache_bytes / 4096;
  ASSERT_LT(shape.inner_pages * 2, frames) << "inner nodes must fit the cache comfortably";
  ASSERT_GT(shape.leaf_pages, 4 * frames) << "leaves must not fit the cache";

  std::mt19937_64 rng(5);
  std::string v;
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(*(*db)->Get(Key(rng() % kKeys * 5), &v));
  uint64_t total = 0, worst = 0;
  constexpr int kLookups = 5000;
  for (int i = 0; i < kLookups; ++i) {
    const uint64_t k = rng() % kKeys;
    const uint64_t before = DemandReads(db->get());
    ASSERT_TRUE(*(*db)->Get(Key(k * 5), &v));
    ASSERT_EQ(v, Value(k, 0, 16));
    const uint64_t cost = DemandReads(db->get()) - before;
    worst = std::max(worst, cost);
    total += cost;
  }
  const double mean = static_cast<double>(total) / kLookups;
  std::printf("%s: %.3f page reads per Get (at most %llu), %llu inner and %llu leaf pages\n",
              c.name.c_str(), mean, static_cast<unsigned long long>(worst),
              static_cast<unsigned long long>(shape.inner_pages),
              static_cast<unsigned long long>(shape.leaf_pages));
  EXPECT_LE(worst, c.max_reads_per_get);
  EXPECT_LE(mean, c.max_mean_reads_per_get);
  EXPECT_GT(mean, 0.5) << "the leaves should mostly miss the cache";
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceIoBoundsTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
