// TreeLine's memory split through grove::Db (server/index/treeline/memory_split.h), with
// buffer_pool_max_share 0.9: uniform reads of more data than memory move the budget to the buffer
// pool; a hot set of records spread over every page stays in the record cache. By default the
// split is fixed and never moves.

#include <map>
#include <random>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kKeys = 60000;  // about 9 MiB of records against an 8 MiB budget

Options SplitOptions(const std::string& dir, std::map<std::string, std::string> params) {
  Options o = SmallOptions(dir);
  o.index.variant = "treeline";
  o.index.params = std::move(params);
  o.cache_bytes = 8 * kMiB;
  o.checkpoint.interval_seconds = 0;
  return o;
}

std::string Val(uint64_t k) { return std::string(100, static_cast<char>('a' + k % 26)); }

void Load(Db* db) {
  for (uint64_t b = 0; b < kKeys; b += 1000) {
    WriteBatch batch;
    for (uint64_t k = b; k < b + 1000; ++k) batch.Put(Key(k), Val(k));
    ASSERT_OK(db->Write(batch));
  }
}

double Extra(Db* db, const char* name) {
  const DbStats s = db->GetStats();
  auto it = s.index.extra.find(name);
  return it == s.index.extra.end() ? -1 : it->second;
}

// Reads keys drawn by `next` until the pool's share passes `until` bytes or `max_reads` are done;
// returns the pool's share at the end. Every value read is checked.
template <typename Next>
double ReadUntil(Db* db, Next next, double until, uint64_t max_reads) {
  std::string v;
  for (uint64_t n = 0; n < max_reads; ++n) {
    const uint64_t k = next();
    const StatusOr<bool> found = db->Get(Key(k), &v);
    EXPECT_TRUE(found.ok() && *found) << Key(k);
    EXPECT_EQ(v, Val(k));
    if (n % 1000 == 0 && Extra(db, "buffer_pool_split_bytes") > until) break;
  }
  return Extra(db, "buffer_pool_split_bytes");
}

TEST(TreeLineSplitTest, UniformReadsMoveTheBudgetToTheBufferPool) {
  TempDir dir;
  {
    auto db = Db::Open(SplitOptions(dir.path(), {{"buffer_pool_max_share", "0.9"}}));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Load(db->get());
  }
  auto db = Db::Open(SplitOptions(
      dir.path(), {{"buffer_pool_max_share", "0.9"}}));  // a clean start: nothing dirty
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const double start = Extra(db->get(), "buffer_pool_split_bytes");
  EXPECT_EQ(start, 2.0 * kMiB) << "buffer_pool_share's floor: 8 MiB or a quarter of the budget";
  std::mt19937_64 rng(7);
  const double end = ReadUntil(
      db->get(), [&] { return rng() % kKeys; }, 5.0 * kMiB, 3'000'000);
  EXPECT_GT(end, 5.0 * kMiB) << "pool ghost hits " << Extra(db->get(), "pool_ghost_hits_total")
                             << ", record cache ghost hits "
                             << Extra(db->get(), "cache_ghost_hits_total");
  EXPECT_LE(end, 0.9 * 8 * kMiB);
  // The record cache gave up what the pool took.
  EXPECT_LE(Extra(db->get(), "cache_capacity_bytes") + end, 8.0 * kMiB);
  VerifyReport r;
  ASSERT_OK((*db)->Verify(&r));
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
}

TEST(TreeLineSplitTest, AHotSetOfRecordsOnEveryPageKeepsTheRecordCache) {
  TempDir dir;
  {
    auto db = Db::Open(SplitOptions(dir.path(), {{"buffer_pool_max_share", "0.9"}}));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Load(db->get());
  }
  auto db = Db::Open(SplitOptions(dir.path(), {{"buffer_pool_max_share", "0.9"}}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  // Every 4th key is hot (about 3.2 MiB as records, on every page: 9 MiB as pages); 95% of the
  // reads go to them, the rest are uniform (which pages serve better).
  std::mt19937_64 rng(11);
  auto next = [&] {
    const uint64_t r = rng();
    return r % 100 < 95 ? (r >> 8) % (kKeys / 4) * 4 : (r >> 8) % kKeys;
  };
  ReadUntil(db->get(), next, 1e18, 600'000);
  // Whatever share the pool took for the cold reads, the hot records stay cached: the pool stops
  // short of its ceiling, and the record cache still serves the hot reads.
  const DbStats before = (*db)->GetStats();
  ReadUntil(db->get(), next, 1e18, 200'000);
  const DbStats after = (*db)->GetStats();
  const double pool = after.index.extra.at("buffer_pool_split_bytes");
  EXPECT_LT(pool, 0.9 * 8 * kMiB) << "pool ghost hits "
                                  << after.index.extra.at("pool_ghost_hits_total")
                                  << ", record cache ghost hits "
                                  << after.index.extra.at("cache_ghost_hits_total");
  const double hits =
      after.index.extra.at("cache_hits_total") - before.index.extra.at("cache_hits_total");
  const double misses =
      after.index.extra.at("cache_misses_total") - before.index.extra.at("cache_misses_total");
  EXPECT_GT(hits / (hits + misses), 0.85) << "pool share " << pool;
}

// The default: a fixed split.
TEST(TreeLineSplitTest, AFixedSplitNeverMoves) {
  TempDir dir;
  auto db = Db::Open(SplitOptions(dir.path(), {}));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Load(db->get());
  std::mt19937_64 rng(7);
  const double end = ReadUntil(
      db->get(), [&] { return rng() % kKeys; }, 1e18, 200'000);
  EXPECT_EQ(end, 2.0 * kMiB);
  EXPECT_EQ(Extra(db->get(), "pool_ghost_hits_total"), 0) << "no ghost set without a split";
}

}  // namespace
}  // namespace grove::testing
