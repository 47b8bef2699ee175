// A range copy over gRPC: a one-replica range served by ReplicationService streams its copy in
// checksummed chunks to GrpcRangeSource, which hands every key (value, expiry, version) to its
// sink and returns the cut; an unknown range is refused naming it; a damaged, missing, repeated
// or unfinished chunk, keys out of order or a wrong count fail the copy before the bad chunk's
// keys reach the sink; a sink that fails ends the stream and the source's copy with it.

#include "cluster/raft/range_copy_rpc.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/raft/raft_test_util.h"
#include "engine/db_test_util.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::raft {
namespace {

using grove::testing::Key;
using grove::testing::SmallOptions;

struct Entry {
  std::string value;
  uint64_t expires_ms = 0;
  uint64_t version = 0;
  bool operator==(const Entry&) const = default;
};

GrpcRangeSource SourceAt(const std::string& address) {
  GrpcRangeSourceOptions o;
  o.address = [address]() -> StatusOr<std::string> { return address; };
  o.timeout = std::chrono::seconds(20);
  return GrpcRangeSource(o);
}

class RangeCopyRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = RaftLoop::Start();
    ASSERT_OK(loop.status());
    loop_ = std::move(*loop);
    auto transport = GroupTransport::Start(loop_.get(), LoopbackTransport());
    ASSERT_OK(transport.status());
    transport_ = std::move(*transport);
    auto db = Db::Open(SmallOptions(dir_.Sub("db")));
    ASSERT_OK(db.status());
    db_ = std::move(*db);
    ReplicatedRangeOptions r;
    r.name = "9";
    r.raft.group = 9;
    r.raft.id = 1;
    r.raft.transport = transport_.get();
    r.raft.dir = dir_.Sub("raft");
    r.raft.bootstrap = {{1, transport_->address()}};
    r.raft.election_timeout_ms = 200;
    r.raft.heartbeat_ms = 50;
    auto range = ReplicatedRange::Start(loop_.get(), r, db_.get());
    ASSERT_OK(range.status());
    range_ = std::move(*range);
    ASSERT_TRUE(WaitFor([&] { return range_->GetStatus().role == RaftRole::kLeader; }));
  }

  void TearDown() override {
    if (range_) EXPECT_OK(range_->Close());
    if (transport_) EXPECT_OK(transport_->Stop());
    if (loop_) loop_->Stop();
    if (db_) EXPECT_OK(db_->Close());
  }

  std::map<std::string, Entry> EngineContents() {
    std::map<std::string, Entry> out;
    auto it = db_->NewIterator(ScanOptions());
    EXPECT_OK(it.status());
    for (; (*it)->Valid(); (*it)->Next()) {
      out[std::string((*it)->key())] = {std::string((*it)->value()), (*it)->expires_ms(),
                                        (*it)->version()};
    }
    return out;
  }

  grove::testing::TempDir dir_;
  std::unique_ptr<RaftLoop> loop_;
  std::unique_ptr<GroupTransport> transport_;
  std::unique_ptr<Db> db_;
  std::unique_ptr<ReplicatedRange> range_;
};

TEST_F(RangeCopyRpcTest, TheCopyArrivesWholeInChecksummedChunksWithItsCut) {
  // About 3 MiB: several chunks.
  for (int b = 0; b < 3; ++b) {
    WriteBatch batch;
    for (int k = b * 1000; k < (b + 1) * 1000; ++k) {
      const std::string value(1000, static_cast<char>('a' + k % 26));
      if (k % 7 == 0) {
        batch.PutExpiring(Key(k), value, 4'000'000'000'000ull + k);
      } else {
        batch.Put(Key(k), value);
      }
    }
    ASSERT_OK(range_->WriteAndWait(batch, {}, nullptr));
  }
  ReplicationService service;
  service.Add("9", range_.get());
  TestServer server(&service);
  GrpcRangeSource source = SourceAt(server.address());
  std::map<std::string, Entry> copy;
  StatusOr<uint64_t> cut = source.CopyRange("9", range_->applied(), [&](const CopiedKey& e) {
    copy[std::string(e.key)] = {std::string(e.value), e.expires_ms, e.version};
    return Status::Ok();
  });
  ASSERT_OK(cut.status());
  EXPECT_EQ(*cut, range_->applied());
  EXPECT_EQ(copy.size(), 3000u);
  EXPECT_TRUE(copy == EngineContents());

  // Not a range of this node: refused, naming it; the installing replica may try elsewhere.
  StatusOr<uint64_t> unknown =
      source.CopyRange("8", 0, [](const CopiedKey&) { return Status::Ok(); });
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(unknown.status().ToString().find("no replica of '8'"), std::string::npos)
      << unknown.status().ToString();
  // A range removed from the service is refused the same way.
  service.Remove("9");
  EXPECT_FALSE(source.CopyRange("9", 0, [](const CopiedKey&) { return Status::Ok(); }).ok());
}

