// Writes that opt out of the log sync (WriteOptions::sync false), as a replicated range's applied
// entries do: under wal.sync always they cost no fdatasync, a power loss may take them (and only
// them), and the next synced write, Db::SyncWal or a checkpoint makes them durable.

#include <memory>
#include <string>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

WriteOptions Unsynced() {
  WriteOptions o;
  o.sync = false;
  return o;
}

bool Has(Db* db, const std::string& key) {
  std::string value;
  StatusOr<bool> found = db->Get(key, &value);
  EXPECT_TRUE(found.ok());
  return found.ok() && *found;
}

class UnsyncedWriteTest : public ::testing::Test {
 protected:
  // Writes "synced" (synced), then `unsynced` keys that opt out; then `finish` on the open Db;
  // then a power loss that drops what was not synced. Returns the Db opened again.
  std::unique_ptr<Db> RunThenLosePower(int unsynced, const std::function<void(Db*)>& finish,
                                       uint64_t* syncs_of_unsynced) {
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 11);
    Options o = SmallOptions(dir_.path());
    o.wal.sync = SyncMode::kAlways;
    o.io_backend = fb;
    {
      auto db = Db::Open(o);
      EXPECT_OK(db.status());
      EXPECT_OK((*db)->Write([] {
        WriteBatch b;
        b.Put("synced", "1");
        return b;
      }()));
      const uint64_t before = (*db)->GetStats().wal.syncs;
      for (int i = 0; i < unsynced; ++i) {
        WriteBatch b;
        b.Put("u" + std::to_string(i), "v");
        EXPECT_OK((*db)->Write(b, Unsynced(), nullptr));
      }
      *syncs_of_unsynced = (*db)->GetStats().wal.syncs - before;
      finish(db->get());
      fb->CrashAfter(0);
    }
    EXPECT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
    o.io_backend = Psync();
    auto db = Db::Open(o);
    EXPECT_OK(db.status());
    return db.ok() ? std::move(*db) : nullptr;
  }

  TempDir dir_;
};

TEST_F(UnsyncedWriteTest, APowerLossTakesOnlyTheWritesThatOptedOut) {
  uint64_t syncs = 0;
  std::unique_ptr<Db> db = RunThenLosePower(
      20, [](Db*) {}, &syncs);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(syncs, 0u) << "no write asked for a sync";
  EXPECT_TRUE(Has(db.get(), "synced"));
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(Has(db.get(), "u" + std::to_string(i))) << i;
}

TEST_F(UnsyncedWriteTest, TheNextSyncedWriteMakesThemDurable) {
  uint64_t syncs = 0;
  std::unique_ptr<Db> db = RunThenLosePower(
      20,
      [](Db* d) {
        WriteBatch b;
        b.Put("last", "synced");
        EXPECT_OK(d->Write(b));
      },
      &syncs);
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Has(db.get(), "u" + std::to_string(i))) << i;
  EXPECT_TRUE(Has(db.get(), "last"));
}

TEST_F(UnsyncedWriteTest, SyncWalMakesThemDurable) {
  uint64_t syncs = 0;
  std::unique_ptr<Db> db = RunThenLosePower(
      10, [](Db* d) { EXPECT_OK(d->SyncWal()); }, &syncs);
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Has(db.get(), "u" + std::to_string(i))) << i;
}

// A checkpoint stands for the log up to its redo point: it syncs the records it holds first.
TEST_F(UnsyncedWriteTest, ACheckpointMakesThemDurable) {
  uint64_t syncs = 0;
  std::unique_ptr<Db> db = RunThenLosePower(
      10, [](Db* d) { EXPECT_OK(d->Checkpoint()); }, &syncs);
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Has(db.get(), "u" + std::to_string(i))) << i;
}

}  // namespace
}  // namespace grove::testing
