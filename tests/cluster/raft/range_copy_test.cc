// RangeCopier: the copy is the range as of its cut however writes interleave with it: keys
// overwritten, deleted or created ahead of the copy, and keys it has passed, written between
// the keys it hands over; keys outside the range are not copied.

#include "cluster/raft/range_copy.h"

#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/db_test_util.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::raft {
namespace {

using grove::testing::Key;
using grove::testing::SmallOptions;

struct Copied {
  std::string value;
  uint64_t expires_ms = 0;
  uint64_t version = 0;
  bool operator==(const Copied&) const = default;
};

std::map<std::string, Copied> Contents(Db* db, const std::string& start, const std::string& end) {
  std::map<std::string, Copied> out;
  ScanOptions scan;
  scan.lower = start;
  scan.upper = end;
  scan.has_upper = !end.empty();
  auto it = db->NewIterator(scan);
  EXPECT_OK(it.status());
  for (; (*it)->Valid(); (*it)->Next()) {
    out[std::string((*it)->key())] = {std::string((*it)->value()), (*it)->expires_ms(),
                                      (*it)->version()};
  }
  EXPECT_OK((*it)->status());
  return out;
}

// A writer that saves each key with the copier before it changes it, as a replica's apply does.
Status WriteThrough(Db* db, RangeCopier* copier, const WriteBatch& batch) {
  std::vector<Slice> keys;
  GROVE_RETURN_IF_ERROR(batch.ForEachOp([&](const WriteBatch::Op& op) {
    keys.push_back(op.key);
    return Status::Ok();
  }));
  GROVE_RETURN_IF_ERROR(copier->Preserve(keys));
  return db->Write(batch);
}

TEST(RangeCopierTest, TheCopyIsTheRangeAsOfItsCutWhateverIsWrittenDuringIt) {
  grove::testing::TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  // Keys 0..399 (even ones only, with some expiring far ahead); the range is [Key(40), Key(360)).
  WriteBatch load;
  for (int k = 0; k < 400; k += 2) {
    if (k % 6 == 0) {
      load.PutExpiring(Key(k), "v" + std::to_string(k), 4'000'000'000'000ull);
    } else {
      load.Put(Key(k), "v" + std::to_string(k));
    }
  }
  ASSERT_OK((*db)->Write(load));
  const std::string start = Key(40), end = Key(360);
  const auto at_cut = Contents(db->get(), start, end);

  RangeCopier copier(db->get(), start, end);
  ASSERT_OK(copier.Begin());
  EXPECT_EQ(copier.Begin().code(), StatusCode::kFailedPrecondition);
  std::mt19937_64 rng(7);
  std::map<std::string, Copied> copy;
  std::string last;
  ASSERT_OK(copier.Run([&](const CopiedKey& e) -> Status {
    EXPECT_GT(std::string(e.key), last) << "keys in order, once";
    last.assign(e.key);
    EXPECT_NE(e.version, 0u);
    copy[std::string(e.key)] = {std::string(e.value), e.expires_ms, e.version};
    // Between two keys handed over: overwrite, delete and create keys anywhere (ahead of the
    // copy, behind it, outside the range), several times each.
    for (int n = 0; n < 3; ++n) {
      const int k = static_cast<int>(rng() % 420);
      WriteBatch b;
      switch (rng() % 3) {
        case 0:
          b.Put(Key(k), "new" + std::to_string(rng() % 1000));
          break;
        case 1:
          b.Delete(Key(k));
          break;
        default:
          b.PutExpiring(Key(k), "exp", 4'100'000'000'000ull);
      }
      EXPECT_OK(WriteThrough(db->get(), &copier, b));
    }
    return Status::Ok();
  }));
  copier.End();
  EXPECT_EQ(copy, at_cut);
  EXPECT_NE(Contents(db->get(), start, end), at_cut) << "the writes changed the range";
}

TEST(RangeCopierTest, WritesBeforeBeginAndAfterEndAreOrdinaryAndASinkErrorStopsTheCopy) {
  grove::testing::TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  RangeCopier copier(db->get(), "", "");
  WriteBatch b;
  b.Put("a", "1");
  ASSERT_OK(WriteThrough(db->get(), &copier, b));  // no copy running: nothing saved
  b.Clear();
  b.Put("b", "2");
  ASSERT_OK(WriteThrough(db->get(), &copier, b));
  ASSERT_OK(copier.Begin());
  int calls = 0;
  Status s = copier.Run([&](const CopiedKey&) -> Status {
    ++calls;
    return Status::Aborted("the receiver went away");
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(calls, 1);
  copier.End();
  EXPECT_FALSE(copier.active());
  ASSERT_OK(copier.Begin());
  std::string keys;
  ASSERT_OK(copier.Run([&](const CopiedKey& e) {
    keys += std::string(e.key);
    return Status::Ok();
  }));
  copier.End();
  EXPECT_EQ(keys, "ab");
}

}  // namespace
}  // namespace grove::raft
