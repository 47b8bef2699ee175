// ReplayReader: recovery reads a window of records ahead, then applies it in log order.

#include "engine/replay_reader.h"

#include <atomic>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/mutex.h"

namespace grove {
namespace {

// Records the keys looked up; everything else is unused by the reader.
class PreparedKeys final : public Index {
 public:
  StatusOr<bool> Get(Slice key, std::string*) override {
    MutexLock lock(&mu_);
    prepared_.insert(std::string(key));
    if (fail_) return Status::DataLoss("unreadable page");
    return false;
  }
  Status Prepare(Slice) override {
    ADD_FAILURE() << "read-ahead must not go through Prepare (admission control in some variants)";
    return Status::Ok();
  }
  Status Put(const WriteContext&, Slice, Slice, std::optional<std::string>*) override {
    return Status::Ok();
  }
  Status Delete(const WriteContext&, Slice, std::optional<std::string>*) override {
    return Status::Ok();
  }
  StatusOr<std::unique_ptr<IndexCursor>> NewCursor(const CursorOptions&) override {
    return Status::Unimplemented("test index");
  }
  Status BulkLoad(const BulkSource&) override { return Status::Unimplemented("test index"); }
  std::string SerializeMetadata() override { return ""; }
  Status Verify(IndexVerifier*) override { return Status::Ok(); }
  IndexStats GetStats() override { return {}; }

  bool WasPrepared(const std::string& key) {
    MutexLock lock(&mu_);
    return prepared_.count(key) > 0;
  }
  void set_fail(bool fail) { fail_ = fail; }

 private:
  Mutex mu_;
  std::set<std::string> prepared_ GROVE_GUARDED_BY(mu_);
  std::atomic<bool> fail_{false};
};

WriteBatch OneKey(const std::string& key) {
  WriteBatch b;
  b.Put(key, "v");
  return b;
}

TEST(ReplayReaderTest, AppliesInLogOrderAfterReadingTheWindowAhead) {
  PreparedKeys index;
  ReplayReader reader(&index, /*cache_pages=*/8 * 100);  // a window of 100 keys
  std::vector<Lsn> applied;
  const auto apply = [&](Lsn lsn, const WriteBatch& batch) -> Status {
    // Every key of the window was read ahead before the first of its records is applied.
    return batch.ForEach([&](WriteBatch::OpType, Slice key, Slice) {
      EXPECT_TRUE(index.WasPrepared(std::string(key))) << "LSN " << lsn;
      applied.push_back(lsn);
      return Status::Ok();
    });
  };
  for (Lsn lsn = 1; lsn <= 250; ++lsn) {
    ASSERT_TRUE(reader.Add(lsn, OneKey("k" + std::to_string(lsn)), apply).ok());
  }
  EXPECT_EQ(applied.size(), 200u) << "two full windows applied, the rest queued";
  ASSERT_TRUE(reader.Drain(apply).ok());
  ASSERT_EQ(applied.size(), 250u);
  for (size_t i = 0; i < applied.size(); ++i) EXPECT_EQ(applied[i], i + 1);
}

TEST(ReplayReaderTest, AFailedReadAheadIsLeftToTheApplyThatReadsTheSamePage) {
  PreparedKeys index;
  index.set_fail(true);
  ReplayReader reader(&index, 8 * 4);
  int applied = 0;
  const auto apply = [&](Lsn lsn, const WriteBatch&) -> Status {
    if (lsn == 3) return Status::DataLoss("unreadable page at LSN 3");
    ++applied;
    return Status::Ok();
  };
  Status s;
  for (Lsn lsn = 1; lsn <= 4 && s.ok(); ++lsn) s = reader.Add(lsn, OneKey("k"), apply);
  EXPECT_TRUE(s.IsDataLoss()) << s.ToString();
  EXPECT_EQ(applied, 2) << "records before the failing one were applied, in order";
}

TEST(ReplayReaderTest, ASmallCacheReadsAheadOneRecordAtATime) {
  PreparedKeys index;
  ReplayReader reader(&index, /*cache_pages=*/3);
  int applied = 0;
  const auto apply = [&](Lsn, const WriteBatch&) -> Status {
    ++applied;
    return Status::Ok();
  };
  ASSERT_TRUE(reader.Add(1, OneKey("a"), apply).ok());
  EXPECT_EQ(applied, 1);
}

}  // namespace
}  // namespace grove