TEST_F(RangeCopyRpcTest, ASinkThatFailsEndsTheStreamAndTheSourcesCopy) {
  WriteBatch batch;
  for (int k = 0; k < 3000; ++k) batch.Put(Key(k), std::string(1000, 'v'));
  ASSERT_OK(range_->WriteAndWait(batch, {}, nullptr));
  ReplicationService service;
  service.Add("9", range_.get());
  TestServer server(&service);
  GrpcRangeSource source = SourceAt(server.address());
  int keys = 0;
  StatusOr<uint64_t> cut = source.CopyRange("9", 0, [&](const CopiedKey&) {
    return ++keys == 10 ? Status::ResourceExhausted("disk full") : Status::Ok();
  });
  EXPECT_EQ(cut.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(keys, 10);
  service.Remove("9");  // returns: the source's copy ended
  // And the range can be copied again.
  service.Add("9", range_.get());
  keys = 0;
  ASSERT_OK(source
                .CopyRange("9", 0,
                           [&](const CopiedKey&) {
                             ++keys;
                             return Status::Ok();
                           })
                .status());
  EXPECT_EQ(keys, 3000);
}

// Sends a scripted stream: two good chunks of two keys each and a last one, spoiled as `fault`
// says.
class ScriptedService final : public grove::v1::Replication::Service {
 public:
  enum class Fault {
    kNone,
    kFlippedByte,
    kSkippedChunk,
    kRepeatedChunk,
    kNoLastChunk,
    kKeysOutOfOrder,
    kWrongCount,
    kAfterTheLast
  };
  Fault fault = Fault::kNone;

  grpc::Status CopyRange(grpc::ServerContext*, const grove::v1::CopyRangeRequest*,
                         grpc::ServerWriter<grove::v1::CopyRangeChunk>* writer) override {
    std::vector<grove::v1::CopyRangeChunk> chunks(3);
    const char* keys[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; ++i) {
      grove::v1::CopiedEntry* e = chunks[i / 2].add_entries();
      e->set_key(keys[i]);
      e->set_value(std::string("v") + keys[i]);
      e->set_version(100 + i);
    }
    chunks[2].set_done(true);
    chunks[2].set_cut_index(42);
    chunks[2].set_total_entries(fault == Fault::kWrongCount ? 5 : 4);
    if (fault == Fault::kKeysOutOfOrder) chunks[1].mutable_entries(0)->set_key("a");
    for (size_t i = 0; i < chunks.size(); ++i) chunks[i].set_sequence(i);
    if (fault == Fault::kSkippedChunk) chunks[1].set_sequence(2), chunks[2].set_sequence(3);
    if (fault == Fault::kRepeatedChunk) chunks[1].set_sequence(0);
    for (auto& c : chunks) c.set_crc32c(ChunkChecksum(c));
    if (fault == Fault::kFlippedByte) chunks[1].mutable_entries(1)->set_value("vX");
    if (fault == Fault::kNoLastChunk) chunks.pop_back();
    if (fault == Fault::kAfterTheLast) chunks.push_back(chunks.back());
    for (const auto& c : chunks) writer->Write(c);
    return grpc::Status::OK;
  }
};

TEST(RangeCopyRpcStreamTest, ABrokenStreamFailsBeforeTheBadChunkReachesTheSink) {
  using Fault = ScriptedService::Fault;
  ScriptedService service;
  TestServer server(&service);
  GrpcRangeSource source = SourceAt(server.address());
  struct Case {
    Fault fault;
    StatusCode code;
    std::string keys;  // what the sink received
  };
  const std::vector<Case> cases = {
      {Fault::kNone, StatusCode::kOk, "abcd"},
      {Fault::kFlippedByte, StatusCode::kDataLoss, "ab"},
      {Fault::kSkippedChunk, StatusCode::kDataLoss, "ab"},
      {Fault::kRepeatedChunk, StatusCode::kDataLoss, "ab"},
      {Fault::kNoLastChunk, StatusCode::kUnavailable, "abcd"},
      {Fault::kKeysOutOfOrder, StatusCode::kDataLoss, "ab"},
      {Fault::kWrongCount, StatusCode::kDataLoss, "abcd"},
      {Fault::kAfterTheLast, StatusCode::kDataLoss, "abcd"},
  };
  for (const Case& c : cases) {
    service.fault = c.fault;
    std::string keys;
    StatusOr<uint64_t> cut = source.CopyRange("r", 0, [&](const CopiedKey& e) {
      keys += std::string(e.key);
      return Status::Ok();
    });
    EXPECT_EQ(cut.status().code(), c.code)
        << static_cast<int>(c.fault) << ": " << cut.status().ToString();
    EXPECT_EQ(keys, c.keys) << static_cast<int>(c.fault);
    if (c.code == StatusCode::kOk) EXPECT_EQ(*cut, 42u);
  }
  // No source to ask: refused at once.
  GrpcRangeSourceOptions none;
  EXPECT_EQ(GrpcRangeSource(none)
                .CopyRange("r", 0, [](const CopiedKey&) { return Status::Ok(); })
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace grove::raft
