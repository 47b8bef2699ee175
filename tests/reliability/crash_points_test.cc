// Crash points and power loss (docs/reliability.md, "Crash points"), for every case of the variant
// conformance suite (tests/conformance/cases.h). The structure workload (crash_workload.h) runs on
// the fault-injecting backend with wal.sync = always. A first run records every mutating IO and
// classifies it by protocol boundary and by the structure change it belongs to. Then, for sampled
// IOs of every class (every IO with GROVE_CRASH_POINTS=all), a fresh run crashes at exactly that
// IO; the unsynced writes are dropped, torn sector by sector, or kept (a process crash); and the
// directory is reopened on a clean backend. Recovery must yield the state after the last
// acknowledged step, or that state plus the step in flight applied as a whole, with Verify() clean
// and every key readable.
//
// Also here: a crash at every IO of recovery itself (compound failure), and power loss with
// wal.sync = batch and none, where a suffix of acknowledged writes may be lost but never a write
// in the middle. Each test prints one JSON line with its hits per crash point class.

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <gtest/gtest.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "index/registry.h"
#include "io/fault_backend.h"
#include "reliability/crash_workload.h"
#include "reliability/report.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

const char* ModeName(PowerLoss m) {
  return m == PowerLoss::kDropUnsynced ? "drop" : m == PowerLoss::kTearUnsynced ? "tear" : "keep";
}

Options CrashOptions(const std::string& dir, std::shared_ptr<IoBackend> io, const VariantCase& c,
                     SyncMode sync) {
  Options o = ConformanceOptions(c, dir);
  // Room for the workload's 48-entry batches at hln's worst case (two 16-page leaves per entry).
  o.cache_bytes = 16 << 20;
  // Only the workload's explicit checkpoints: the IO sequence is then the same on every run.
  o.checkpoint.dirty_fraction = 0.45;
  o.checkpoint.wal_bytes = 1ull << 40;
  o.checkpoint.interval_seconds = 0;
  o.wal.sync = sync;
  o.wal.segment_bytes = 1 << 20;
  o.wal.max_unsynced_bytes = 256 << 10;
  o.max_batch_bytes = 64 << 10;
  o.io_backend = std::move(io);
  return o;
}

Model ReadAll(Db* db) {
  Model m;
  auto it = db->NewIterator(ScanOptions());
  EXPECT_TRUE(it.ok());
  for (; (*it)->Valid(); (*it)->Next()) m[std::string((*it)->key())] = std::string((*it)->value());
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status().ToString();
  return m;
}

// Reopens `dir` on a clean backend and checks it: Verify() clean, point reads agree with the scan.
// Returns the recovered contents (empty on failure, with a test failure recorded).
Model Recover(const std::string& dir, const VariantCase& c, const std::string& what) {
  auto db = Db::Open(CrashOptions(dir, Psync(), c, SyncMode::kAlways));
  if (!db.ok()) {
    ADD_FAILURE() << what << ": reopen failed: " << db.status().ToString();
    return {};
  }
  VerifyReport report;
  const Status vs = (*db)->Verify(&report);
  EXPECT_TRUE(vs.ok()) << what << ": " << vs.ToString();
  EXPECT_TRUE(report.problems.empty()) << what << ": " << report.problems[0];
  Model got = ReadAll(db->get());
  std::string v;
  for (const auto& [k, val] : got) {
    auto found = (*db)->Get(k, &v);
    EXPECT_TRUE(found.ok() && *found && v == val) << what << ": Get disagrees with the scan";
  }
  EXPECT_OK((*db)->Close());
  return got;
}

// Models after each prefix of the steps: prefix[i] is the state after steps [0, i).
std::vector<Model> Prefixes(const std::vector<CrashStep>& steps) {
  std::vector<Model> out(1);
  for (const CrashStep& s : steps) {
    out.push_back(out.back());
    ApplyStep(s, &out.back());
  }
  return out;
}

// The context label of a step index as Execute() records it.
std::string Context(const std::vector<std::string>& context, size_t step) {
  if (step < context.size()) return context[step];
  return step == context.size() ? "open" : "close";
}

