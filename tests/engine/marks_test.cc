// Marks (Db::GetMark, WriteBatch::SetMark): named values outside the key space that change with
// a batch's keys, atomically, and come back from the log and from checkpoints after a crash.

#include <memory>
#include <string>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

std::string MarkOf(Db* db, const std::string& name) {
  std::string value;
  StatusOr<bool> found = db->GetMark(name, &value);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  return found.ok() && *found ? value : "<unset>";
}

bool Has(Db* db, const std::string& key) {
  std::string value;
  StatusOr<bool> found = db->Get(key, &value);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  return found.ok() && *found;
}

// A write of key i that records i in the mark "applied", as a replicated range records the Raft
// index it applied.
Status WriteStep(Db* db, uint64_t i) {
  WriteBatch b;
  b.Put(Key(i), Value(i, 0));
  b.SetMark("applied", std::to_string(i));
  return db->Write(b);
}

TEST(MarksTest, ASetMarkReadsBackAnEmptyValueRemovesItAndKeysAreApart) {
  TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  EXPECT_EQ(MarkOf(db->get(), "m"), "<unset>");

  WriteBatch b;
  b.Put("m", "key value");
  b.SetMark("m", "mark value");
  EXPECT_EQ(b.Count(), 1u);
  EXPECT_EQ(b.MarkCount(), 1u);
  ASSERT_OK((*db)->Write(b));
  EXPECT_EQ(MarkOf(db->get(), "m"), "mark value");
  std::string value;
  ASSERT_OK((*db)->Get("m", &value).status());
  EXPECT_EQ(value, "key value");

  // A batch of marks alone is a write too.
  WriteBatch only;
  only.SetMark("m", "second");
  only.SetMark("n", "other");
  ASSERT_OK((*db)->Write(only));
  EXPECT_EQ(MarkOf(db->get(), "m"), "second");
  EXPECT_EQ(MarkOf(db->get(), "n"), "other");

  WriteBatch remove;
  remove.SetMark("m", "");
  ASSERT_OK((*db)->Write(remove));
  EXPECT_EQ(MarkOf(db->get(), "m"), "<unset>");

  // Marks are not keys: a scan shows the one key only, and the index counts one entry.
  auto it = (*db)->NewIterator(ScanOptions());
  ASSERT_OK(it.status());
  int n = 0;
  for (; (*it)->Valid(); (*it)->Next()) ++n;
  EXPECT_EQ(n, 1);
  it->reset();
  EXPECT_EQ((*db)->GetStats().index.entries, 1u);
}

TEST(MarksTest, ABadMarkFailsTheWholeBatchNamingIt) {
  TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  struct Case {
    std::string name, value, field;
  };
  const Case cases[] = {
      {"", "v", "marks[1].name"},
      {std::string(WriteBatch::kMaxMarkNameBytes + 1, 'n'), "v", "marks[1].name"},
      {"n", std::string(WriteBatch::kMaxMarkValueBytes + 1, 'v'), "marks[1].value"},
  };
  for (const Case& c : cases) {
    WriteBatch b;
    b.Put("k", "v");
    b.SetMark("fine", "1");
    b.SetMark(c.name, c.value);
    Status s = (*db)->Write(b);
    EXPECT_TRUE(s.code() == StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.ToString();
    EXPECT_FALSE(Has(db->get(), "k"));
    EXPECT_EQ(MarkOf(db->get(), "fine"), "<unset>");
  }
  // The largest allowed sizes are accepted.
  WriteBatch b;
  b.SetMark(std::string(WriteBatch::kMaxMarkNameBytes, 'n'),
            std::string(WriteBatch::kMaxMarkValueBytes, 'v'));
  EXPECT_OK((*db)->Write(b));
}

TEST(MarksTest, TheEncodingCarriesMarksAndDecodeRefusesATruncatedOne) {
  WriteBatch b;
  b.Put("a", "1");
  b.SetMark("applied", "7");
  b.Delete("b");
  auto decoded = WriteBatch::Decode(b.Encoded());
  ASSERT_OK(decoded.status());
  EXPECT_EQ(decoded->Count(), 2u);
  EXPECT_EQ(decoded->MarkCount(), 1u);
  EXPECT_EQ(decoded->Encoded(), b.Encoded());
  std::string keys;
  ASSERT_OK(decoded->ForEach([&](WriteBatch::OpType, Slice key, Slice) {
    keys += std::string(key);
    return Status::Ok();
  }));
  EXPECT_EQ(keys, "ab");
  std::string marks;
  ASSERT_OK(decoded->ForEachMark([&](Slice name, Slice value) {
    marks += std::string(name) + "=" + std::string(value);
    return Status::Ok();
  }));
  EXPECT_EQ(marks, "applied=7");

  std::string cut(b.Encoded().substr(0, b.Encoded().size() - 3));
  EXPECT_TRUE(WriteBatch::Decode(cut).status().IsDataLoss());
}

// kill -9 between checkpoints: the log brings every mark back, with its keys.
TEST(MarksTest, MarksComeBackFromTheLogAfterAKill) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 1);
  Options o = SmallOptions(dir.path());
  o.io_backend = fb;
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    for (uint64_t i = 1; i <= 300; ++i) ASSERT_OK(WriteStep(db->get(), i));
    fb->CrashAfter(0);
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kKeepUnsynced));
  o.io_backend = Psync();
  auto db = Db::Open(o);
  ASSERT_OK(db.status());
  EXPECT_EQ(MarkOf(db->get(), "applied"), "300");
  EXPECT_TRUE(Has(db->get(), Key(300)));
}

