// Conformance: Db::DeleteRange on every variant. A range is removed in calls of at most `limit`
// keys that say where to continue; the result survives WAL replay and checkpoints; keys outside
// the range stay; readers racing range deletes see a range before or after a call, never part
// of it.

#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "conformance/cases.h"
#include "engine/db_test_util.h"

namespace grove::testing {
namespace {

class ConformanceDeleteRangeTest : public ::testing::TestWithParam<VariantCase> {
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
  static std::string Key(int i) { return fmt::format("dr/{:04}", i); }
  // Puts keys [lo, hi) (into the model too), a batch at a time.
  void PutKeys(int lo, int hi, Model* model) {
    WriteBatch b;
    for (int i = lo; i < hi; ++i) {
      const std::string v = "v" + std::to_string(i) + (i % 37 == 0 ? std::string(2000, 'x') : "");
      b.Put(Key(i), v);
      (*model)[Key(i)] = v;
      if (b.Count() == 20) {
        ASSERT_OK(db_->Write(b));
        b.Clear();
      }
    }
    if (b.Count() > 0) ASSERT_OK(db_->Write(b));
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Db> db_;
};

TEST_P(ConformanceDeleteRangeTest, RemovesTheRangeInCallsThatSayWhereToContinue) {
  Model model;
  PutKeys(0, 400, &model);
  ASSERT_OK(db_->Put("a", "before"));
  ASSERT_OK(db_->Put("z", "after"));
  model["a"] = "before";
  model["z"] = "after";
  // [dr/0100, dr/0300) in calls of 30: six full calls, then 20 with nothing left.
  std::string start = Key(100);
  int calls = 0;
  uint64_t removed = 0, last_version = 0;
  for (;;) {
    DeleteRangeResult r;
    ASSERT_OK(db_->DeleteRange(start, Key(300), 30, &r));
    ++calls;
    removed += r.deleted;
    EXPECT_GT(r.version, last_version);
    last_version = r.version;
    if (!r.more) {
      EXPECT_EQ(r.deleted, 20u);
      EXPECT_TRUE(r.resume_key.empty());
      break;
    }
    EXPECT_EQ(r.deleted, 30u);
    EXPECT_EQ(r.limited_by, "limit");
    EXPECT_EQ(r.resume_key, Key(100 + 30 * calls)) << "the first key left";
    start = r.resume_key;
    ASSERT_LT(calls, 20);
  }
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(removed, 200u);
  for (int i = 100; i < 300; ++i) model.erase(Key(i));
  ExpectMatches(db_.get(), model, "after the range deletes");
  ExpectVerifyClean(db_.get(), model.size(), "after the range deletes");

  // Nothing left: a call removes nothing and writes no record.
  DeleteRangeResult none;
  ASSERT_OK(db_->DeleteRange(Key(100), Key(300), 0, &none));
  EXPECT_EQ(none.deleted, 0u);
  EXPECT_EQ(none.version, 0u);
  EXPECT_FALSE(none.more);

  Reopen();  // the records replayed
  ExpectMatches(db_.get(), model, "after replaying the range deletes");
  ASSERT_OK(db_->Checkpoint());
  Reopen();
  ExpectMatches(db_.get(), model, "after a checkpoint");

  // Unbounded on either side, up to the configured most per call.
  DeleteRangeResult r;
  ASSERT_OK(db_->DeleteRange("", Key(50), 0, &r));
  EXPECT_EQ(r.deleted, 51u) << "\"a\" and dr/0000..dr/0049";
  EXPECT_FALSE(r.more);
  ASSERT_OK(db_->DeleteRange(Key(350), "", 0, &r));
  EXPECT_EQ(r.deleted, 51u) << "dr/0350..dr/0399 and \"z\"";
  model.erase(model.begin(), model.find(Key(50)));
  model.erase(model.find(Key(350)), model.end());
  ExpectMatches(db_.get(), model, "after unbounded range deletes");
  ExpectVerifyClean(db_.get(), model.size(), "after unbounded range deletes");
}

TEST_P(ConformanceDeleteRangeTest, TheConfiguredLimitIsNamedAndBadRangesAreRefused) {
  options_.max_batch_entries = 40;
  Reopen();
  Model model;
  PutKeys(0, 100, &model);
  DeleteRangeResult r;
  ASSERT_OK(db_->DeleteRange(Key(0), Key(100), 1000, &r));
  EXPECT_EQ(r.deleted, 40u);
  EXPECT_TRUE(r.more);
  EXPECT_EQ(r.limited_by, "limits.max_batch_entries");
  EXPECT_EQ(r.resume_key, Key(40));

  EXPECT_EQ(db_->DeleteRange(Key(9), Key(1), 0, &r).code(), StatusCode::kInvalidArgument);
  const std::string too_long(options_.max_key_bytes + 2, 'k');
  Status s = db_->DeleteRange(too_long, "", 0, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("start"), std::string_view::npos) << s.ToString();
  ASSERT_OK(db_->DeleteRange(Key(60), Key(60), 0, &r));  // empty
  EXPECT_EQ(r.deleted, 0u);
  for (int i = 0; i < 40; ++i) model.erase(Key(i));
  ExpectMatches(db_.get(), model, "after refused range deletes");
}

// Readers of the whole range (BatchGet) race calls that remove all of it and batches that put
// it back: every read sees all of the range's keys or none of them.
TEST_P(ConformanceDeleteRangeTest, ReadersSeeACallWholeOrNotAtAll) {
  const int keys =
      static_cast<int>(std::min<uint64_t>(20, BatchEntriesThatFit(GetParam(), options_)));
  if (keys < 2) GTEST_SKIP() << "batches of this case hold too few entries";
  std::vector<std::string> names;
  for (int i = 0; i < keys; ++i) names.push_back(Key(i));
  const std::vector<Slice> slices(names.begin(), names.end());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<uint64_t> reads{0};
  std::thread reader([&] {
    std::vector<std::optional<std::string>> values;
    while (!done.load() && failures.load() == 0) {
      Status s = db_->BatchGet(slices, &values);
      if (!s.ok()) {
        ADD_FAILURE() << s.ToString();
        failures.fetch_add(1);
        return;
      }
      reads.fetch_add(1);
      for (int i = 1; i < keys; ++i) {
        if (values[i].has_value() != values[0].has_value()) {
          ADD_FAILURE() << "saw part of the range: " << names[0] << " "
                        << (values[0] ? "present" : "absent") << ", " << names[i] << " "
                        << (values[i] ? "present" : "absent");
          failures.fetch_add(1);
          return;
        }
      }
    }
  });
  for (int round = 0; round < 200 && failures.load() == 0; ++round) {
    WriteBatch b;
    for (const std::string& k : names) b.Put(k, "round" + std::to_string(round));
    ASSERT_OK(db_->Write(b));
    DeleteRangeResult r;
    ASSERT_OK(db_->DeleteRange(Key(0), Key(keys), 0, &r));
    ASSERT_EQ(r.deleted, static_cast<uint64_t>(keys));
  }
  while (reads.load() < 50 && failures.load() == 0) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  ExpectVerifyClean(db_.get(), 0, "after the races");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConformanceDeleteRangeTest, ::testing::ValuesIn(ConformanceCases()),
                         CaseName);

}  // namespace
}  // namespace grove::testing