class CrashPointsTest : public ::testing::TestWithParam<VariantCase> {
 protected:
  // One run of the workload on `fb`, stopping at the first failed step. Labels every mutating IO
  // with the step that issued it and its boundary; records the shape of the index after each step.
  struct Run {
    size_t acked = 0;
    size_t open_ios = 0;                              // mutating IOs of Db::Open
    std::vector<std::pair<size_t, std::string>> ios;  // (step, boundary) per mutating IO
    IndexStats initial;
    std::vector<IndexStats> shapes;
  };
  Run Execute(const std::string& dir, const std::shared_ptr<FaultInjectionBackend>& fb,
              const std::vector<CrashStep>& steps, SyncMode sync) {
    Run run;
    // The engine's background threads (WAL syncer, checkpoints) issue IOs too: the observer runs
    // on them, so the step label is atomic and the IO list has its own lock.
    std::atomic<size_t> step{steps.size()};  // while opening: labelled "open"
    std::mutex ios_mu;
    IoClassifier classifier;
    fb->SetObserver([&](const FaultInjectionBackend::OpInfo& info) {
      std::lock_guard<std::mutex> lock(ios_mu);
      run.ios.push_back({step.load(), classifier.Classify(info)});
    });
    auto ios_so_far = [&] {
      std::lock_guard<std::mutex> lock(ios_mu);
      return run.ios.size();
    };
    auto db = Db::Open(CrashOptions(dir, fb, GetParam(), sync));
    if (db.ok()) {
      run.initial = (*db)->GetStats().index;
      run.open_ios = ios_so_far();
      for (size_t i = 0; i < steps.size(); ++i) {
        step = i;
        if (!RunStep(db->get(), steps[i]).ok()) break;
        run.shapes.push_back((*db)->GetStats().index);
        ++run.acked;
      }
      step = steps.size() + 1;  // labelled "close"
      db->reset();              // a crashed backend makes close fail quietly
    }
    fb->SetObserver(nullptr);
    return run;
  }
};

TEST_P(CrashPointsTest, PowerLossAtEveryBoundary) {
  const std::vector<CrashStep> steps = StructureWorkload(7);
  const std::vector<Model> prefix = Prefixes(steps);

  // Pass 1: no crash. Learn the IO sequence and the structure changes.
  Run clean;
  {
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
    clean = Execute(dir.path(), fb, steps, SyncMode::kAlways);
    ASSERT_EQ(clean.acked, steps.size());
  }
  const std::vector<std::string> context = StepContexts(steps, clean.initial, clean.shapes);
  std::map<std::string, std::vector<uint64_t>> by_class;
  // Crash points start after the database was created: a crash while creating it is its own
  // test (CrashWhileCreating below).
  for (uint64_t i = clean.open_ios; i < clean.ios.size(); ++i) {
    const auto& [step, boundary] = clean.ios[i];
    by_class[Context(context, step) + "/" + boundary].push_back(i);
  }
  for (const char* needed :
       {"write/wal.write", "write/wal.sync", "write:split/wal.sync", "write:root-split/wal.sync",
        "checkpoint:split/doublewrite.write", "checkpoint:split/inplace.write",
        "checkpoint:split/superblock.sync", "checkpoint:inner-merge/manifest.sync",
        "checkpoint:root-collapse/superblock.write", "write:merge/wal.sync"}) {
    EXPECT_TRUE(by_class.count(needed) || !GetParam().btree_structure)
        << "the workload never reached " << needed;
  }
  if (HasFailure()) {
    for (const auto& [cls, idx] : by_class)
      std::printf("class %s: %zu IOs\n", cls.c_str(), idx.size());
  }

  const bool all = std::getenv("GROVE_CRASH_POINTS") != nullptr &&
                   std::string(std::getenv("GROVE_CRASH_POINTS")) == "all";
  const size_t per_class = 2 * ReliabilityScale();
  std::vector<uint64_t> points;
  for (const auto& [cls, idx] : by_class) {
    const size_t want = all ? idx.size() : std::min(idx.size(), per_class);
    for (size_t j = 0; j < want; ++j) points.push_back(idx[j * idx.size() / want]);
  }

  std::map<std::string, std::map<std::string, int>> hits;  // class -> mode -> runs
  uint64_t runs = 0, inflight_applied = 0, dropped = 0, torn = 0, kept = 0, unreached = 0;
  for (uint64_t point : points) {
    for (PowerLoss mode :
         {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced, PowerLoss::kKeepUnsynced}) {
      TempDir dir;
      auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1000 + runs++);
      fb->CrashAfter(point);
      const Run r = Execute(dir.path(), fb, steps, SyncMode::kAlways);
      if (!fb->crashed() && !GetParam().deterministic_io) {
        ++unreached;  // background work made this run shorter: the point does not exist in it
        continue;
      }
      ASSERT_TRUE(fb->crashed()) << "IO #" << point << " was never reached";
      ASSERT_GT(r.ios.size(), point);
      const auto& [step, boundary] = r.ios[point];
      const std::string cls = Context(context, step) + "/" + boundary;
      ASSERT_OK(fb->SimulatePowerLoss(mode));
      const auto c = fb->counters();
      dropped += c.unsynced_writes_dropped;
      torn += c.unsynced_writes_torn;
      kept += c.unsynced_writes_kept;
      const std::string what = "crash at IO #" + std::to_string(point) + " (" + cls + ", " +
                               ModeName(mode) + ", step " + std::to_string(r.acked) + ")";
      const Model got = Recover(dir.path(), GetParam(), what);
      if (HasFailure()) return;
      const bool before = got == prefix[r.acked];
      const bool after = r.acked < steps.size() && got == prefix[r.acked + 1];
      ASSERT_TRUE(before || after)
          << what << ": recovered " << got.size() << " keys; the acknowledged state has "
          << prefix[r.acked].size() << ", with the step in flight "
          << prefix[std::min(r.acked + 1, steps.size())].size();
      inflight_applied += !before;
      ++hits[cls][ModeName(mode)];
    }
  }

  EXPECT_LT(unreached, runs / 2) << "most crash points were never reached";
  nlohmann::json table;
  for (const auto& [cls, modes] : hits) table[cls] = modes;
  EmitReport({{"test", "crash_points"},
              {"variant", GetParam().name},
              {"mode", all ? "all" : "sampled"},
              {"ios_in_workload", clean.ios.size()},
              {"classes", by_class.size()},
              {"crash_runs", runs - unreached},
              {"inflight_step_applied", inflight_applied},
              {"unsynced_writes_dropped", dropped},
              {"unsynced_writes_torn", torn},
              {"unsynced_writes_kept", kept},
              {"violations", 0},
              {"hits", table}});
}

