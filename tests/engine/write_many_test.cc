// Db::WriteMany: each write succeeds or fails on its own, writes of one key apply in call order,
// writes on distinct keys share one log sync, and every acknowledged write survives a reopen.

#include <string>
#include <vector>

#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class WriteManyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = SmallOptions(dir_.path());
    options_.wal.sync = SyncMode::kAlways;
    options_.checkpoint.interval_seconds = 0;
    // Room for every group below in a quarter of the write room (groups are cut there).
    options_.cache_bytes = 32 << 20;
    Reopen();
  }
  void Reopen() {
    db_.reset();
    auto db = Db::Open(options_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }
  std::string Get(const std::string& key) {
    std::string value;
    StatusOr<bool> found = db_->Get(key, &value);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() && *found ? value : "<absent>";
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Db> db_;
};

TEST_F(WriteManyTest, DistinctKeysShareOneSync) {
  constexpr int kWrites = 24;
  std::vector<WriteBatch> batches(kWrites);
  std::vector<WriteResult> results(kWrites);
  std::vector<WriteRequest> writes(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    if (i % 3 == 2) {
      batches[i].Put(Key(i), Value(i, 1));
      batches[i].Put(Key(1000 + i), Value(1000 + i, 1));  // a batch of two keys
    } else {
      batches[i].Put(Key(i), Value(i, 1));
    }
    writes[i] = {&batches[i], nullptr, &results[i], {}};
  }
  const WalStats before = db_->GetStats().wal;
  db_->WriteMany(writes);
  const WalStats after = db_->GetStats().wal;
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_OK(writes[i].status);
    if (i > 0) EXPECT_EQ(results[i].version, results[i - 1].version + 1);
  }
  EXPECT_EQ(after.records - before.records, static_cast<uint64_t>(kWrites));
  EXPECT_EQ(after.syncs - before.syncs, 1u);

  Reopen();
  for (int i = 0; i < kWrites; ++i) {
    EXPECT_EQ(Get(Key(i)), Value(i, 1));
    if (i % 3 == 2) EXPECT_EQ(Get(Key(1000 + i)), Value(1000 + i, 1));
  }
}

// A write on a key an earlier write of the call touched sees it: a condition on the value the
// earlier write set holds, and the later value wins.
TEST_F(WriteManyTest, WritesOfOneKeyApplyInCallOrder) {
  WriteBatch first, second, third, other;
  first.Put("k", "v1");
  other.Put("other", "o");
  second.Put("k", "v2");
  third.Delete("k");
  WriteOptions if_v2;
  if_v2.conditions.push_back(
      {.key = "k", .kind = WriteCondition::Kind::kValueEquals, .value = "v2"});
  std::vector<WriteResult> results(4);
  std::vector<WriteRequest> writes = {{&first, nullptr, &results[0], {}},
                                      {&other, nullptr, &results[1], {}},
                                      {&second, nullptr, &results[2], {}},
                                      {&third, &if_v2, &results[3], {}}};
  const WalStats before = db_->GetStats().wal;
  db_->WriteMany(writes);
  for (const WriteRequest& w : writes) ASSERT_OK(w.status);
  EXPECT_LT(results[0].version, results[2].version);
  EXPECT_LT(results[2].version, results[3].version);
  EXPECT_EQ(Get("k"), "<absent>");
  EXPECT_EQ(Get("other"), "o");
  // Three groups: {first, other}, {second}, {third}.
  EXPECT_EQ(db_->GetStats().wal.syncs - before.syncs, 3u);
}

// A failing write (bad key, failed condition, over a limit) fails alone; the others apply.
TEST_F(WriteManyTest, EachWriteFailsOnItsOwn) {
  ASSERT_OK(db_->Put("held", "old"));
  WriteBatch good1, bad_key, conditional, good2, too_many, only_condition;
  good1.Put("a", "1");
  bad_key.Put("", "x");
  conditional.Put("held", "new");
  good2.Put("b", "2");
  for (uint32_t i = 0; i <= options_.max_batch_entries; ++i) too_many.Put(Key(i), "v");
  WriteOptions if_absent;
  if_absent.conditions.push_back({.key = "held", .kind = WriteCondition::Kind::kAbsent});
  WriteOptions if_held;
  if_held.conditions.push_back(
      {.key = "held", .kind = WriteCondition::Kind::kValueEquals, .value = "old"});
  std::vector<WriteResult> results(6);
  std::vector<WriteRequest> writes = {
      {&good1, nullptr, &results[0], {}},          {&bad_key, nullptr, &results[1], {}},
      {&conditional, &if_absent, &results[2], {}}, {&good2, nullptr, &results[3], {}},
      {&too_many, nullptr, &results[4], {}},       {&only_condition, &if_held, &results[5], {}}};
  db_->WriteMany(writes);
  ASSERT_OK(writes[0].status);
  EXPECT_EQ(writes[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writes[2].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(results[2].failed_condition, 0);
  EXPECT_TRUE(results[2].current_found);
  EXPECT_EQ(results[2].current_value, "old");
  ASSERT_OK(writes[3].status);
  EXPECT_EQ(writes[4].status.code(), StatusCode::kResourceExhausted);
  ASSERT_OK(writes[5].status);  // conditions only: checked, nothing logged
  EXPECT_EQ(Get("a"), "1");
  EXPECT_EQ(Get("b"), "2");
  EXPECT_EQ(Get("held"), "old");
  EXPECT_EQ(Get(Key(0)), "<absent>");
}

// A batch too large to apply at once (stepwise) runs alone between the groups around it.
TEST_F(WriteManyTest, LargeBatchesRunAlone) {
  options_.cache_bytes = 1 << 20;
  options_.wal.sync = SyncMode::kNone;
  Reopen();
  WriteBatch before, large, after;
  before.Put("before", "b");
  for (int i = 0; i < 2000; ++i) large.Put(Key(i), Value(i, 1, 200));
  after.Put("after", "a");
  std::vector<WriteRequest> writes = {{&before, nullptr, nullptr, {}},
                                      {&large, nullptr, nullptr, {}},
                                      {&after, nullptr, nullptr, {}}};
  db_->WriteMany(writes);
  for (const WriteRequest& w : writes) ASSERT_OK(w.status);
  EXPECT_EQ(Get("before"), "b");
  EXPECT_EQ(Get("after"), "a");
  for (int i = 0; i < 2000; i += 97) EXPECT_EQ(Get(Key(i)), Value(i, 1, 200));
  Reopen();
  for (int i = 0; i < 2000; i += 97) EXPECT_EQ(Get(Key(i)), Value(i, 1, 200));
}

}  // namespace
}  // namespace grove::testing
