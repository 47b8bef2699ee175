// Deterministic IO accounting: with every inner node cached, a point lookup costs exactly one
// page read for its leaf (none when the leaf is cached too), plus the pages of an out-of-line
// value. Inner nodes are never read again once the cache is warm.

#include <random>

#include "engine/db_test_util.h"
#include "page/page.h"

namespace grove::testing {
namespace {

class IoAccountingTest : public ::testing::TestWithParam<IoBackendKind> {};

uint64_t DemandReads(Db* db) { return db->GetStats().cache.page_reads[0]; }

TEST_P(IoAccountingTest, OneReadPerLookupWhenInnerNodesAreCached) {
  TempDir dir;
  Options o = SmallOptions(dir.path(), GetParam());
  o.cache_bytes = 1 << 20;  // 256 frames: all inner nodes, a small fraction of the leaves
  constexpr uint64_t kKeys = 1500000;
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok());
    uint64_t i = 0;
    ASSERT_OK((*db)->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
      if (i == kKeys) return false;
      *k = Key(i);
      *v = Value(i, 0, i % 1000 == 7 ? 3000 : 16);  // a few values live in the value store
      ++i;
      return true;
    }));
    ASSERT_OK((*db)->Close());
  }
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok());
  const IndexStats shape = (*db)->GetStats().index;
  ASSERT_GE(shape.height, 3u);
  ASSERT_LT(shape.inner_pages * 2, 256u) << "inner nodes must fit the cache comfortably";

  std::mt19937_64 rng(5);
  std::string v;
  // Warm up: every inner node gets touched.
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(*(*db)->Get(Key(rng() % kKeys), &v));

  uint64_t one_read = 0, cached = 0;
  for (int i = 0; i < 5000; ++i) {
    uint64_t k = rng() % kKeys;
    if (k % 1000 == 7) ++k;  // inline values here; out-of-line ones below
    const uint64_t before = DemandReads(db->get());
    ASSERT_TRUE(*(*db)->Get(Key(k), &v));
    const uint64_t cost = DemandReads(db->get()) - before;
    ASSERT_LE(cost, 1u) << "lookup " << i << " read " << cost << " pages";
    (cost == 1 ? one_read : cached)++;
  }
  EXPECT_GT(one_read, cached) << "the leaves should mostly miss the cache";

  // Out-of-line values: the leaf plus the value's pages, each unless cached.
  uint64_t full_cost = 0;
  for (int i = 0; i < 300; ++i) {
    const uint64_t k = (rng() % (kKeys / 1000)) * 1000 + 7;
    const uint64_t before = DemandReads(db->get());
    ASSERT_TRUE(*(*db)->Get(Key(k), &v));
    ASSERT_EQ(v, Value(k, 0, 3000));
    const uint64_t cost = DemandReads(db->get()) - before;
    const uint64_t value_pages =
        (v.size() + kPageSize - kPageHeaderSize - 1) / (kPageSize - kPageHeaderSize);
    ASSERT_LE(cost, 1 + value_pages);
    full_cost += cost == 1 + value_pages;
  }
  EXPECT_GT(full_cost, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, IoAccountingTest,
                         ::testing::Values(IoBackendKind::kPsync, IoBackendKind::kUring),
                         BackendName);

}  // namespace
}  // namespace grove::testing