// A crash at any IO while Db::Open creates a new database must leave a directory that opens (as an
// empty database): nothing was acknowledged yet, and an operator should not have to clean up.
//
// This once bricked the directory: the epoch-0 superblock was written into the freshly created
// grove.data, and a crash before it was synced left a torn slot 0 and no slot 1 (DATA_LOSS on
// every later open). The data file is now created as grove.data.new and renamed once its
// superblock is durable (DbImpl::CreateDataFile).
TEST_P(CrashPointsTest, CrashWhileCreatingLeavesAnOpenableDirectory) {
  const std::vector<CrashStep> steps = StructureWorkload(3);
  Run clean;
  {
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
    clean = Execute(dir.path(), fb, steps, SyncMode::kAlways);
  }
  ASSERT_GT(clean.open_ios, 0u);
  int runs = 0;
  for (uint64_t k = 0; k < clean.open_ios; ++k) {
    // Tearing decides at random per write and per file: several seeds per crash point.
    for (int seed = 0; seed < 9; ++seed) {
      const PowerLoss mode = seed == 0 ? PowerLoss::kDropUnsynced : PowerLoss::kTearUnsynced;
      TempDir dir;
      auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 300 + runs++);
      fb->CrashAfter(k);
      Execute(dir.path(), fb, steps, SyncMode::kAlways);
      ASSERT_OK(fb->SimulatePowerLoss(mode));
      const Model got = Recover(dir.path(), GetParam(),
                                "crash at creation IO #" + std::to_string(k) + " (" +
                                    clean.ios[k].second + ", " + ModeName(mode) + ")");
      if (HasFailure()) return;
      EXPECT_TRUE(got.empty());
    }
  }
}

