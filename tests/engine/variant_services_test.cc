// The engine services for variants (grove/index.h, docs/variants.md "Engine services"): blind
// writes whose replaced values are released later, blob cells that only memory references across
// a crash, maintenance units with their room, and checkpoint lifecycle hooks. The "buffered" test
// variant (conformance/buffered_variant.h) uses them the way a record cache or a memtable does.
// Batches applied operation by operation around checkpoints are the conformance suite's
// (conformance/recovery_test.cc), for every variant.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "conformance/cases.h"
#include "engine/db_impl.h"
#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

Options BufferedOptions(const std::string& dir, ParamMap params = {}) {
  Options o = SmallOptions(dir);
  o.index.variant = "buffered";
  o.index.params = std::move(params);
  o.index.registry = TestVariantRegistry();
  return o;
}

// Waits until the flusher has emptied the buffer (bounded by time).
void Drain(Db* db) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Extra(db, "buffered_entries") > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(Extra(db, "buffered_entries"), 0) << "the flusher never emptied the buffer";
}

void ExpectClean(Db* db, uint64_t entries) {
  VerifyReport report;
  ASSERT_OK(db->Verify(&report));
  ASSERT_TRUE(report.problems.empty()) << report.problems[0];
  EXPECT_EQ(report.entries_checked, entries);
}

std::string Big(uint64_t i, uint64_t version) { return Value(i, version, 2500); }  // one blob page

// A blind overwrite does not know the value it replaces; the flush finds it in the btree and
// releases it. Until then both blobs are referenced (Verify sees the old one as shadowed), and
// afterwards exactly one blob per key remains.
TEST(VariantServicesTest, BlindWritesReleaseReplacedValuesWhenFlushed) {
  TempDir dir;
  auto db = Db::Open(BufferedOptions(dir.path()));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  constexpr uint64_t kKeys = 300;
  for (uint64_t i = 0; i < kKeys; ++i) ASSERT_OK((*db)->Put(Key(i), Big(i, 0)));
  Drain(db->get());
  const DbStats first = (*db)->GetStats();
  EXPECT_EQ(first.blob_values, kKeys);
  ExpectClean(db->get(), kKeys);

  const double released = Extra(db->get(), "released_cells_total");
  const double blind = Extra(db->get(), "blind_writes_total");
  for (uint64_t i = 0; i < kKeys; ++i) ASSERT_OK((*db)->Put(Key(i), Big(i, 1)));
  EXPECT_GE(Extra(db->get(), "blind_writes_total") - blind, kKeys / 2)
      << "most overwrites found the key flushed already";
  ExpectClean(db->get(), kKeys);  // buffered and shadowed blobs are all accounted for
  Drain(db->get());
  EXPECT_EQ((*db)->GetStats().blob_values, kKeys) << "every replaced blob was released";
  EXPECT_GE(Extra(db->get(), "released_cells_total") - released, kKeys / 2);
  std::string v;
  for (uint64_t i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(*(*db)->Get(Key(i), &v));
    ASSERT_EQ(v, Big(i, 1));
  }
  ExpectClean(db->get(), kKeys);

  for (uint64_t i = 0; i < kKeys; ++i) ASSERT_OK((*db)->Delete(Key(i)));
  Drain(db->get());
  EXPECT_EQ((*db)->GetStats().blob_values, 0u) << "deleted values are released at flush";
  ExpectClean(db->get(), 0);
}

// Blobs that only the buffer references when a checkpoint is taken are listed in its manifest:
// recovery frees them before the WAL replay writes them again, so nothing leaks.
TEST(VariantServicesTest, MemoryOnlyCellsAreFreedAtRecovery) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
  Options o =
      BufferedOptions(dir.path(), {{"buffer_entries", "1000000"}, {"flush_interval_ms", "10000"}});
  o.io_backend = fb;
  o.wal.sync = SyncMode::kAlways;
  constexpr uint64_t kKeys = 200;
  {
    auto db = Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (uint64_t i = 0; i < kKeys; ++i) ASSERT_OK((*db)->Put(Key(i), Big(i, 0)));
    ASSERT_OK((*db)->Checkpoint());  // blob pages durable, referenced only by the buffer
    EXPECT_EQ(Extra(db->get(), "buffered_entries"), kKeys);
    const DbStats st = (*db)->GetStats();
    EXPECT_GT(st.checkpoint.redo_lsn, 0u);
    // The checkpoint stands for every record so far, the buffered ones through the log.
    EXPECT_LT(st.checkpoint.redo_lsn, st.checkpoint.snapshot_lsn);
    EXPECT_EQ(st.checkpoint.snapshot_lsn, st.wal.next_lsn);
    fb->CrashAfter(0);
    db->reset();
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
  o.io_backend = Psync();
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ((*db)->GetStats().recovery_replayed_records, kKeys);
  EXPECT_EQ((*db)->GetStats().blob_values, kKeys) << "the replay's blobs only";
  ExpectClean(db->get(), kKeys);  // no leaked blob page
  std::string v;
  for (uint64_t i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(*(*db)->Get(Key(i), &v));
    ASSERT_EQ(v, Big(i, 0));
  }
}

