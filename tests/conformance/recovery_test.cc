// Conformance: recovery replays log records onto a state that may already hold them, and damage
// to any page the index owns is reported as DATA_LOSS, never answered with wrong data.

#include <algorithm>
#include <fstream>
#include <random>

#include "conformance/cases.h"
#include "engine/db_impl.h"
#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

class ConformanceRecoveryTest : public ::testing::TestWithParam<VariantCase> {};

// A batch larger than the write room is applied operation by operation with checkpoints in the
// middle of it (where the variant dirties pages), so a checkpoint holds part of it; after a power
// loss right after the batch, the replay applies all of it again onto that state. Idempotent
// writes give exactly the batch's result, with wal.sync always and none alike (a checkpoint makes
// the records it depends on durable first). With wal.sync none and no checkpoint taken after the
// batch was logged, the batch may also be lost, but only as a whole. (Counting checkpoints is not
// enough: a background checkpoint that snapshotted before the batch may finish during it.)
TEST_P(ConformanceRecoveryTest, ReplayOntoAStateThatHoldsPartOfABatch) {
  const VariantCase& c = GetParam();
  for (const SyncMode sync : {SyncMode::kAlways, SyncMode::kNone}) {
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 9);
    Options o = ConformanceOptions(c, dir.path());
    o.cache_bytes = std::max<uint64_t>(1 << 20, c.min_cache_bytes);
    o.wal.sync = sync;
    o.checkpoint.interval_seconds = 0;
    o.io_backend = fb;
    Model model, before_batch;
    uint64_t checkpoints_in_batch = 0;
    bool batch_in_a_checkpoint = false;
    {
      auto db = Db::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      for (uint64_t b = 0; b < 20; ++b) {
        WriteBatch load;
        for (uint64_t i = b * 1000; i < (b + 1) * 1000; ++i) {
          load.Put(Key(i), Value(i, 0));
          model[Key(i)] = Value(i, 0);
        }
        ASSERT_OK((*db)->Write(load));
      }
      ASSERT_OK((*db)->Checkpoint());
      before_batch = model;
      WriteBatch huge;
      for (uint64_t i = 0; i < 5000; ++i) {
        const uint64_t k = (i * 7919) % 24000;
        if (i % 5 == 0) {
          huge.Delete(Key(k));
          model.erase(Key(k));
        } else {
          huge.Put(Key(k), Value(k, 1, i % 40 == 0 ? 3000 : 30));
          model[Key(k)] = Value(k, 1, i % 40 == 0 ? 3000 : 30);
        }
      }
      const DbStats before = (*db)->GetStats();
      ASSERT_OK((*db)->Write(huge));
      const DbStats after = (*db)->GetStats();
      checkpoints_in_batch = after.checkpoint.count - before.checkpoint.count;
      batch_in_a_checkpoint = after.checkpoint.snapshot_lsn > before.wal.next_lsn;
      fb->CrashAfter(0);
      db->reset();
    }
    ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
    o.io_backend = Psync();
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const Model got = ReadAll(db->get());
    const bool may_lose = sync == SyncMode::kNone && !batch_in_a_checkpoint;
    EXPECT_TRUE(got == model || (may_lose && got == before_batch))
        << "wal.sync " << (sync == SyncMode::kNone ? "none" : "always") << ": recovered "
        << got.size() << " keys, the batch leaves " << model.size() << ", before it "
        << before_batch.size() << " (" << checkpoints_in_batch << " checkpoints during the batch, "
        << (batch_in_a_checkpoint ? "one" : "none") << " taken after it was logged)";
    if (got != model) model = before_batch;
    ExpectVerifyClean(db->get(), model.size(), "after recovery");
    if (HasFatalFailure()) return;
  }
}

// The pages the index claims in Verify(), with what it calls them.
// The pages the index claims as holding something it reads (Verify's claims).
std::vector<std::pair<PageId, std::string>> IndexPages(Db* db) {
  class Claims final : public IndexVerifier {
   public:
    void ClaimPages(PageId first, uint32_t count, std::string_view what) override {
      for (PageId p = first; p < first + count; ++p) pages.emplace_back(p, std::string(what));
    }
    // Space held for reuse: damage there harms nothing.
    void ClaimUnusedPages(PageId, uint32_t, std::string_view) override {}
    void OnCell(Slice, Slice) override {}
    void OnShadowedCell(Slice, Slice) override {}
    void Problem(std::string) override {}
    std::vector<std::pair<PageId, std::string>> pages;
  };
  Claims claims;
  EXPECT_OK(static_cast<DbImpl*>(db)->index()->Verify(&claims));
  return claims.pages;
}

