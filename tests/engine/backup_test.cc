// Db::Backup's machinery on btree: pages a checkpoint overwrites during the copy are copied first
// (and the restore proves the copy holds the old images), the log a backup needs survives the
// checkpoints that would drop it, and a backup gives up cleanly when the database closes or the
// caller cancels.

#include <atomic>
#include <filesystem>
#include <thread>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

std::map<std::string, std::string> Everything(Db* db) {
  std::map<std::string, std::string> out;
  auto it = db->NewIterator(ScanOptions());
  EXPECT_TRUE(it.ok());
  for (; (*it)->Valid(); (*it)->Next())
    out[std::string((*it)->key())] = std::string((*it)->value());
  EXPECT_OK((*it)->status());
  return out;
}

TEST(BackupTest, OverwrittenPagesAreCopiedFirstAndTheLogIsKept) {
  TempDir dir;
  Options o = SmallOptions(dir.Sub("db"));
  o.wal.segment_bytes = 1 << 20;  // segments roll, and checkpoints would drop them
  o.wal.max_unsynced_bytes = 1 << 20;
  o.max_batch_bytes = 256 << 10;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (uint64_t i = 0; i < 20000; ++i) ASSERT_OK((*db)->Put(Key(i), Value(i, 0, 60)));
  ASSERT_OK((*db)->Checkpoint());
  const auto before = Everything(db->get());

  // A slow copy (about 2 s for the ~6 MiB data file) while every page is rewritten and
  // checkpointed several times.
  std::atomic<bool> done{false};
  Status backup_status;
  BackupInfo info;
  std::thread backup([&] {
    BackupOptions bo;
    bo.max_bytes_per_second = 3 << 20;
    backup_status = (*db)->Backup(dir.Sub("backup"), bo, &info);
    done = true;
  });
  uint64_t round = 0;
  while (!done.load()) {
    ++round;
    for (uint64_t i = 0; i < 20000 && !done.load(); i += 7) {
      WriteBatch b;
      b.Put(Key(i), Value(i, round, 60));
      WriteResult r;
      ASSERT_OK((*db)->Write(b, WriteOptions(), &r));
    }
    ASSERT_OK((*db)->Checkpoint());
  }
  backup.join();
  ASSERT_OK(backup_status);
  EXPECT_GT(info.pages_preserved, 0u) << "checkpoints overwrote pages the copy had not reached";
  EXPECT_GT(info.wal_bytes, 0u);
  const auto live = Everything(db->get());
  ASSERT_OK((*db)->Close());

  RestoreReport report;
  Options ro = SmallOptions(dir.Sub("restored"));
  ASSERT_OK(RestoreBackup(dir.Sub("backup"), ro, &report));
  EXPECT_GT(report.replayed_records, 0u) << "writes after the checkpoint come from the log";
  auto restored = Db::Open(ro);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  // Every key is there with a value of some round up to the backup point; at least the ones
  // written before the backup began are rewritten ones, not damaged pages.
  const auto got = Everything(restored->get());
  ASSERT_EQ(got.size(), before.size());
  for (const auto& [k, v] : got) {
    const uint64_t key = DecodeBigEndian64(k.data());
    ASSERT_EQ(v.rfind("v" + std::to_string(key) + ".", 0), 0u) << "a value of another key";
  }
  VerifyReport vr;
  ASSERT_OK((*restored)->Verify(&vr));
  EXPECT_TRUE(vr.problems.empty()) << vr.problems.front();
  EXPECT_NE(got, live) << "the writes after the backup point are not in the backup";
  ASSERT_OK((*restored)->Close());
}

TEST(BackupTest, ClosingOrCancellingGivesTheBackupUpAndRemovesIt) {
  TempDir dir;
  Options o = SmallOptions(dir.Sub("db"));
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (uint64_t i = 0; i < 20000; ++i) ASSERT_OK((*db)->Put(Key(i), Value(i, 0, 60)));

  BackupOptions slow;
  slow.max_bytes_per_second = 1 << 20;
  std::atomic<bool> cancel{false};
  slow.cancelled = [&] { return cancel.load(); };
  BackupInfo info;
  Status s;
  std::thread t([&] { s = (*db)->Backup(dir.Sub("cancelled"), slow, &info); });
  std::this_thread::sleep_for(300ms);
  BackupInfo second_info;  // the running backup owns `info`
  EXPECT_EQ((*db)->Backup(dir.Sub("second"), BackupOptions(), &second_info).code(),
            StatusCode::kFailedPrecondition)
      << "one backup at a time";
  cancel = true;
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("cancelled"))) << "an aborted backup is removed";

  BackupOptions crawl;
  crawl.max_bytes_per_second = 1000;  // would keep the log for days
  Status refused = (*db)->Backup(dir.Sub("crawl"), crawl, &info);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().rfind("max_bytes_per_second: ", 0), 0u) << refused.ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("crawl")));

  slow.cancelled = nullptr;
  std::thread t2([&] { s = (*db)->Backup(dir.Sub("closed"), slow, &info); });
  std::this_thread::sleep_for(300ms);
  ASSERT_OK((*db)->Close());  // waits for the backup to give up
  t2.join();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("closed")));
  // The database is intact.
  auto again = Db::Open(o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Everything(again->get()).size(), 20000u);
}

}  // namespace
}  // namespace grove::testing
