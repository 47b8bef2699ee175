// Power loss at many points of the write path, on the fault-injecting backend.
//
// A deterministic single-threaded workload (puts with small and out-of-line values, deletes,
// batches, checkpoints forced by a small cache) runs with wal.sync = always. The backend crashes
// after the n-th mutating IO; unsynced writes are then dropped or torn, and the database is
// reopened on a clean backend. Recovery must produce exactly the state after the last acknowledged
// operation, or that state plus the one operation in flight applied completely (never partially),
// and Verify() must find no problem.
//
// Crash points are chosen per category of IO (WAL, double-write, manifest, pages in place,
// superblock) so that every phase of the durability protocol is hit; GROVE_CRASH_POINTS=all runs
// every single IO of the workload.

#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using Model = std::map<std::string, std::string>;
using PowerLoss = FaultInjectionBackend::PowerLoss;

struct Op {
  enum Kind { kPut, kDelete, kBatch, kCheckpoint } kind;
  WriteBatch batch;  // for kPut/kDelete/kBatch
};

// The workload: fixed by the seed, applied to a model and to the database alike.
std::vector<Op> MakeWorkload(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<Op> ops;
  for (int i = 0; i < n; ++i) {
    Op op;
    const int r = static_cast<int>(rng() % 100);
    auto key = [&] { return Key(rng() % 400); };
    auto value = [&](int v) { return Value(rng() % 1000, v, rng() % 10 == 0 ? 1500 : 24); };
    if (r < 60) {
      op.kind = Op::kPut;
      op.batch.Put(key(), value(i));
    } else if (r < 75) {
      op.kind = Op::kDelete;
      op.batch.Delete(key());
    } else if (r < 97) {
      op.kind = Op::kBatch;
      const int m = 2 + static_cast<int>(rng() % 20);
      for (int j = 0; j < m; ++j) {
        if (rng() % 4 == 0) {
          op.batch.Delete(key());
        } else {
          op.batch.Put(key(), value(i * 100 + j));
        }
      }
    } else {
      op.kind = Op::kCheckpoint;
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

void ApplyToModel(const Op& op, Model* m) {
  if (op.kind == Op::kCheckpoint) return;
  op.batch
      .ForEach([&](WriteBatch::OpType t, Slice k, Slice v) {
        if (t == WriteBatch::OpType::kPut) {
          (*m)[std::string(k)] = std::string(v);
        } else {
          m->erase(std::string(k));
        }
        return Status::Ok();
      })
      .IgnoreError();
}

Status RunOp(Db* db, const Op& op) {
  return op.kind == Op::kCheckpoint ? db->Checkpoint() : db->Write(op.batch);
}

Options CrashOptions(const std::string& dir, std::shared_ptr<IoBackend> io) {
  Options o = SmallOptions(dir);
  o.cache_bytes = 1 << 20;  // 256 frames: checkpoints happen often
  o.checkpoint.dirty_fraction = 0.2;
  o.wal.sync = SyncMode::kAlways;
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

std::string Category(const FaultInjectionBackend::OpInfo& info) {
  const std::string& p = info.path;
  if (p.find("/wal-") != std::string::npos) return "wal";
  if (p.find("DOUBLEWRITE") != std::string::npos) return "double-write";
  if (p.find("MANIFEST") != std::string::npos) return "manifest";
  if (p.find("grove.data") != std::string::npos) {
    if (info.kind == FaultInjectionBackend::OpKind::kWrite && info.offset < 2 * 4096) {
      return "superblock";
    }
    return "data";
  }
  return "dir";
}

class CrashTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSeed = 42;
  static constexpr int kOps = 260;

  // Runs the workload until the backend crashes; returns how many ops were acknowledged.
  size_t RunUntilCrash(const std::string& dir, std::shared_ptr<FaultInjectionBackend> fb,
                       const std::vector<Op>& ops) {
    auto db = Db::Open(CrashOptions(dir, fb));
    if (!db.ok()) return 0;
    size_t acked = 0;
    for (const Op& op : ops) {
      if (!RunOp(db->get(), op).ok()) break;
      ++acked;
    }
    db->reset();  // close fails quietly once crashed
    return acked;
  }

  void CheckRecovered(const std::string& dir, const std::vector<Op>& ops, size_t acked,
                      const std::string& what) {
    Model before;
    for (size_t i = 0; i < acked; ++i) ApplyToModel(ops[i], &before);
    Model after = before;
    if (acked < ops.size()) ApplyToModel(ops[acked], &after);

    auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
    ASSERT_TRUE(inner.ok());
    auto db = Db::Open(CrashOptions(dir, *inner));
    ASSERT_TRUE(db.ok()) << what << ": reopen failed: " << db.status().ToString();
    VerifyReport report;
    ASSERT_OK((*db)->Verify(&report));
    ASSERT_TRUE(report.problems.empty()) << what << ": " << report.problems[0];
    const Model got = ReadAll(db->get());
    const bool match = got == before || got == after;
    ASSERT_TRUE(match) << what << ": recovered " << got.size() << " keys; acknowledged state has "
                       << before.size() << ", with the in-flight op " << after.size();
    // Point lookups agree with the scan.
    std::string v;
    for (const auto& [k, val] : got) {
      ASSERT_TRUE(*(*db)->Get(k, &v)) << what;
      ASSERT_EQ(v, val) << what;
    }
  }
};

TEST_F(CrashTest, PowerLossAtSampledPointsOfEveryPhase) {
  const std::vector<Op> ops = MakeWorkload(kSeed, kOps);

  // Pass 1: no crash; record the category of every mutating IO.
  std::vector<std::string> categories;
  {
    TempDir dir;
    auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
    ASSERT_TRUE(inner.ok());
    auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1);
    fb->SetObserver(
        [&](const FaultInjectionBackend::OpInfo& info) { categories.push_back(Category(info)); });
    ASSERT_EQ(RunUntilCrash(dir.path(), fb, ops), ops.size());
  }
  std::map<std::string, std::vector<uint64_t>> by_category;
  for (uint64_t i = 0; i < categories.size(); ++i) by_category[categories[i]].push_back(i);
  for (const char* needed : {"wal", "double-write", "manifest", "data", "superblock"}) {
    ASSERT_FALSE(by_category[needed].empty()) << "the workload never wrote " << needed;
  }

  // Pick crash points: evenly spread within each category, or all of them on request.
  const bool all = std::getenv("GROVE_CRASH_POINTS") != nullptr &&
                   std::string(std::getenv("GROVE_CRASH_POINTS")) == "all";
  std::vector<std::pair<uint64_t, std::string>> points;
  for (const auto& [cat, idx] : by_category) {
    const size_t want = all ? idx.size() : std::min<size_t>(idx.size(), 14);
    for (size_t j = 0; j < want; ++j) points.push_back({idx[j * idx.size() / want], cat});
  }

  std::map<std::string, int> hits;
  int run = 0;
  for (const auto& [point, cat] : points) {
    for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
      TempDir dir;
      auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
      ASSERT_TRUE(inner.ok());
      auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1000 + run++);
      fb->CrashAfter(point);
      const size_t acked = RunUntilCrash(dir.path(), fb, ops);
      ASSERT_OK(fb->SimulatePowerLoss(mode));
      const std::string what = "crash at IO #" + std::to_string(point) + " (" + cat + ", " +
                               (mode == PowerLoss::kDropUnsynced ? "drop" : "tear") + ")";
      CheckRecovered(dir.path(), ops, acked, what);
      if (HasFatalFailure()) return;
      ++hits[cat];
    }
  }
  for (const auto& [cat, n] : hits) {
    std::printf("crash points hit: %-13s %d\n", cat.c_str(), n);
  }
}

