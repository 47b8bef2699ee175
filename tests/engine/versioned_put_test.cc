// Versioned puts (WriteBatch::PutVersioned): the key carries the version the put names instead of
// the record's LSN, with or without an expiry, through the log after a kill, through checkpoints,
// in iterators and in compare-and-set conditions; a version of 0 is refused.

#include <memory>
#include <string>
#include <vector>

#include "engine/db_test_util.h"
#include "io/fault_backend.h"

namespace grove::testing {
namespace {

using PowerLoss = FaultInjectionBackend::PowerLoss;

constexpr uint64_t kBig = (uint64_t{7} << 42) | 12;  // as a replicated range's entry 12 of group 7

uint64_t VersionOf(Db* db, const std::string& key) {
  std::string value;
  uint64_t version = 0;
  StatusOr<bool> found = db->GetWithVersion(key, &value, &version);
  EXPECT_TRUE(found.ok() && *found) << key;
  return version;
}

TEST(VersionedPutTest, TheKeyCarriesTheNamedVersionAndAnOrdinaryPutTheLsn) {
  TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  WriteBatch b;
  b.PutVersioned("a", "1", kBig, 0);
  b.PutVersioned("b", std::string(6000, 'x'), kBig + 1, 4'000'000'000'000ull);  // out of line
  b.Put("c", "3");
  WriteResult r;
  ASSERT_OK((*db)->Write(b, WriteOptions(), &r));
  EXPECT_EQ(VersionOf(db->get(), "a"), kBig);
  EXPECT_EQ(VersionOf(db->get(), "b"), kBig + 1);
  EXPECT_EQ(VersionOf(db->get(), "c"), r.version) << "the record's LSN";
  EXPECT_LT(r.version, kBig);
  ValueMeta meta;
  std::string value;
  ASSERT_OK((*db)->GetWithMeta("b", &value, &meta).status());
  EXPECT_EQ(meta.expires_ms, 4'000'000'000'000ull);
  EXPECT_EQ(value.size(), 6000u);
  auto it = (*db)->NewIterator(ScanOptions());
  ASSERT_OK(it.status());
  std::vector<uint64_t> seen;
  for (; (*it)->Valid(); (*it)->Next()) seen.push_back((*it)->version());
  EXPECT_EQ(seen, (std::vector<uint64_t>{kBig, kBig + 1, r.version}));

  // A condition on a named version decides as on any other.
  WriteBatch cas;
  cas.PutVersioned("a", "2", kBig + 5, 0);
  WriteOptions o;
  o.conditions.push_back({});
  o.conditions[0].key = "a";
  o.conditions[0].kind = WriteCondition::Kind::kVersionEquals;
  o.conditions[0].version = kBig;
  ASSERT_OK((*db)->Write(cas, o, nullptr));
  EXPECT_EQ(VersionOf(db->get(), "a"), kBig + 5);
  EXPECT_EQ((*db)->Write(cas, o, nullptr).code(), StatusCode::kFailedPrecondition);
}

TEST(VersionedPutTest, AVersionOfZeroIsRefusedAndDecodeChecksTheEncoding) {
  TempDir dir;
  auto db = Db::Open(SmallOptions(dir.path()));
  ASSERT_OK(db.status());
  WriteBatch zero;
  zero.Put("ok", "1");
  zero.PutVersioned("z", "1", 0, 0);
  const Status s = (*db)->Write(zero);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("operations[1].version"), std::string::npos) << s.ToString();
  std::string v;
  EXPECT_FALSE(*(*db)->Get("ok", &v)) << "nothing of the batch is written";
  EXPECT_TRUE(WriteBatch::Decode(zero.Encoded()).status().IsDataLoss());

  WriteBatch b;
  b.PutVersioned("k", "v", kBig, 99);
  auto decoded = WriteBatch::Decode(b.Encoded());
  ASSERT_OK(decoded.status());
  EXPECT_EQ(decoded->Encoded(), b.Encoded());
  ASSERT_OK(decoded->ForEachOp([&](const WriteBatch::Op& op) {
    EXPECT_EQ(op.type, WriteBatch::OpType::kPutVersioned);
    EXPECT_TRUE(WriteBatch::IsPut(op.type));
    EXPECT_EQ(op.version, kBig);
    EXPECT_EQ(op.expires_ms, 99u);
    EXPECT_EQ(op.value, Slice("v"));
    return Status::Ok();
  }));
  for (size_t cut = 1; cut < b.Encoded().size(); ++cut) {
    EXPECT_TRUE(WriteBatch::Decode(b.Encoded().substr(0, cut)).status().IsDataLoss()) << cut;
  }
}

// kill -9 before any checkpoint: replaying the log gives every key the version it was written
// with; after a checkpoint the pages hold it.
TEST(VersionedPutTest, VersionsComeBackFromTheLogAndFromACheckpoint) {
  TempDir dir;
  auto fb = std::make_shared<FaultInjectionBackend>(Psync(), 3);
  Options o = SmallOptions(dir.path());
  o.io_backend = fb;
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    for (uint64_t i = 0; i < 200; ++i) {
      WriteBatch b;
      b.PutVersioned(Key(i), Value(i, 0), kBig + i, 0);
      ASSERT_OK((*db)->Write(b));
    }
    fb->CrashAfter(0);
  }
  ASSERT_OK(fb->SimulatePowerLoss(PowerLoss::kKeepUnsynced));
  o.io_backend = Psync();
  {
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(VersionOf(db->get(), Key(i)), kBig + i) << i;
    ASSERT_OK((*db)->Checkpoint());
    ASSERT_OK((*db)->Close());
  }
  auto db = Db::Open(o);
  ASSERT_OK(db.status());
  for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(VersionOf(db->get(), Key(i)), kBig + i) << i;
}

}  // namespace
}  // namespace grove::testing
