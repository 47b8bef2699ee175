// Conformance: values with an expiry (WriteBatch::PutExpiring) on every variant. An expired key
// reads as absent at once (Get, BatchGet, scans both ways, preconditions); its expiry survives
// replay and checkpoints; the background sweep removes expired keys, but never one written
// again since.

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"
#include "util/clock.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

class ConformanceExpiryTest : public ::testing::TestWithParam<VariantCase> {
 protected:
  void SetUp() override {
    options_ = ConformanceOptions(GetParam(), dir_.path());
    options_.expiry.sweep_interval_seconds = 0;  // sweeps only where a test asks for them
    Reopen();
  }
  void Reopen() {
    if (db_) ASSERT_OK(db_->Close());
    db_.reset();
    auto db = Db::Open(options_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }
  void PutExpiring(const std::string& key, const std::string& value, uint64_t expires_ms) {
    WriteBatch b;
    b.PutExpiring(key, value, expires_ms);
    ASSERT_OK(db_->Write(b));
  }
  bool Present(const std::string& key) {
    std::string v;
    auto found = db_->Get(key, &v);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() && *found;
  }
  static void SleepUntil(uint64_t unix_ms) {
    while (NowUnixMillis() <= unix_ms) std::this_thread::sleep_for(5ms);
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Db> db_;
};

TEST_P(ConformanceExpiryTest, AnExpiredKeyReadsAsAbsentEverywhereAtOnce) {
  const uint64_t soon = NowUnixMillis() + 400;
  const uint64_t later = NowUnixMillis() + 3600 * 1000;
  PutExpiring("e/1", "short", soon);
  PutExpiring("e/2", std::string(3000, 'b'), soon);  // out of line
  PutExpiring("e/3", "long", later);
  ASSERT_OK(db_->Put("e/4", "forever"));
  ValueMeta meta;
  std::string v;
  ASSERT_TRUE(*db_->GetWithMeta("e/3", &v, &meta));
  EXPECT_EQ(meta.expires_ms, later);
  EXPECT_GT(meta.version, 0u);
  ASSERT_TRUE(*db_->GetWithMeta("e/4", &v, &meta));
  EXPECT_EQ(meta.expires_ms, 0u);
  if (NowUnixMillis() < soon) {  // a slow machine may already be past it
    EXPECT_TRUE(Present("e/1"));
    EXPECT_TRUE(Present("e/2"));
  }
  SleepUntil(soon);
  EXPECT_FALSE(Present("e/1"));
  EXPECT_FALSE(Present("e/2"));
  EXPECT_TRUE(Present("e/3"));
  std::vector<std::optional<std::string>> values;
  ASSERT_OK(db_->BatchGet({"e/1", "e/2", "e/3", "e/4"}, &values));
  EXPECT_FALSE(values[0].has_value());
  EXPECT_FALSE(values[1].has_value());
  EXPECT_EQ(values[2], std::optional<std::string>("long"));
  EXPECT_EQ(values[3], std::optional<std::string>("forever"));
  const Model expected = {{"e/3", "long"}, {"e/4", "forever"}};
  ExpectMatches(db_.get(), expected, "after the expiry");
  ScanOptions keys_only;
  keys_only.keys_only = true;
  auto it = db_->NewIterator(keys_only);
  ASSERT_TRUE(it.ok());
  std::vector<std::string> seen;
  for (; (*it)->Valid(); (*it)->Next()) seen.emplace_back((*it)->key());
  EXPECT_EQ(seen, (std::vector<std::string>{"e/3", "e/4"})) << "keys-only scans skip them too";
  EXPECT_GE(db_->GetStats().expiry.expired_reads, 2u);

  // A condition sees an expired key as absent.
  WriteBatch b;
  b.Put("e/1", "again");
  WriteOptions o;
  o.conditions.push_back(WriteCondition{"e/1", WriteCondition::Kind::kAbsent, "", 0});
  ASSERT_OK(db_->Write(b, o, nullptr));
  EXPECT_TRUE(Present("e/1"));
  ExpectVerifyClean(db_.get(), 4, "expired keys stay until the sweep removes them");
}

TEST_P(ConformanceExpiryTest, ExpirySurvivesReplayAndCheckpoints) {
  const uint64_t soon = NowUnixMillis() + 1500;
  PutExpiring("r/1", "replayed", soon);
  Reopen();
  ValueMeta meta;
  std::string v;
  if (NowUnixMillis() < soon) {
    ASSERT_TRUE(*db_->GetWithMeta("r/1", &v, &meta));
    EXPECT_EQ(meta.expires_ms, soon) << "the expiry is in the log record";
  }
  PutExpiring("r/2", "checkpointed", soon);
  ASSERT_OK(db_->Checkpoint());
  Reopen();
  if (NowUnixMillis() < soon) {
    ASSERT_TRUE(*db_->GetWithMeta("r/2", &v, &meta));
    EXPECT_EQ(meta.expires_ms, soon) << "and in the checkpointed cell";
  }
  SleepUntil(soon);
  EXPECT_FALSE(Present("r/1"));
  EXPECT_FALSE(Present("r/2"));
  Reopen();
  EXPECT_FALSE(Present("r/1"));
  EXPECT_FALSE(Present("r/2"));
}

TEST_P(ConformanceExpiryTest, TheSweepRemovesExpiredKeysButNotOnesWrittenAgain) {
  options_.expiry.sweep_interval_seconds = 0.05;
  Reopen();
  const uint64_t soon = NowUnixMillis() + 300;
  Model model;
  WriteBatch b;
  for (int i = 0; i < 300; ++i) {
    const std::string key = fmt::format("s/{:04}", i);
    if (i % 4 == 0) {
      b.Put(key, "stays");
      model[key] = "stays";
    } else {
      b.PutExpiring(key, i % 9 == 0 ? std::string(2500, 'x') : "goes", soon);
    }
    if (b.Count() == 50) {
      ASSERT_OK(db_->Write(b));
      b.Clear();
    }
  }
  // Written again before it expires, without an expiry: the sweep must leave it.
  ASSERT_OK(db_->Put("s/0001", "rewritten"));
  model["s/0001"] = "rewritten";
  SleepUntil(soon);
  const uint64_t expect_removed = 300 - 75 - 1;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (db_->GetStats().expiry.keys_removed < expect_removed &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  DbStats stats = db_->GetStats();
  EXPECT_EQ(stats.expiry.keys_removed, expect_removed);
  ExpectMatches(db_.get(), model, "after the sweep");
  ExpectVerifyClean(db_.get(), model.size(), "after the sweep: the space is reclaimed");
  // A sweep that finds nothing with an expiry stops the sweeps, across a reopen too.
  while (db_->GetStats().expiry.may_hold_expiring && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(db_->GetStats().expiry.may_hold_expiring);
  ASSERT_OK(db_->Checkpoint());
  Reopen();
  // Variants that hold writes in memory replay the expiring puts at opening, which sets the flag
  // again until the sweep at opening finds nothing.
  const auto reopened = std::chrono::steady_clock::now() + 60s;
  while (db_->GetStats().expiry.may_hold_expiring && std::chrono::steady_clock::now() < reopened) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(db_->GetStats().expiry.may_hold_expiring);
  EXPECT_EQ(db_->GetStats().expiry.keys_removed, 0u) << "nothing left to remove";
  ExpectMatches(db_.get(), model, "after reopening");
}

TEST_P(ConformanceExpiryTest, AReopenedDatabaseSweepsWhatExpiredWhileItWasClosed) {
  const uint64_t soon = NowUnixMillis() + 200;
  PutExpiring("c/1", "a", soon);
  PutExpiring("c/2", "b", soon);
  ASSERT_OK(db_->Put("c/3", "c"));
  ASSERT_OK(db_->Checkpoint());  // the manifest says that expiring values may be present
  ASSERT_OK(db_->Close());
  db_.reset();
  SleepUntil(soon);
  options_.expiry.sweep_interval_seconds = 3600;  // only the sweep at opening can remove them
  Reopen();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (db_->GetStats().expiry.keys_removed < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(db_->GetStats().expiry.keys_removed, 2u);
  ExpectVerifyClean(db_.get(), 1, "after the sweep at opening");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceExpiryTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
