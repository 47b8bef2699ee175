// Power loss at many points of the write path with the hln variant, on the fault-injecting
// backend (the approach of crash_test.cc, which tests the shared engine protocol with the btree).
// What is specific to hln is that one write may rebalance a leaf, split it, convert it into a
// stash node or merge it: many pages change at once. The workload is chosen so that this happens
// between most checkpoints; recovery must produce exactly the acknowledged state (or that state
// plus the one operation in flight, applied completely), and Verify() must be clean.
//
// GROVE_CRASH_POINTS=all runs every single IO of the workload.

#include <cstdlib>
#include <random>

#include "engine/hln_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using Model = std::map<std::string, std::string>;
using PowerLoss = FaultInjectionBackend::PowerLoss;

struct Op {
  bool checkpoint = false;
  WriteBatch batch;
};

std::vector<Op> MakeWorkload(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<Op> ops;
  auto key = [&] { return Key(rng() % 2500); };
  auto value = [&](int v) { return Value(rng() % 1000, v, rng() % 25 == 0 ? 1500 : 30); };
  uint64_t sweep = 0;
  for (int i = 0; i < n; ++i) {
    Op op;
    const int r = static_cast<int>(rng() % 100);
    if (r < 4) {
      op.checkpoint = true;
    } else if (3 * i > 2 * n && r < 60) {
      // The last third sweeps deletes over most of the key space: leaves empty and merge.
      for (uint64_t k = sweep; k < sweep + 38; ++k) op.batch.Delete(Key(k));
      sweep += 38;
    } else if (r < 10) {
      // A run of deletes: subnodes empty, leaves tidy up.
      const uint64_t start = rng() % 2500;
      for (uint64_t k = start; k < start + 38; ++k) op.batch.Delete(Key(k));
    } else {
      const int m = 1 + static_cast<int>(rng() % 38);
      for (int j = 0; j < m; ++j) {
        if (rng() % 6 == 0) {
          op.batch.Delete(key());
        } else {
          op.batch.Put(key(), value(i * 100 + j));
        }
      }
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

void ApplyToModel(const Op& op, Model* m) {
  if (op.checkpoint) return;
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

class HlnCrashTest : public ::testing::TestWithParam<HlnParams> {
 protected:
  Options CrashOptions(const std::string& dir, std::shared_ptr<IoBackend> io) {
    Options o = HlnOptions(dir, GetParam());
    // 1024 frames: 256 leaves of 4 pages. Writes may keep 40% dirty, room for a 38-entry batch at
    // its worst case (two leaves per entry); checkpoints at 20% happen often.
    o.cache_bytes = 4 << 20;
    o.checkpoint.dirty_fraction = 0.2;
    o.wal.sync = SyncMode::kAlways;
    o.direct_io = true;
    o.io_backend = std::move(io);
    return o;
  }

  size_t RunUntilCrash(const std::string& dir, std::shared_ptr<FaultInjectionBackend> fb,
                       const std::vector<Op>& ops, std::map<std::string, double>* activity) {
    auto db = Db::Open(CrashOptions(dir, fb));
    if (!db.ok()) return 0;
    size_t acked = 0;
    for (const Op& op : ops) {
      const Status s = op.checkpoint ? (*db)->Checkpoint() : (*db)->Write(op.batch);
      if (!s.ok()) {
        if (!fb->crashed()) ADD_FAILURE() << "op " << acked << " failed: " << s.ToString();
        break;
      }
      ++acked;
    }
    if (activity != nullptr) {
      for (const char* name : {"rebalances_total", "splits_total", "merges_total",
                               "stash_conversions_total", "tidy_failures_total"}) {
        (*activity)[name] = Extra(db->get(), name);
      }
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
    Model got;
    auto it = (*db)->NewIterator(ScanOptions());
    ASSERT_TRUE(it.ok());
    for (; (*it)->Valid(); (*it)->Next())
      got[std::string((*it)->key())] = std::string((*it)->value());
    ASSERT_OK((*it)->status());
    ASSERT_TRUE(got == before || got == after)
        << what << ": recovered " << got.size() << " keys; acknowledged state has " << before.size()
        << ", with the in-flight op " << after.size();
    ExpectMatches(db->get(), got, what);
  }
};

TEST_P(HlnCrashTest, PowerLossAtSampledPointsOfEveryPhase) {
  const std::vector<Op> ops = MakeWorkload(77, 150);
  std::vector<std::string> categories;
  std::map<std::string, double> activity;
  {
    TempDir dir;
    auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
    ASSERT_TRUE(inner.ok());
    auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1);
    fb->SetObserver(
        [&](const FaultInjectionBackend::OpInfo& info) { categories.push_back(Category(info)); });
    ASSERT_EQ(RunUntilCrash(dir.path(), fb, ops, &activity), ops.size());
  }
  // The workload must make the structure changes this test is about.
  EXPECT_GT(activity["rebalances_total"], 10);
  EXPECT_GT(activity["splits_total"], 3);
  EXPECT_EQ(activity["tidy_failures_total"], 0);
  // With hash: fnv a sweep of deletes thins every subnode of a leaf at once; subnodes (and so
  // leaves) empty only when nearly everything is gone, which this workload does not reach.
  if (!GetParam().count("hash")) {
    EXPECT_GT(activity["merges_total"], 0);
  }
  if (GetParam().count("stash")) {
    EXPECT_GT(activity["stash_conversions_total"], 0);
  }

  std::map<std::string, std::vector<uint64_t>> by_category;
  for (uint64_t i = 0; i < categories.size(); ++i) by_category[categories[i]].push_back(i);
  for (const char* needed : {"wal", "double-write", "manifest", "data", "superblock"}) {
    ASSERT_FALSE(by_category[needed].empty()) << "the workload never wrote " << needed;
  }
  const bool all = std::getenv("GROVE_CRASH_POINTS") != nullptr &&
                   std::string(std::getenv("GROVE_CRASH_POINTS")) == "all";
  std::vector<std::pair<uint64_t, std::string>> points;
  for (const auto& [cat, idx] : by_category) {
    const size_t want = all ? idx.size() : std::min<size_t>(idx.size(), 5);
    for (size_t j = 0; j < want; ++j) points.push_back({idx[j * idx.size() / want], cat});
  }
  int run = 0;
  for (const auto& [point, cat] : points) {
    for (PowerLoss mode : {PowerLoss::kDropUnsynced, PowerLoss::kTearUnsynced}) {
      TempDir dir;
      auto inner = NewIoBackend({.kind = IoBackendKind::kPsync}, nullptr);
      ASSERT_TRUE(inner.ok());
      auto fb = std::make_shared<FaultInjectionBackend>(*inner, 1000 + run++);
      fb->CrashAfter(point);
      const size_t acked = RunUntilCrash(dir.path(), fb, ops, nullptr);
      ASSERT_OK(fb->SimulatePowerLoss(mode));
      CheckRecovered(dir.path(), ops, acked,
                     "crash at IO #" + std::to_string(point) + " (" + cat + ", " +
                         (mode == PowerLoss::kDropUnsynced ? "drop" : "tear") + ")");
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, HlnCrashTest,
    ::testing::Values(HlnParams{{"leaf_pages", "4"}},
                      HlnParams{{"leaf_pages", "4"}, {"stash", "true"}, {"hash", "fnv"}}),
    [](const ::testing::TestParamInfo<HlnParams>& info) {
      return info.index == 0 ? std::string("plain") : std::string("stash_fnv");
    });

}  // namespace
}  // namespace grove::testing
