// Conformance: online backup and restore (Db::Backup, RestoreBackup) on every variant. A backup
// taken while writers and checkpoints run restores to exactly the writes whose log records are
// at or below its backup point, whatever was overwritten in the data file meanwhile; a damaged or
// unfinished backup is refused.

#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

// One applied write with the version (LSN) the engine gave it.
struct Applied {
  uint64_t version = 0;
  WriteBatch batch;  // puts and deletes
  bool range = false;
  std::string start, end;  // a DeleteRange
};

void ApplyTo(const Applied& a, Model* model) {
  if (a.range) {
    model->erase(model->lower_bound(a.start), model->lower_bound(a.end));
    return;
  }
  a.batch
      .ForEach([&](WriteBatch::OpType t, Slice k, Slice v) {
        if (t == WriteBatch::OpType::kDelete) {
          model->erase(std::string(k));
        } else {
          (*model)[std::string(k)] = std::string(v);
        }
        return Status::Ok();
      })
      .IgnoreError();
}

class ConformanceBackupTest : public ::testing::TestWithParam<VariantCase> {
 protected:
  static std::string Key(uint64_t i) { return fmt::format("bk/{:05}", i); }
  static std::string Value(uint64_t i, uint64_t gen) {
    const size_t len = i % 53 == 0 ? 2500 : 20 + (i * 7 + gen) % 90;  // some out of line
    std::string v = fmt::format("{}:{}:", i, gen);
    v.resize(std::max(v.size(), len), static_cast<char>('a' + gen % 26));
    return v;
  }
};

TEST_P(ConformanceBackupTest, ABackupUnderWritesRestoresExactlyTheWritesUpToItsPoint) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.Sub("db"));
  // Checkpoints during the copy overwrite pages the copy has not reached yet: a small dirty
  // fraction, in a cache whose write room still holds a few of the case's largest operations
  // (an hln leaf of 64 or 256 pages rewrites hundreds of pages at a split).
  o.checkpoint.dirty_fraction = 0.05;
  while (!RoomHoldsOperations(c, o, 4)) o.cache_bytes *= 2;
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();
  const uint64_t batch_keys =
      std::max<uint64_t>(1, std::min<uint64_t>(20, BatchEntriesThatFit(c, o)));

  std::mutex mu;
  std::vector<Applied> applied;
  auto record = [&](Applied a) {
    std::lock_guard<std::mutex> lock(mu);
    applied.push_back(std::move(a));
  };
  // A first load, so that the data file has pages to copy.
  for (uint64_t i = 0; i < 3000; i += batch_keys) {
    Applied a;
    for (uint64_t j = i; j < std::min<uint64_t>(3000, i + batch_keys); ++j) {
      a.batch.Put(Key(j), Value(j, 0));
    }
    WriteResult r;
    ASSERT_OK(db->Write(a.batch, WriteOptions(), &r));
    a.version = r.version;
    record(std::move(a));
  }
  ASSERT_OK(db->Checkpoint());

  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t n = 0; !stop.load() && failures.load() == 0; ++n) {
        Applied a;
        Status s;
        const uint64_t base = (n * 131 + static_cast<uint64_t>(t) * 977) % 3000;
        if (n % 17 == 5) {
          a.range = true;
          a.start = Key(base);
          a.end = Key(base + 4);
          DeleteRangeResult r;
          s = db->DeleteRange(a.start, a.end, 0, &r);
          a.version = r.version;
        } else {
          for (uint64_t j = 0; j < batch_keys; ++j) {
            const uint64_t k = (base + j * 31) % 3000;
            if ((n + j) % 9 == 0) {
              a.batch.Delete(Key(k));
            } else {
              a.batch.Put(Key(k), Value(k, n + 1));
            }
          }
          WriteResult r;
          s = db->Write(a.batch, WriteOptions(), &r);
          a.version = r.version;
        }
        if (!s.ok()) {
          ADD_FAILURE() << s.ToString();
          failures.fetch_add(1);
          return;
        }
        if (a.version != 0) record(std::move(a));
      }
    });
  }
  BackupOptions bo;
  bo.max_bytes_per_second = 8 << 20;  // slow enough for checkpoints to overlap the copy
  BackupInfo info;
  const std::string backup_dir = dir.Sub("backup");
  Status s = db->Backup(backup_dir, bo, &info);
  // Writes go on after the backup point too; they must not reach the restored copy.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_OK(s);
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(info.variant, c.variant);
  EXPECT_GT(info.checkpoint_epoch, 0u);
  EXPECT_GE(info.last_lsn + 1, info.redo_lsn);
  const Model live = ReadAll(db);
  ASSERT_OK(db->Close());

  Model expected;
  std::sort(applied.begin(), applied.end(),
            [](const Applied& a, const Applied& b) { return a.version < b.version; });
  uint64_t after = 0;
  for (const Applied& a : applied) {
    if (a.version <= info.last_lsn) {
      ApplyTo(a, &expected);
    } else {
      ++after;
    }
  }
  StatusOr<BackupInfo> checked = CheckBackup(backup_dir);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_EQ(checked->last_lsn, info.last_lsn);

  Options ro = ConformanceOptions(c, dir.Sub("restored"));
  RestoreReport report;
  ASSERT_OK(RestoreBackup(backup_dir, ro, &report));
  EXPECT_EQ(report.backup.last_lsn, info.last_lsn);
  EXPECT_TRUE(report.verify.problems.empty());
  auto restored = Db::Open(ro);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ExpectMatches(restored->get(), expected,
                fmt::format("restored at LSN {} ({} writes after it)", info.last_lsn, after));
  if (after > 0) {
    EXPECT_NE(live, expected) << "writes after the backup point are not in it";
  }
  ASSERT_OK((*restored)->Close());
}