// A power loss with the log unsynced (wal.sync: none) loses a tail of writes, and the mark keeps
// step with the keys: it names exactly the last write that survived.
TEST(MarksTest, APowerLossKeepsTheMarkInStepWithItsKeys) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 7);
  Options o = SmallOptions(dir.path());
  o.io_backend = fb;
  constexpr uint64_t kSynced = 200, kWritten = 500;
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    for (uint64_t i = 1; i <= kSynced; ++i) ASSERT_OK(WriteStep(db->get(), i));
    ASSERT_OK((*db)->SyncWal());
    for (uint64_t i = kSynced + 1; i <= kWritten; ++i) ASSERT_OK(WriteStep(db->get(), i));
    fb->CrashAfter(0);
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kDropUnsynced));
  o.io_backend = Psync();
  auto db = Db::Open(o);
  ASSERT_OK(db.status());
  const uint64_t applied = std::stoull(MarkOf(db->get(), "applied"));
  EXPECT_GE(applied, kSynced);
  EXPECT_LE(applied, kWritten);
  for (uint64_t i = 1; i <= kWritten; ++i) {
    EXPECT_EQ(Has(db->get(), Key(i)), i <= applied) << "key " << i << ", mark " << applied;
  }
}

// Marks set before a checkpoint come back from its manifest (the log before it is gone), and
// records after it move them on.
TEST(MarksTest, MarksComeBackFromACheckpointAndTheLogAfterIt) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
  Options o = SmallOptions(dir.path());
  o.io_backend = fb;
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    for (uint64_t i = 1; i <= 100; ++i) ASSERT_OK(WriteStep(db->get(), i));
    WriteBatch b;
    b.SetMark("set-once", "before the checkpoint");
    b.SetMark("removed", "x");
    ASSERT_OK((*db)->Write(b));
    WriteBatch r;
    r.SetMark("removed", "");
    ASSERT_OK((*db)->Write(r));
    ASSERT_OK((*db)->Checkpoint());
    ASSERT_OK((*db)->Checkpoint());  // a second: the first one's redo point is behind it
    for (uint64_t i = 101; i <= 120; ++i) ASSERT_OK(WriteStep(db->get(), i));
    fb->CrashAfter(0);
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kKeepUnsynced));
  o.io_backend = Psync();
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    EXPECT_EQ(MarkOf(db->get(), "applied"), "120");
    EXPECT_EQ(MarkOf(db->get(), "set-once"), "before the checkpoint");
    EXPECT_EQ(MarkOf(db->get(), "removed"), "<unset>");
    ASSERT_OK((*db)->Close());
  }
  // After a clean close the log holds nothing to replay: the manifest alone has them.
  auto db = Db::Open(o);
  ASSERT_OK(db.status());
  EXPECT_EQ((*db)->GetStats().recovery_replayed_records, 0u);
  EXPECT_EQ(MarkOf(db->get(), "applied"), "120");
  EXPECT_EQ(MarkOf(db->get(), "set-once"), "before the checkpoint");
}

}  // namespace
}  // namespace grove::testing
