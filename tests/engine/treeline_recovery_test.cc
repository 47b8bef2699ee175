// The treeline variant through grove::Db (server/index/treeline): the work of a replay grows with
// the log it replays, in every mode; a clean stop leaves nothing to replay; a backlog of appends
// past the last page costs write-backs and scans a bounded share each.

#include <chrono>
#include <map>
#include <thread>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;
using Model = std::map<std::string, std::string>;

Options TreeLineOptions(const std::string& dir, std::map<std::string, std::string> params) {
  Options o = SmallOptions(dir);
  o.index.variant = "treeline";
  o.index.params = std::move(params);
  o.checkpoint.interval_seconds = 0;
  return o;
}

Model ReadAll(Db* db) {
  Model out;
  auto it = db->NewIterator(ScanOptions{});
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (; (*it)->Valid(); (*it)->Next()) {
    out.emplace(std::string((*it)->key()), std::string((*it)->value()));
  }
  EXPECT_OK((*it)->status());
  return out;
}

void ExpectModel(Db* db, const Model& model) {
  EXPECT_EQ(ReadAll(db), model);
  for (const auto& [k, v] : model) {
    std::string got;
    const StatusOr<bool> found = db->Get(k, &got);
    ASSERT_TRUE(found.ok() && *found) << k << ": " << found.status().ToString();
    ASSERT_EQ(got, v);
  }
  VerifyReport r;
  ASSERT_OK(db->Verify(&r));
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
}

// A fresh store without the record cache takes 20,000 keys in batches of 500 and is killed:
// its one segment fills at once, and the replay can reorganise nothing (maintenance waits until
// the database is open). Each replayed write must still cost a bounded number of records handed
// to write-backs: a full segment waits for its reorganisation instead of being offered every
// dirty record of its range again on every write (which made this replay quadratic: 51 s).
TEST(TreeLineRecoveryTest, ReplayWorkPerRecordIsBoundedWithoutTheCache) {
  // Without the cache, and with a record cache of a fiftieth of the budget (1.3 MiB), which the
  // replay overflows, so that evictions write back.
  for (const char* cache : {"false", "true"}) {
    SCOPED_TRACE(std::string("cache: ") + cache);
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
    Options o = TreeLineOptions(dir.path(), {{"cache", cache}, {"buffer_pool_share", "0.98"}});
    // Room for every page the run dirties, and no timed checkpoint: the replay starts from the
    // empty store.
    o.cache_bytes = 64 << 20;
    o.wal.sync = SyncMode::kAlways;
    o.io_backend = fb;
    constexpr uint64_t kKeys = 20000;
    Model model;
    {
      auto db = Db::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      for (uint64_t b = 0; b < kKeys / 500; ++b) {
        WriteBatch batch;
        for (uint64_t i = b * 500; i < (b + 1) * 500; ++i) {
          const uint64_t k = (i * 7919) % kKeys;
          batch.Put(Key(k), Value(k, 0));
          model[Key(k)] = Value(k, 0);
        }
        ASSERT_OK((*db)->Write(batch));
      }
      fb->CrashAfter(0);
      db->reset();
    }
    ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
    o.io_backend = Psync();
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const DbStats s = (*db)->GetStats();
    const double offered = Extra(db->get(), "writeback_offered_records_total");
    EXPECT_GT(s.recovery_replayed_records, 0u) << "the test must replay";
    // Each replayed write offers its own record, and a write-back may offer a page's worth of
    // records written before it: a few per write, never a range's growing backlog.
    EXPECT_LE(offered, 4.0 * kKeys) << "records offered to write-backs while replaying "
                                    << s.recovery_replayed_records << " log records";
    ExpectModel(db->get(), model);
  }
}