// Db::VerifyOnline opens the variant read-only over a snapshot of its newest checkpoint: it must
// see that checkpoint whatever is overwritten meanwhile, and find nothing wrong with it while
// writers and checkpoints run.
TEST_P(ConformanceBackupTest, AnOnlineVerifyChecksItsCheckpointWhileWritesGoOn) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.Sub("db"));
  o.checkpoint.dirty_fraction = 0.05;
  while (!RoomHoldsOperations(c, o, 4)) o.cache_bytes *= 2;
  auto opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_OK((*opened)->Put(Key(i), Value(i, 0)));
  // Closed and opened again: a variant that keeps writes in memory (TreeLine's record cache,
  // AHA-tree's buffers) has moved them into pages, so the checkpoint the verify takes holds all
  // 3000 in pages, not partly in the log. One that keeps them in memory even then (the buffered
  // test variant) replays them: its snapshot holds fewer.
  ASSERT_OK((*opened)->Close());
  opened = Db::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Db* db = opened->get();
  const bool all_in_pages = db->GetStats().recovery_replayed_records == 0;

  // Before the snapshot's first read, every key changes, a third go, and a checkpoint writes it.
  bool rewrote = false;
  VerifyOnlineOptions options;
  options.cancelled = [&] {
    if (!rewrote) {
      rewrote = true;
      for (uint64_t i = 0; i < 3000; ++i) {
        EXPECT_OK(i % 3 == 0 ? db->Delete(Key(i)) : db->Put(Key(i), Value(i, 1)));
      }
      EXPECT_OK(db->Checkpoint());
    }
    return false;
  };
  VerifyReport report;
  ASSERT_OK(db->VerifyOnline(options, &report));
  ASSERT_TRUE(rewrote);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  if (all_in_pages) {
    EXPECT_EQ(report.entries_checked, 3000u) << "the checkpoint's entries, not the live ones";
  }

  // Then with writers and checkpoints running throughout.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t n = 0; !stop.load(); ++n) {
      const uint64_t k = (n * 131) % 3000;
      Status s = n % 7 == 0 ? db->Delete(Key(k)) : db->Put(Key(k), Value(k, n + 2));
      if (!s.ok()) {
        ADD_FAILURE() << s.ToString();
        return;
      }
    }
  });
  Status s = db->VerifyOnline({}, &report);
  stop = true;
  writer.join();
  ASSERT_OK(s);
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  EXPECT_GT(report.pages_checked, 0u);
  ASSERT_OK(db->Close());
}

TEST_P(ConformanceBackupTest, DamagedUnfinishedAndReusedBackupsAreRefused) {
  const VariantCase& c = GetParam();
  TempDir dir;
  Options o = ConformanceOptions(c, dir.Sub("db"));
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (uint64_t i = 0; i < 200; ++i) ASSERT_OK((*db)->Put(Key(i), Value(i, 0)));
  BackupInfo info;
  ASSERT_OK((*db)->Backup(dir.Sub("b1"), BackupOptions(), &info));
  EXPECT_EQ((*db)->Backup(dir.Sub("b1"), BackupOptions(), &info).code(),
            StatusCode::kFailedPrecondition)
      << "a backup goes into a new or empty directory";
  ASSERT_OK((*db)->Close());

  // Into a non-empty data directory: refused.
  RestoreReport report;
  Options ro = ConformanceOptions(c, dir.Sub("db"));
  EXPECT_EQ(RestoreBackup(dir.Sub("b1"), ro, &report).code(), StatusCode::kFailedPrecondition);
  // A damaged file: refused before anything is restored.
  {
    std::string bytes = ReadFileBytes(dir.Sub("b1") + "/grove.data");
    bytes[bytes.size() / 2] ^= 0x5a;
    WriteFileBytes(dir.Sub("b1") + "/grove.data", bytes);
  }
  EXPECT_EQ(CheckBackup(dir.Sub("b1")).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(RestoreBackup(dir.Sub("b1"), ConformanceOptions(c, dir.Sub("r1")), &report).code(),
            StatusCode::kDataLoss);
  // Without its BACKUP file (a backup that did not finish): not a backup.
  ASSERT_EQ(std::remove((dir.Sub("b1") + "/BACKUP").c_str()), 0);
  EXPECT_EQ(CheckBackup(dir.Sub("b1")).status().code(), StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceBackupTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