bool Holds(Db* db, PageId page) {
  for (const auto& [p, what] : IndexPages(db)) {
    if (p == page) return true;
  }
  return false;
}

// One damaged page of the index at a time (a bit flip in its body, on disk): opening, reads,
// scans and Verify either give the right answer or report DATA_LOSS, and Verify notices.
TEST_P(ConformanceRecoveryTest, DamagedIndexPagesAreDataLossNeverWrongData) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.path());
  o.cache_bytes = std::max<uint64_t>(1 << 20, c.min_cache_bytes);
  Model model;
  std::vector<std::pair<PageId, std::string>> pages;
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    // Rounds of 6000 records until the index has pages to damage (a variant may hold the
    // first records in memory alone, as TreeLine's record cache does).
    for (uint64_t round = 0; round < 8 && pages.size() <= 8; ++round) {
      Model more;
      for (uint64_t i = round * 6000; i < (round + 1) * 6000; ++i) {
        const std::string k = i % 3 == 0 ? std::string(90, 'k') + Key(i) : Key(i * 11);
        more[k] = Value(i, 0, i % 97 == 0 ? 2000 : 40);
      }
      for (const auto& [k, v] : more) ASSERT_OK((*db)->Put(k, v));
      model.insert(more.begin(), more.end());
      ASSERT_OK((*db)->Checkpoint());
      pages = IndexPages(db->get());
    }
    ASSERT_OK((*db)->Close());
  }
  ASSERT_GT(pages.size(), 8u);
  // Up to 12 pages, spread over the ones the index claims and over every kind it names.
  std::vector<std::pair<PageId, std::string>> sample;
  std::map<std::string, int> kinds;
  for (size_t i = 0; i < pages.size(); i += std::max<size_t>(1, pages.size() / 8)) {
    sample.push_back(pages[i]);
  }
  for (const auto& p : pages) {
    if (kinds[p.second]++ == 0) sample.push_back(p);
  }
  const std::string path = dir.path() + "/grove.data";
  for (const auto& [page, what] : sample) {
    {
      // Background work (a compaction) may have moved the page's contents elsewhere since the
      // sample was taken: then it belongs to the index no more, and damage there harms nothing.
      auto db = Db::Open(o);
      ASSERT_TRUE(db.ok()) << db.status().ToString();
      const bool holds = Holds(db->get(), page);
      ASSERT_OK((*db)->Close());
      if (!holds) continue;
    }
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::streamoff at = static_cast<std::streamoff>(page * 4096 + 100 + page % 3000);
    f.seekg(at);
    char byte;
    f.read(&byte, 1);
    f.seekp(at);
    const char flipped = static_cast<char>(byte ^ 0x10);
    f.write(&flipped, 1);
    f.close();
    const std::string label = what + " page " + std::to_string(page);
    {
      auto db = Db::Open(o);
      if (!db.ok()) {
        EXPECT_TRUE(db.status().IsDataLoss()) << label << ": " << db.status().ToString();
      } else {
        bool detected = false;
        std::string v;
        for (const auto& [k, want] : model) {
          auto found = (*db)->Get(k, &v);
          if (!found.ok()) {
            ASSERT_TRUE(found.status().IsDataLoss()) << label << ": " << found.status().ToString();
            detected = true;
            continue;
          }
          ASSERT_TRUE(*found) << label << ": a key vanished without an error";
          ASSERT_EQ(v, want) << label << ": wrong value";
        }
        auto it = (*db)->NewIterator(ScanOptions());
        ASSERT_TRUE(it.ok());
        auto m = model.begin();
        for (; (*it)->Valid(); (*it)->Next(), ++m) {
          ASSERT_TRUE(m != model.end()) << label << ": scan returned an extra key";
          ASSERT_EQ((*it)->key(), m->first) << label;
          ASSERT_EQ((*it)->value(), m->second) << label;
        }
        if (!(*it)->status().ok()) {
          EXPECT_TRUE((*it)->status().IsDataLoss()) << (*it)->status().ToString();
          detected = true;
        } else {
          EXPECT_TRUE(m == model.end()) << label << ": scan ended early without an error";
        }
        VerifyReport report;
        const Status vs = (*db)->Verify(&report);
        detected |= !vs.ok() || !report.problems.empty();
        // Background work started by the open that checked the page (a compaction after the
        // flush of a clean stop) may have moved its contents before the damage was done: then
        // nothing reads it now, and unnoticed is right.
        EXPECT_TRUE(detected || !Holds(db->get(), page)) << label << ": the damage went unnoticed";
      }
    }
    // Undo the damage for the next sample.
    std::fstream g(path, std::ios::binary | std::ios::in | std::ios::out);
    g.seekp(at);
    g.write(&byte, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceRecoveryTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
