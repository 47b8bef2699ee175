// Conformance: versions and conditional writes (Db::Write with WriteOptions) on every variant.
// A key's version is the LSN of the write that set it: it rises with every write, survives
// reopening, and bulk-loaded keys get one below every later write's. Conditions hold or the whole
// write is refused with what the key holds now; concurrent compare-and-swap increments on a few
// hot keys lose no update.

#include <atomic>
#include <thread>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class ConformanceConditionalWriteTest : public ::testing::TestWithParam<VariantCase> {
 protected:
  void SetUp() override {
    options_ = ConformanceOptions(GetParam(), dir_.path());
    Reopen();
  }
  void Reopen() {
    if (db_) ASSERT_OK(db_->Close());
    db_.reset();
    auto db = Db::Open(options_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
  }
  uint64_t VersionOf(const std::string& key) {
    std::string v;
    uint64_t version = 0;
    auto found = db_->GetWithVersion(key, &v, &version);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() && *found ? version : 0;
  }
  Status PutIf(const std::string& key, const std::string& value, WriteCondition c, WriteResult* r) {
    WriteBatch b;
    b.Put(key, value);
    WriteOptions o;
    c.key = key;
    o.conditions.push_back(std::move(c));
    return db_->Write(b, o, r);
  }
  static WriteCondition Absent() { return {}; }
  static WriteCondition ValueIs(std::string v) {
    WriteCondition c;
    c.kind = WriteCondition::Kind::kValueEquals;
    c.value = std::move(v);
    return c;
  }
  static WriteCondition VersionIs(uint64_t v) {
    WriteCondition c;
    c.kind = WriteCondition::Kind::kVersionEquals;
    c.version = v;
    return c;
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Db> db_;
};

TEST_P(ConformanceConditionalWriteTest, VersionsRiseWithEveryWriteAndSurviveReopen) {
  WriteResult r;
  WriteBatch b;
  b.Put("a", "1");
  ASSERT_OK(db_->Write(b, WriteOptions(), &r));
  EXPECT_GT(r.version, 0u);
  EXPECT_EQ(VersionOf("a"), r.version);
  const std::string big(3000, 'b');  // out of line: the blob cell carries the version too
  WriteBatch b2;
  b2.Put("a", "2");
  b2.Put("big", big);
  WriteResult r2;
  ASSERT_OK(db_->Write(b2, WriteOptions(), &r2));
  EXPECT_GT(r2.version, r.version);
  EXPECT_EQ(VersionOf("a"), r2.version);
  EXPECT_EQ(VersionOf("big"), r2.version);
  ASSERT_OK(db_->Put("other", "x"));
  const uint64_t other = VersionOf("other");
  EXPECT_GT(other, r2.version);
  Reopen();
  EXPECT_EQ(VersionOf("a"), r2.version) << "versions are durable (WAL replay gives the same)";
  EXPECT_EQ(VersionOf("big"), r2.version);
  ASSERT_OK(db_->Checkpoint());
  Reopen();
  EXPECT_EQ(VersionOf("other"), other) << "and so are checkpointed ones";
  ASSERT_OK(db_->Put("a", "3"));
  EXPECT_GT(VersionOf("a"), other) << "after a reopen, versions keep rising";
  std::string v;
  EXPECT_EQ(*db_->Get("big", &v), true);
  EXPECT_EQ(v, big);
}

TEST_P(ConformanceConditionalWriteTest, ConditionsHoldOrNothingApplies) {
  WriteResult r;
  ASSERT_OK(PutIf("k", "v1", Absent(), &r));
  const uint64_t v1 = r.version;
  // Absent fails on a present key, and says what it holds.
  WriteResult failed;
  Status s = PutIf("k", "v2", Absent(), &failed);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(failed.failed_condition, 0);
  EXPECT_TRUE(failed.current_found);
  EXPECT_EQ(failed.current_version, v1);
  EXPECT_EQ(failed.current_value, "v1");
  // Compare-and-swap by version.
  failed = WriteResult();
  s = PutIf("k", "v2", VersionIs(v1 + 1000), &failed);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("not " + std::to_string(v1 + 1000)), std::string::npos)
      << s.ToString();
  ASSERT_OK(PutIf("k", "v2", VersionIs(v1), &r));
  EXPECT_GT(r.version, v1);
  // By value, inline and out of line.
  EXPECT_EQ(PutIf("k", "v3", ValueIs("v1"), &failed).code(), StatusCode::kFailedPrecondition);
  const std::string big(5000, 'q');
  ASSERT_OK(PutIf("k", big, ValueIs("v2"), &r));
  ASSERT_OK(PutIf("k", "small", ValueIs(big), &r));
  // A condition on an absent key.
  failed = WriteResult();
  EXPECT_EQ(PutIf("nope", "x", VersionIs(1), &failed).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(failed.current_found);
  EXPECT_EQ(PutIf("nope", "x", ValueIs(""), &failed).code(), StatusCode::kFailedPrecondition);

  // A batch: conditions on a key it writes and on one it does not; one fails, nothing applies.
  WriteBatch b;
  b.Put("k", "batch");
  b.Put("fresh", "batch");
  b.Delete("gone");
  WriteOptions o;
  o.conditions.push_back(ValueIs("small"));
  o.conditions[0].key = "k";
  WriteCondition guard = Absent();
  guard.key = "k";  // fails: k is present
  o.conditions.push_back(guard);
  failed = WriteResult();
  EXPECT_EQ(db_->Write(b, o, &failed).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed.failed_condition, 1);
  std::string v;
  EXPECT_FALSE(*db_->Get("fresh", &v)) << "a refused batch applies nothing";
  ASSERT_TRUE(*db_->Get("k", &v));
  EXPECT_EQ(v, "small");
  o.conditions[1].key = "guard";  // absent: holds
  ASSERT_OK(db_->Write(b, o, &r));
  ASSERT_TRUE(*db_->Get("fresh", &v));
  EXPECT_EQ(VersionOf("fresh"), r.version);
  EXPECT_EQ(VersionOf("k"), r.version);
  // A conditional delete.
  WriteBatch d;
  d.Delete("fresh");
  WriteOptions od;
  od.conditions.push_back(VersionIs(r.version));
  od.conditions[0].key = "fresh";
  ASSERT_OK(db_->Write(d, od, nullptr));
  EXPECT_FALSE(*db_->Get("fresh", &v));
  ExpectVerifyClean(db_.get(), 1, "after the conditional writes");  // k
}

TEST_P(ConformanceConditionalWriteTest, ConcurrentCompareAndSwapLosesNoUpdate) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 150;
  constexpr int kKeys = 2;
  for (int k = 0; k < kKeys; ++k) ASSERT_OK(db_->Put("counter" + std::to_string(k), "0"));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kIncrements && failures.load() == 0; ++n) {
        const std::string key = "counter" + std::to_string((n + t) % kKeys);
        while (true) {
          std::string v;
          uint64_t version = 0;
          auto found = db_->GetWithVersion(key, &v, &version);
          if (!found.ok() || !*found) {
            failures.fetch_add(1);
            return;
          }
          WriteResult r;
          Status s = PutIf(key, std::to_string(std::stoll(v) + 1), VersionIs(version), &r);
          if (s.ok()) break;
          if (s.code() != StatusCode::kFailedPrecondition) {
            ADD_FAILURE() << s.ToString();
            failures.fetch_add(1);
            return;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  int64_t total = 0;
  for (int k = 0; k < kKeys; ++k) {
    std::string v;
    ASSERT_TRUE(*db_->Get("counter" + std::to_string(k), &v));
    total += std::stoll(v);
  }
  EXPECT_EQ(total, kThreads * kIncrements) << "an increment was lost";
}

TEST_P(ConformanceConditionalWriteTest, BulkLoadedKeysHaveAVersionBelowLaterWrites) {
  uint64_t i = 0;
  Status s = db_->BulkLoad([&](std::string* k, std::string* v) -> StatusOr<bool> {
    if (i == 500) return false;
    *k = Key(i);
    *v = i % 50 == 0 ? std::string(2000, 'v') : "v" + std::to_string(i);
    ++i;
    return true;
  });
  if (s.code() == StatusCode::kUnimplemented) GTEST_SKIP() << s.ToString();
  ASSERT_OK(s);
  const uint64_t loaded = VersionOf(Key(7));
  EXPECT_GT(loaded, 0u);
  EXPECT_EQ(VersionOf(Key(50)), loaded) << "one version for the whole load";
  ASSERT_OK(db_->Put(Key(7), "new"));
  EXPECT_GT(VersionOf(Key(7)), loaded);
  Reopen();
  EXPECT_EQ(VersionOf(Key(8)), loaded);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceConditionalWriteTest,
                         ::testing::ValuesIn(ConformanceCases()), CaseName);

}  // namespace
}  // namespace grove::testing
