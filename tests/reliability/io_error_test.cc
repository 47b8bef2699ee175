// IO errors (docs/reliability.md, "Disk faults"), on the fault-injecting backend, the way SQLite's
// fault VFS tests do it: the structure workload (crash_workload.h) runs with wal.sync = always,
// and the N-th mutating IO fails with EIO or ENOSPC, once or for good, for sampled N of every
// boundary class (every N with GROVE_CRASH_POINTS=all).
//
// Each run checks:
//   * the failing step reports INTERNAL or RESOURCE_EXHAUSTED, never OK and never another code;
//   * a failed fdatasync of the WAL or of the data file is fail-stop: every later write fails,
//     even once the fault is gone; reads keep answering from memory and stay correct;
//   * a fault that is not fail-stop (e.g. a checkpoint that fails before writing in place) leaves
//     the database writable once the fault is gone;
//   * after a power loss (unsynced writes dropped) and a reopen on a clean backend, Verify() is
//     clean and the state is every acknowledged step, plus possibly the step that failed.
// Read errors are checked separately: reported as INTERNAL, never as data, and gone with the fault.

#include <cstdlib>

#include <gtest/gtest.h>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"
#include "reliability/crash_workload.h"
#include "reliability/report.h"

namespace grove::testing {
namespace {

using OpKind = FaultInjectionBackend::OpKind;
using PowerLoss = FaultInjectionBackend::PowerLoss;

Options FaultOptions(const std::string& dir, std::shared_ptr<IoBackend> io) {
  Options o = SmallOptions(dir);
  o.cache_bytes = 8 << 20;
  o.checkpoint.dirty_fraction = 0.45;
  o.checkpoint.wal_bytes = 1ull << 40;
  o.checkpoint.interval_seconds = 0;
  o.wal.sync = SyncMode::kAlways;
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = 256 << 10;
  o.max_batch_bytes = 64 << 10;
  o.io_backend = std::move(io);
  return o;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Model ReadAll(Db* db) {
  Model m;
  auto it = db->NewIterator(ScanOptions());
  EXPECT_TRUE(it.ok());
  for (; (*it)->Valid(); (*it)->Next()) m[std::string((*it)->key())] = std::string((*it)->value());
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
  return m;
}

bool IsDurabilitySync(const std::string& boundary) {
  return boundary == "wal.sync" || boundary == "inplace.sync" || boundary == "superblock.sync";
}

TEST(IoErrorTest, EveryBoundaryFailsCleanly) {
  const std::vector<CrashStep> steps = StructureWorkload(5);

  // The IO sequence and its classes, from a clean run.
  std::vector<std::string> classes;
  {
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
    IoClassifier c;
    fb->SetObserver(
        [&](const FaultInjectionBackend::OpInfo& i) { classes.push_back(c.Classify(i)); });
    auto db = Db::Open(FaultOptions(dir.path(), fb));
    ASSERT_TRUE(db.ok());
    for (const CrashStep& s : steps) ASSERT_OK(RunStep(db->get(), s));
    ASSERT_OK((*db)->Close());
    fb->SetObserver(nullptr);
  }
  std::map<std::string, std::vector<uint64_t>> by_class;
  for (uint64_t i = 0; i < classes.size(); ++i) by_class[classes[i]].push_back(i);
  const bool all = std::getenv("GROVE_CRASH_POINTS") != nullptr &&
                   std::string(std::getenv("GROVE_CRASH_POINTS")) == "all";
  std::vector<uint64_t> points;
  for (const auto& [cls, idx] : by_class) {
    const size_t want = all ? idx.size() : std::min<size_t>(idx.size(), 3 * ReliabilityScale());
    for (size_t j = 0; j < want; ++j) points.push_back(idx[j * idx.size() / want]);
  }

  // boundary -> errno/mode -> outcome -> runs
  std::map<std::string, std::map<std::string, std::map<std::string, int>>> table;
  uint64_t runs = 0, failed_step_applied = 0;
  for (uint64_t point : points) {
    for (int err : {EIO, ENOSPC}) {
      for (bool forever : {false, true}) {
        TempDir dir;
        auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 10 + runs++);
        IoClassifier classifier;
        std::string boundary;
        fb->SetObserver([&](const FaultInjectionBackend::OpInfo& info) {
          const std::string b = classifier.Classify(info);
          if (info.index != point) return;
          boundary = b;
          // Matches this op now (rules apply after the observer) and later ones of its kind.
          fb->AddRule({.kind = info.kind,
                       .path_contains = info.kind == OpKind::kSyncDir ? "" : Basename(info.path),
                       .error = err,
                       .count = forever ? -1 : 1});
        });
        const std::string what = "IO #" + std::to_string(point) + " (" + classes[point] + ") " +
                                 (err == EIO ? "EIO" : "ENOSPC") + (forever ? " forever" : " once");

        // Steps until the end; the first failure and what follows it.
        std::vector<bool> ok(steps.size(), false);
        int first_failed = -1;
        std::string outcome;
        bool later_write_ok = false, later_write_failed = false;
        {
          auto db = Db::Open(FaultOptions(dir.path(), fb));
          if (!db.ok()) {
            outcome = "open failed: " + std::string(StatusCodeName(db.status().code()));
            EXPECT_TRUE(db.status().code() == StatusCode::kInternal ||
                        db.status().code() == StatusCode::kResourceExhausted)
                << what << ": " << db.status().ToString();
          } else {
            Model acked;
            for (size_t i = 0; i < steps.size(); ++i) {
              const Status s = RunStep(db->get(), steps[i]);
              ok[i] = s.ok();
              if (s.ok()) {
                ApplyStep(steps[i], &acked);
                if (first_failed >= 0 && !steps[i].checkpoint) later_write_ok = true;
                continue;
              }
              if (first_failed < 0) {
                first_failed = static_cast<int>(i);
                outcome = StatusCodeName(s.code());
                EXPECT_TRUE(s.code() == StatusCode::kInternal ||
                            s.code() == StatusCode::kResourceExhausted)
                    << what << ": step " << i << ": " << s.ToString();
                // Reads keep working and stay right: every key the failed step did not touch.
                Model touched;
                ApplyStep(steps[i], &touched);
                std::string v;
                for (const auto& [k, val] : acked) {
                  if (touched.count(k)) continue;
                  auto found = (*db)->Get(k, &v);
                  ASSERT_TRUE(found.ok() && *found && v == val)
                      << what << ": a read after the failure: "
                      << (found.ok() ? "wrong value" : found.status().ToString());
                }
              } else if (!steps[i].checkpoint) {
                later_write_failed = true;
              }
              // Once-faults vanish: a step failing after that is either the fail-stop refusing
              // writes, or a checkpoint.
            }
          }
          fb->CrashAfter(0);  // the process dies here: no final checkpoint
        }
        fb->SetObserver(nullptr);
        if (first_failed < 0 && outcome.empty()) {
          // A fault on an IO whose failure the engine tolerates by design (e.g. deleting an
          // obsolete file): nothing failed.
          outcome = "tolerated";
        }
        const bool fail_stop = first_failed >= 0 && later_write_failed && !later_write_ok;
        if (first_failed >= 0) {
          outcome += fail_stop        ? ", fail-stop"
                     : later_write_ok ? ", writable after"
                                      : ", no write after";  // the failed step was the last write
        }
        if (IsDurabilitySync(boundary) && first_failed >= 0) {
          EXPECT_FALSE(later_write_ok) << what << ": a write was acknowledged after a failed fsync";
        }
        if (!forever) {
          // A one-off fault either stops the database for good or not at all.
          EXPECT_FALSE(later_write_ok && later_write_failed)
              << what << ": some writes failed and others succeeded after a one-off fault";
        }
        ++table[boundary.empty() ? classes[point] : boundary]
               [std::string(err == EIO ? "EIO" : "ENOSPC") + (forever ? " forever" : " once")]
               [outcome];

        // Power loss, then recovery on a clean backend.
        fb->ClearRules();
        ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
        auto db = Db::Open(FaultOptions(dir.path(), Psync()));
        ASSERT_TRUE(db.ok()) << what << ": reopen: " << db.status().ToString();
        VerifyReport report;
        ASSERT_OK((*db)->Verify(&report));
        ASSERT_TRUE(report.problems.empty()) << what << ": " << report.problems[0];
        Model without, with;
        for (size_t i = 0; i < steps.size(); ++i) {
          if (ok[i]) ApplyStep(steps[i], &without);
          if (ok[i] || static_cast<int>(i) == first_failed) ApplyStep(steps[i], &with);
        }
        const Model got = ReadAll(db->get());
        ASSERT_TRUE(got == without || got == with)
            << what << ": recovered " << got.size() << " keys; acknowledged " << without.size()
            << " (" << with.size() << " with the failed step)";
        failed_step_applied += got != without;
      }
    }
  }
  nlohmann::json j(table);
  EmitReport({{"test", "io_faults"},
              {"mode", all ? "all" : "sampled"},
              {"runs", runs},
              {"failed_step_visible_after_recovery", failed_step_applied},
              {"acked_lost", 0},
              {"outcomes", j}});
}

// Page reads that fail with EIO: the call fails with INTERNAL (never "not found", never data), a
// write that needs the page fails before it is logged, and nothing sticks once the fault is gone.
TEST(IoErrorTest, ReadErrorsAreReportedAndTransient) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
  {
    auto db = Db::Open(FaultOptions(dir.path(), fb));
    ASSERT_TRUE(db.ok());
    WriteBatch b;
    for (uint64_t i = 0; i < 4000; ++i) {
      b.Put(Key(i), Value(i, 1, i % 50 == 0 ? 2000 : 40));
      if (b.Count() == 200) {
        ASSERT_OK((*db)->Write(b));
        b.Clear();
      }
    }
    ASSERT_OK((*db)->Close());
  }
  // Open with failing reads: refused, with the error named.
  fb->AddRule({.kind = OpKind::kRead, .path_contains = "grove.data", .error = EIO, .count = 1});
  {
    auto db = Db::Open(FaultOptions(dir.path(), fb));
    ASSERT_FALSE(db.ok());
    EXPECT_EQ(db.status().code(), StatusCode::kInternal) << db.status().ToString();
  }
  fb->ClearRules();
  auto db = Db::Open(FaultOptions(dir.path(), fb));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  fb->AddRule({.kind = OpKind::kRead, .path_contains = "grove.data", .error = EIO});
  std::string v;
  int failed = 0;
  for (uint64_t i = 0; i < 4000; i += 37) {
    auto found = (*db)->Get(Key(i), &v);
    if (found.ok()) {
      ASSERT_TRUE(*found) << "a read error must not look like a missing key";
      ASSERT_EQ(v, Value(i, 1, i % 50 == 0 ? 2000 : 40));
      continue;
    }
    EXPECT_EQ(found.status().code(), StatusCode::kInternal) << found.status().ToString();
    ++failed;
  }
  EXPECT_GT(failed, 0) << "no read reached the disk";
  const Status put = (*db)->Put(Key(3999), "new");
  EXPECT_FALSE(put.ok()) << "the leaf is not cached: the write must fail before it is logged";
  auto it = (*db)->NewIterator(ScanOptions());
  if (it.ok()) {
    while ((*it)->Valid()) (*it)->Next();
    EXPECT_EQ((*it)->status().code(), StatusCode::kInternal);
    it->reset();
  }
  fb->ClearRules();
  for (uint64_t i = 0; i < 4000; i += 37) {
    auto found = (*db)->Get(Key(i), &v);
    ASSERT_TRUE(found.ok() && *found) << "a read error stuck after the fault went away";
    ASSERT_EQ(v, Value(i, 1, i % 50 == 0 ? 2000 : 40));
  }
  ASSERT_OK((*db)->Put(Key(3999), "new"));
  ASSERT_OK((*db)->Close());
  db = Db::Open(FaultOptions(dir.path(), Psync()));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(*(*db)->Get(Key(3999), &v));
  EXPECT_EQ(v, "new");
}

}  // namespace
}  // namespace grove::testing