// A crash while recovery is itself repairing a crash: recovery must be restartable at every one of
// its IOs. The first crash hits the in-place writes of a checkpoint (so recovery must complete it
// from the double-write file) with WAL records after it to replay.
TEST_P(CrashPointsTest, CrashDuringRecoveryAtEveryBoundary) {
  const std::vector<CrashStep> steps = StructureWorkload(11);
  const std::vector<Model> prefix = Prefixes(steps);

  // Find the in-place writes of the last checkpoint that has writes after it.
  Run clean;
  {
    TempDir dir;
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
    clean = Execute(dir.path(), fb, steps, SyncMode::kAlways);
  }
  uint64_t point = 0;
  for (uint64_t i = 0; i < clean.ios.size(); ++i) {
    if (clean.ios[i].second == "inplace.write" && clean.ios[i].first + 10 < steps.size()) point = i;
  }
  ASSERT_GT(point, 0u);

  // The crashed directory every recovery attempt starts from.
  TempDir origin;
  size_t acked = 0;
  {
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 2);
    fb->CrashAfter(point);
    acked = Execute(origin.path(), fb, steps, SyncMode::kAlways).acked;
    ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kTearUnsynced));
  }

  // Count recovery's mutating IOs.
  uint64_t recovery_ios = 0;
  {
    TempDir dir;
    std::filesystem::copy(origin.path(), dir.path(),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
    auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
    auto db = Db::Open(CrashOptions(dir.path(), fb, GetParam(), SyncMode::kAlways));
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    recovery_ios = fb->mutating_ops();
  }
  ASSERT_GT(recovery_ios, 3u);

  std::map<std::string, int> hits;
  for (uint64_t k = 0; k < recovery_ios; ++k) {
    for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
      TempDir dir;
      std::filesystem::copy(origin.path(), dir.path(),
                            std::filesystem::copy_options::recursive |
                                std::filesystem::copy_options::overwrite_existing);
      auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 100 + k);
      IoClassifier classifier;
      std::string boundary;
      fb->SetObserver([&](const FaultInjectionBackend::OpInfo& info) {
        const std::string b = classifier.Classify(info);
        if (info.index == k) boundary = b;
      });
      fb->CrashAfter(k);
      {
        auto db = Db::Open(CrashOptions(dir.path(), fb, GetParam(), SyncMode::kAlways));
        ASSERT_FALSE(db.ok()) << "recovery IO #" << k << " was never reached";
      }
      fb->SetObserver(nullptr);
      ASSERT_OK(fb->SimulatePowerLoss(mode));
      const std::string what = "recovery crashed at its IO #" + std::to_string(k) + " (" +
                               boundary + ", " + ModeName(mode) + ")";
      const Model got = Recover(dir.path(), GetParam(), what);
      if (HasFailure()) return;
      ASSERT_TRUE(got == prefix[acked] || got == prefix[acked + 1]) << what;
      ++hits["recovery/" + boundary];
    }
  }
  nlohmann::json table(hits);
  EmitReport({{"test", "crash_during_recovery"},
              {"variant", GetParam().name},
              {"recovery_ios", recovery_ios},
              {"crash_runs", 2 * recovery_ios},
              {"violations", 0},
              {"hits", table}});
}

// wal.sync = batch or none acknowledge before the log is synced: a power loss may lose the newest
// acknowledged writes, but what survives is always a prefix of the history.
TEST_P(CrashPointsTest, UnsyncedModesLoseOnlyASuffix) {
  const std::vector<CrashStep> steps = StructureWorkload(13);
  const std::vector<Model> prefix = Prefixes(steps);
  std::map<std::string, uint64_t> lost_steps;
  uint64_t runs = 0;
  for (SyncMode sync : {SyncMode::kBatch, SyncMode::kNone}) {
    const std::string name = sync == SyncMode::kBatch ? "batch" : "none";
    Run clean;
    {
      TempDir dir;
      auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
      clean = Execute(dir.path(), fb, steps, sync);
    }
    const uint64_t n = clean.ios.size();
    const uint64_t samples = 12 * ReliabilityScale();
    for (uint64_t j = 0; j < samples; ++j) {
      const uint64_t point = 1 + j * (n - 2) / samples;
      for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
        TempDir dir;
        auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 500 + runs++);
        fb->CrashAfter(point);
        const Run r = Execute(dir.path(), fb, steps, sync);
        ASSERT_OK(fb->SimulatePowerLoss(mode));
        const std::string what = "wal.sync " + name + ", crash at IO #" + std::to_string(point) +
                                 " (" + ModeName(mode) + ")";
        const Model got = Recover(dir.path(), GetParam(), what);
        if (HasFailure()) return;
        size_t p = r.acked + 1;
        while (p > 0 && !(p < prefix.size() && got == prefix[p])) --p;
        ASSERT_TRUE(got == prefix[p])
            << what << ": the recovered state is no prefix of the history";
        lost_steps[name] += r.acked - std::min(r.acked, p);
      }
    }
  }
  EmitReport({{"test", "unsynced_power_loss"},
              {"variant", GetParam().name},
              {"crash_runs", runs},
              {"acked_steps_lost_batch", lost_steps["batch"]},
              {"acked_steps_lost_none", lost_steps["none"]},
              {"gaps", 0}});
}

INSTANTIATE_TEST_SUITE_P(Variants, CrashPointsTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