// A crash while recovery itself is completing a checkpoint from the double-write file: recovery
// must be restartable.
TEST_F(CrashTest, CrashDuringRecoveryIsRecoverable) {
  const std::vector<Op> ops = MakeWorkload(kSeed + 1, 120);
  TempDir dir;
  auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
  ASSERT_TRUE(inner.ok());
  // Crash on the first in-place page write of some checkpoint, after its double-write batch.
  auto fb = std::make_shared<FaultInjectionBackend>(*inner, 7);
  int dw_syncs = 0;
  fb->SetObserver([&](const FaultInjectionBackend::OpInfo& info) {
    if (info.path.find("DOUBLEWRITE") != std::string::npos &&
        info.kind == FaultInjectionBackend::OpKind::kSync && ++dw_syncs == 3) {
      fb->CrashAfter(4);  // the manifest write, its sync, the dir sync, then die in place
    }
  });
  const size_t acked = RunUntilCrash(dir.path(), fb, ops);
  ASSERT_LT(acked, ops.size()) << "the workload never reached the crash point";
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kTearUnsynced));

  // First recovery attempt dies while rewriting pages from the double-write file.
  fb->SetObserver(nullptr);
  fb->CrashAfter(5);  // manifest truncate, write, sync, dir sync, one page in place
  {
    auto db = Db::Open(CrashOptions(dir.path(), fb));
    ASSERT_TRUE(fb->crashed());
    EXPECT_FALSE(db.ok());
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kTearUnsynced));
  CheckRecovered(dir.path(), ops, acked, "crash during recovery");
}

}  // namespace
}  // namespace grove::testing