// A maintenance unit holds the write gate: a checkpoint asked for meanwhile waits for it. Its room
// can be extended up to nine tenths of the cache, no further; a unit that can never fit, or one
// asked for after close, is refused.
TEST(VariantServicesTest, MaintenanceUnitsKeepCheckpointsOutAndExtendTheirRoom) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.cache_bytes = 1 << 20;  // 256 frames: 128 of write room, 230 at most with extensions
  o.checkpoint.dirty_fraction = 0.25;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  IndexServices* services = static_cast<DbImpl*>(db->get())->services();

  EXPECT_EQ(services->RunMaintenance(129, [](WriteRoom*) { return Status::Ok(); }).code(),
            StatusCode::kResourceExhausted);

  std::atomic<bool> checkpoint_done{false};
  std::thread checkpointer;
  uint64_t count_inside = 0, count_before = 0;
  ASSERT_OK(services->RunMaintenance(100, [&](WriteRoom* room) -> Status {
    EXPECT_EQ(room->reserved(), 100u);
    EXPECT_OK(room->Extend(130));  // 230: the hard cap
    EXPECT_EQ(room->Extend(1).code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(room->reserved(), 230u);
    count_before = (*db)->GetStats().checkpoint.count;
    checkpointer = std::thread([&] {
      EXPECT_OK((*db)->Checkpoint());
      checkpoint_done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    count_inside = (*db)->GetStats().checkpoint.count;
    EXPECT_FALSE(checkpoint_done.load()) << "a checkpoint ran while the unit held the gate";
    return Status::Ok();
  }));
  checkpointer.join();
  EXPECT_EQ(count_inside, count_before);
  EXPECT_TRUE(checkpoint_done.load());

  // The room was given back: a full-size unit fits again.
  ASSERT_OK(services->RunMaintenance(128, [](WriteRoom*) { return Status::Ok(); }));
  ASSERT_OK((*db)->Close());
  EXPECT_EQ(services->RunMaintenance(1, [](WriteRoom*) { return Status::Ok(); }).code(),
            StatusCode::kUnavailable);
}

// The checkpoint hooks: each checkpoint's side file is kept until a later one is durable, and a
// checkpoint that fails (here: no space for its manifest) has its file deleted again. After
// reopening, the file the durable manifest names is there.
TEST(VariantServicesTest, CheckpointHooksKeepExactlyTheDurableSideFile) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 5);
  Options o = BufferedOptions(dir.path());
  o.io_backend = fb;
  auto side_files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      n += e.path().filename().string().rfind("buffered-", 0) == 0 ? 1 : 0;
    }
    return n;
  };
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  for (int round = 0; round < 5; ++round) {
    for (uint64_t i = 0; i < 50; ++i) ASSERT_OK((*db)->Put(Key(round * 50 + i), Value(i, 0)));
    ASSERT_OK((*db)->Checkpoint());
    EXPECT_EQ(side_files(), 1) << "round " << round;
  }
  EXPECT_GE(Extra(db->get(), "durable_epochs_total"), 5);

  ASSERT_OK((*db)->Put(Key(9999), Value(9999, 0)));
  fb->AddRule({.kind = FaultInjectionBackend::OpKind::kWrite,
               .path_contains = "MANIFEST",
               .error = ENOSPC,
               .count = 1});
  const double abandoned = Extra(db->get(), "abandoned_epochs_total");
  EXPECT_FALSE((*db)->Checkpoint().ok());
  EXPECT_EQ(Extra(db->get(), "abandoned_epochs_total") - abandoned, 1);
  EXPECT_EQ(side_files(), 1) << "the failed checkpoint's file was deleted";
  fb->ClearRules();
  ASSERT_OK((*db)->Checkpoint());
  EXPECT_EQ(side_files(), 1);
  ASSERT_OK((*db)->Close());
  db = Db::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::string v;
  ASSERT_TRUE(*(*db)->Get(Key(9999), &v));
  ExpectClean(db->get(), 251);
}

}  // namespace
}  // namespace grove::testing