// A clean stop writes the record cache's dirty records back (reorganising full segments on the
// way), so the next open replays no log record; the data is whole. With a small record cache too,
// where write-backs, overflow pages and reorganisations happen during the run.
TEST(TreeLineRecoveryTest, ACleanStopLeavesNothingToReplay) {
  for (const char* share : {"0.25", "0.9"}) {
    SCOPED_TRACE(std::string("buffer_pool_share: ") + share);
    TempDir dir;
    Options o = TreeLineOptions(dir.path(), {{"buffer_pool_share", share}});
    o.cache_bytes = 8 << 20;
    Model model;
    {
      auto db = Db::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      for (uint64_t i = 0; i < 30000; ++i) {
        const uint64_t k = (i * 104729) % 25000;
        if (i % 11 == 5) {
          ASSERT_OK((*db)->Delete(Key(k)));
          model.erase(Key(k));
        } else {
          const std::string v = Value(k, i, i % 97 == 0 ? 3000 : 40);
          ASSERT_OK((*db)->Put(Key(k), v));
          model[Key(k)] = v;
        }
      }
      EXPECT_GT(Extra(db->get(), "cache_dirty_entries"), 0) << "the stop has work to do";
      ASSERT_OK((*db)->Close());
    }
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ((*db)->GetStats().recovery_replayed_records, 0u);
    EXPECT_EQ(Extra(db->get(), "cache_dirty_entries"), 0);
    ExpectModel(db->get(), model);
  }
}

// Ascending inserts all land past the last page, in one range: a write-back must not be offered
// the whole backlog every time (its pages take a page or two of it), and scans over the backlog
// come out whole and in order, in both directions, in batches.
TEST(TreeLineRecoveryTest, AnAppendBacklogCostsBoundedWorkAndScansWhole) {
  TempDir dir;
  // A record cache of 1.6 MiB: a quarter of the appends stay dirty at a time.
  Options o = TreeLineOptions(dir.path(), {{"buffer_pool_share", "0.9"}});
  o.cache_bytes = 16 << 20;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  constexpr uint64_t kKeys = 40000;
  Model model;
  for (uint64_t i = 0; i < kKeys; ++i) {
    const std::string v = Value(i, 1, 60);
    ASSERT_OK((*db)->Put(Key(i), v));
    model[Key(i)] = v;
  }
  const double offered = Extra(db->get(), "writeback_offered_records_total");
  // A write-back takes what fits a page and its overflow page (some 90 records here); offered the
  // backlog of its range each time, the appends cost 84,829 records offered (2 per append).
  EXPECT_LE(offered, kKeys / 4.0) << "records offered to write-backs for " << kKeys << " appends";
  EXPECT_EQ(ReadAll(db->get()), model);
  ScanOptions reverse;
  reverse.reverse = true;
  auto it = (*db)->NewIterator(reverse);
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  auto want = model.rbegin();
  for (; (*it)->Valid(); (*it)->Next(), ++want) {
    ASSERT_NE(want, model.rend());
    ASSERT_EQ((*it)->key(), want->first);
    ASSERT_EQ((*it)->value(), want->second);
  }
  ASSERT_OK((*it)->status());
  EXPECT_EQ(want, model.rend());
  ExpectModel(db->get(), model);
}

// Uniform updates leave most of the record cache dirty (eviction's look-ahead finds clean
// victims first); the background thread writes cold dirty records back until no more than
// dirty_share of the entries are dirty, so that a read phase after a write phase gets its memory.
TEST(TreeLineRecoveryTest, ColdDirtyRecordsAreCleanedDownToTheDirtyShare) {
  TempDir dir;
  Options o = TreeLineOptions(dir.path(), {{"dirty_share", "0.3"}});
  o.cache_bytes = 8 << 20;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (uint64_t i = 0; i < 60000; ++i) ASSERT_OK((*db)->Put(Key(i * 7919 % 60000), Value(i, 0)));
  // Bounded wait: the background thread works in rounds of 64 write-backs.
  double share = 1;
  for (int n = 0; n < 400; ++n) {
    share = Extra(db->get(), "cache_dirty_entries") / Extra(db->get(), "cache_entries");
    if (share <= 0.3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_LE(share, 0.3);
  EXPECT_GT(Extra(db->get(), "cache_entries"), 0);
  VerifyReport r;
  ASSERT_OK((*db)->Verify(&r));
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
}

}  // namespace
}  // namespace grove::testing
