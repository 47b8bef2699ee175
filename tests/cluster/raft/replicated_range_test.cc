// ReplicatedRange on loopback: three replicas, each with its own engine and loop. Writes reach
// every replica's engine with the applied mark beside them; conditional writes are decided at
// apply time, so that concurrent compare-and-sets on one key succeed exactly as often as the
// value moved; a follower refuses naming the leader; a range delete with a limit applies once;
// and a replica whose engine lost the unsynced tail of its log in a power loss (or that was
// stopped and restarted after snapshots) replays its Raft log from its mark, applying nothing
// twice; a replica behind the others' snapshots (or whose directories were deleted) installs
// the range from the leader as of a cut, and writes during the copy reach it through the log.

#include "cluster/raft/replicated_range.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/raft/raft_test_util.h"
#include "cluster/raft/range_copy_rpc.h"
#include "engine/db_test_util.h"
#include "io/fault_backend.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::raft {
namespace {

using grove::testing::Key;
using grove::testing::Psync;
using grove::testing::SmallOptions;
using PowerLoss = FaultInjectionBackend::PowerLoss;

class ReplicatedRangeTest : public ::testing::Test {
 protected:
  // Copies a range from the replica that leads now (groved will fetch it over the network).
  // `fail_after` > 0: the next copy fails after that many keys, as a broken connection would.
  class LeaderSource final : public RangeSource {
   public:
    explicit LeaderSource(ReplicatedRangeTest* test) : test_(test) {}
    StatusOr<uint64_t> CopyRange(const std::string&, uint64_t at_least,
                                 const RangeSink& sink) override {
      ++copies;
      for (auto& r : test_->ranges_) {
        if (!r || r->GetStatus().role != RaftRole::kLeader) continue;
        int keys = 0;
        return r->CopyTo(at_least, [&](const CopiedKey& e) -> Status {
          ++keys;
          if (broken || (fail_after > 0 && keys > fail_after)) {
            fail_after = 0;
            return Status::Unavailable("the connection to the source broke");
          }
          if (keys == 1 && during_copy) std::exchange(during_copy, nullptr)();
          if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return sink(e);
        });
      }
      return Status::Unavailable("no leader to copy from");
    }
    std::atomic<int> copies{0};
    std::atomic<int> fail_after{0};
    std::atomic<bool> broken{false};  // every copy fails at its first key
    std::atomic<bool> slow{false};    // 1 ms per key
    // Runs once, in the middle of the next copy (after its first key).
    std::function<void()> during_copy;

   private:
    ReplicatedRangeTest* const test_;
  };

  static constexpr int kReplicas = 3;

  void SetUp() override {
    for (int i = 0; i < kReplicas; ++i) {
      auto loop = RaftLoop::Start();
      ASSERT_OK(loop.status());
      loops_.push_back(std::move(*loop));
      auto transport = GroupTransport::Start(loops_.back().get(), LoopbackTransport());
      ASSERT_OK(transport.status());
      transports_.push_back(std::move(*transport));
      peers_.push_back({static_cast<uint64_t>(i + 1), transports_.back()->address()});
    }
    for (int i = 0; i < kReplicas; ++i) {
      servers_.push_back(std::make_unique<TestServer>(&services_[i]));
    }
    dbs_.resize(kReplicas);
    faults_.resize(kReplicas);
    ranges_.resize(kReplicas);
  }

  void TearDown() override {
    for (int i = 0; i < kReplicas; ++i) services_[i].Remove("range-7");
    servers_.clear();
    for (auto& r : ranges_) {
      if (r) EXPECT_OK(r->Close());
    }
    ranges_.clear();
    for (auto& t : transports_) EXPECT_OK(t->Stop());
    for (auto& l : loops_) l->Stop();
    for (auto& d : dbs_) {
      if (d) EXPECT_OK(d->Close());
    }
  }

  // Opens replica i's engine (on a fault-injecting backend, so that a test can cut its power)
  // and starts its range.
  void StartReplica(int i) {
    faults_[i] = std::make_shared<FaultInjectionBackend>(Psync(), i + 1);
    Options o = SmallOptions(dir_.Sub("db" + std::to_string(i + 1)));
    o.io_backend = faults_[i];
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    dbs_[i] = std::move(*db);
    ReplicatedRangeOptions r;
    r.name = "range-7";
    r.raft.group = 7;
    r.raft.id = peers_[i].id;
    r.raft.transport = transports_[i].get();
    r.raft.dir = dir_.Sub("raft" + std::to_string(i + 1));
    r.raft.bootstrap = peers_;
    r.raft.election_timeout_ms = 300;
    r.raft.heartbeat_ms = 50;
    r.raft.snapshot_threshold = threshold_;
    r.raft.snapshot_trailing = trailing_;
    if (with_source_) r.source = &source_;
    if (over_grpc_) r.source = &grpc_source_;
    auto range = ReplicatedRange::Start(loops_[i].get(), r, dbs_[i].get());
    ASSERT_OK(range.status());
    ranges_[i] = std::move(*range);
    services_[i].Add(r.name, ranges_[i].get());
  }

  // Stops replica i: its range, then its engine, cleanly or with the power cut (what the
  // engine had not synced is lost; the Raft log, written with O_DSYNC, is not).
  void StopReplica(int i, bool power_loss) {
    services_[i].Remove("range-7");
    ASSERT_OK(ranges_[i]->Close());
    ranges_[i].reset();
    if (power_loss) {
      faults_[i]->CrashAfter(0);
      dbs_[i].reset();
      ASSERT_OK(faults_[i]->SimulatePowerLoss(PowerLoss::kDropUnsynced));
    } else {
      ASSERT_OK(dbs_[i]->Close());
      dbs_[i].reset();
    }
  }

  int WaitForLeader() { return WaitForLeaderOf(ranges_); }

  // Starts every replica and returns the one that leads (-1 when none did within 15 s).
  int StartAll() {
    for (int i = 0; i < kReplicas; ++i) StartReplica(i);
    return WaitForLeader();
  }

  // Whether replica i's engine holds the installing mark (an install began and did not end).
  bool Installing(int i) {
    std::string index;
    StatusOr<bool> found = dbs_[i]->GetMark("raft/range-7/installing", &index);
    EXPECT_OK(found.status());
    return found.ok() && *found;
  }

  // Waits until every running replica applied `index`.
  void WaitApplied(uint64_t index) {
    for (int i = 0; i < kReplicas; ++i) {
      if (!ranges_[i]) continue;
      EXPECT_TRUE(WaitFor([&] { return ranges_[i]->applied() >= index; }))
          << "replica " << i + 1 << " applied " << ranges_[i]->applied() << " of " << index;
    }
  }

  // Every key, value and version of replica i's engine, in order.
  std::string Contents(int i) {
    std::string out;
    auto it = dbs_[i]->NewIterator(ScanOptions());
    EXPECT_OK(it.status());
    if (!it.ok()) return out;
    for (; (*it)->Valid(); (*it)->Next()) {
      out += std::string((*it)->key()) + "=" + std::string((*it)->value()) + "@" +
             std::to_string((*it)->version()) + ";";
    }
    EXPECT_OK((*it)->status());
    return out;
  }

  void ExpectSameContents() {
    const std::string first = Contents(0);
    for (int i = 1; i < kReplicas; ++i) {
      if (!dbs_[i]) continue;
      const std::string other = Contents(i);
      EXPECT_TRUE(other == first) << "replica " << i + 1 << " holds " << other.size()
                                  << " bytes of keys, values and versions, replica 1 "
                                  << first.size();
    }
  }

  // The versions of keys [first, end) on replica i: ReplicatedVersion of the entry that last
  // wrote each, the same on every replica.
  std::string Versions(int i, int first, int end) {
    std::string out;
    for (int k = first; k < end; ++k) {
      std::string v;
      uint64_t version = 0;
      EXPECT_OK(dbs_[i]->GetWithVersion(Key(k), &v, &version).status());
      out += std::to_string(version) + ",";
    }
    return out;
  }

  RangeWriteResult Put(int replica, const std::string& key, const std::string& value) {
    WriteBatch b;
    b.Put(key, value);
    RangeWriteResult r;
    EXPECT_OK(ranges_[replica]->WriteAndWait(b, {}, &r));
    return r;
  }

  grove::testing::TempDir dir_;
  std::vector<RaftPeer> peers_;
  std::vector<std::unique_ptr<RaftLoop>> loops_;
  std::vector<std::unique_ptr<GroupTransport>> transports_;  // one per loop: a node's port
  std::vector<std::unique_ptr<Db>> dbs_;
  std::vector<std::shared_ptr<FaultInjectionBackend>> faults_;
  std::vector<std::unique_ptr<ReplicatedRange>> ranges_;
  uint32_t threshold_ = 1024, trailing_ = 2048;
  bool with_source_ = false;
  LeaderSource source_{this};
  // Each replica's node serves its range's copies over gRPC, as groved does; with over_grpc_ a
  // replica behind a snapshot fetches the range from the leader's node that way.
  bool over_grpc_ = false;
  ReplicationService services_[kReplicas];
  std::vector<std::unique_ptr<TestServer>> servers_;
  GrpcRangeSource grpc_source_{GrpcRangeSourceOptions{
      .address = [this]() -> StatusOr<std::string> {
        for (int i = 0; i < kReplicas; ++i) {
          if (ranges_[i] && ranges_[i]->GetStatus().role == RaftRole::kLeader) {
            return servers_[i]->address();
          }
        }
        return Status::Unavailable("no leader to copy from");
      },
      .credentials = nullptr,
      .timeout = std::chrono::seconds(20)}};
};

uint64_t AppliedMark(Db* db, const std::string& mark) {
  std::string v;
  StatusOr<bool> found = db->GetMark(mark, &v);
  EXPECT_OK(found.status());
  return found.ok() && *found && v.size() == 8 ? DecodeFixed64(v.data()) : 0;
}

TEST_F(ReplicatedRangeTest, WritesReachEveryEngineWithTheirIndexAndFollowersNameTheLeader) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  uint64_t last = 0;
  for (int n = 0; n < 40; ++n) {
    const RangeWriteResult r = Put(leader, Key(n), "value-" + std::to_string(n));
    EXPECT_GT(r.index, last);
    last = r.index;
  }
  WriteBatch batch;
  for (int n = 40; n < 60; ++n) batch.Put(Key(n), "batched");
  batch.Delete(Key(0));
  RangeWriteResult r;
  ASSERT_OK(ranges_[leader]->WriteAndWait(batch, {}, &r));
  last = r.index;
  WaitApplied(last);
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_EQ(AppliedMark(dbs_[i].get(), ranges_[i]->mark_name()), last) << "replica " << i + 1;
    std::string v;
    ASSERT_OK(dbs_[i]->Get(Key(59), &v).status());
    EXPECT_EQ(v, "batched");
  }
  ExpectSameContents();

  const int follower = (leader + 1) % kReplicas;
  WriteBatch b;
  b.Put("k", "v");
  Status refused = ranges_[follower]->WriteAndWait(b, {}, nullptr);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.ToString().find(peers_[leader].address), std::string::npos)
      << refused.ToString();
}

TEST_F(ReplicatedRangeTest, WritesOutsideTheLimitsAreRefusedBeforeTheyAreProposed) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const uint64_t before = ranges_[leader]->GetStatus().last_index;
  WriteBatch empty_key;
  empty_key.Put("", "v");
  Status s = ranges_[leader]->WriteAndWait(empty_key, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find("key"), std::string::npos) << s.ToString();
  WriteBatch big;
  big.Put("k", std::string((64u << 10) + 1, 'x'));
  s = ranges_[leader]->WriteAndWait(big, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find("limits.max_value_bytes"), std::string::npos) << s.ToString();
  WriteBatch marked;
  marked.SetMark("raft/range-7/applied", "12345678");
  s = ranges_[leader]->WriteAndWait(marked, {}, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  WriteBatch ok;
  ok.Put("k", "v");
  std::vector<WriteCondition> bad_condition(1);  // an empty key
  s = ranges_[leader]->WriteAndWait(ok, bad_condition, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find("conditions[0].key"), std::string::npos) << s.ToString();
  EXPECT_EQ(ranges_[leader]->GetStatus().last_index, before) << "nothing was proposed";
}

// Two writers race compare-and-sets that each move a counter from the value they read to the
// next: every success moved it by one, every refusal named the value it found.
TEST_F(ReplicatedRangeTest, CompareAndSetsAreDecidedAtApplyTime) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  Put(leader, "counter", "0");
  std::atomic<int> successes{0}, refusals{0};
  auto writer = [&] {
    std::string seen = "0";
    for (int n = 0; n < 40; ++n) {
      WriteBatch b;
      b.Put("counter", std::to_string(std::stoi(seen) + 1));
      WriteCondition c;
      c.key = "counter";
      c.kind = WriteCondition::Kind::kValueEquals;
      c.value = seen;
      RangeWriteResult r;
      Status s = ranges_[leader]->WriteAndWait(b, {c}, &r);
      if (s.ok()) {
        ++successes;
        seen = std::to_string(std::stoi(seen) + 1);
      } else {
        ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
        ASSERT_EQ(r.write.failed_condition, 0);
        ASSERT_TRUE(r.write.current_found);
        ASSERT_GT(r.index, 0u) << "a refused condition is an applied entry";
        ++refusals;
        seen = r.write.current_value;
      }
    }
  };
  std::thread a(writer), b(writer);
  a.join();
  b.join();
  EXPECT_EQ(successes + refusals, 80);
  EXPECT_GT(successes, 0);
  const RangeWriteResult last = Put(leader, "done", "1");
  WaitApplied(last.index);
  for (int i = 0; i < kReplicas; ++i) {
    std::string v;
    ASSERT_OK(dbs_[i]->Get("counter", &v).status());
    EXPECT_EQ(v, std::to_string(successes.load())) << "replica " << i + 1;
  }
}

// A key's version is made from its entry's place in the log, so it is the same on every replica:
// a compare-and-set on a version read from one leader is decided alike by the next.
TEST_F(ReplicatedRangeTest, AVersionIsTheSameOnEveryReplicaAndHoldsAcrossAFailover) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  Put(leader, "other", "x");  // engines whose LSNs would differ from the entries' indices
  const RangeWriteResult w = Put(leader, "k", "v1");
  EXPECT_EQ(w.write.version, ReplicatedVersion(7, w.index));
  WaitApplied(w.index);
  for (int i = 0; i < kReplicas; ++i) {
    std::string v;
    uint64_t version = 0;
    ASSERT_OK(dbs_[i]->GetWithVersion("k", &v, &version).status());
    EXPECT_EQ(version, w.write.version) << "replica " << i + 1;
  }
  StopReplica(leader, /*power_loss=*/false);
  const int next = WaitForLeader();
  ASSERT_GE(next, 0);
  ASSERT_NE(next, leader);
  WriteBatch b;
  b.Put("k", "v2");
  WriteCondition c;
  c.key = "k";
  c.kind = WriteCondition::Kind::kVersionEquals;
  c.version = w.write.version;
  RangeWriteResult cas;
  ASSERT_OK(ranges_[next]->WriteAndWait(b, {c}, &cas));
  EXPECT_GT(cas.write.version, w.write.version);
  // The same compare-and-set again: the key has moved on.
  RangeWriteResult stale;
  EXPECT_EQ(ranges_[next]->WriteAndWait(b, {c}, &stale).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stale.write.current_version, cas.write.version);
  // A client batch may not name versions: they are the range's own.
  WriteBatch versioned;
  versioned.PutVersioned("k", "v3", 5, 0);
  EXPECT_EQ(ranges_[next]->WriteAndWait(versioned, {}, nullptr).code(),
            StatusCode::kInvalidArgument);
  StartReplica(leader);
  WaitApplied(stale.index);
  ExpectSameContents();
}

TEST_F(ReplicatedRangeTest, ARangeDeleteWithALimitStopsAndSaysWhereToResume) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  WriteBatch b;
  for (int n = 0; n < 30; ++n) b.Put(Key(n), "v");
  ASSERT_OK(ranges_[leader]->WriteAndWait(b, {}, nullptr));
  RangeWriteResult r;
  ASSERT_OK(ranges_[leader]->DeleteRangeAndWait(Key(5), Key(25), 10, &r));
  EXPECT_EQ(r.deleted.deleted, 10u);
  EXPECT_TRUE(r.deleted.more);
  EXPECT_EQ(r.deleted.resume_key, Key(15));
  EXPECT_EQ(r.deleted.limited_by, "limit");
  ASSERT_OK(ranges_[leader]->DeleteRangeAndWait(r.deleted.resume_key, Key(25), 0, &r));
  EXPECT_EQ(r.deleted.deleted, 10u);
  EXPECT_FALSE(r.deleted.more);
  Status bad = ranges_[leader]->DeleteRangeAndWait(Key(9), Key(3), 0, nullptr);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.ToString();
  WaitApplied(r.index);
  for (int i = 0; i < kReplicas; ++i) EXPECT_EQ(dbs_[i]->GetStats().index.entries, 10u);
  ExpectSameContents();
}

TEST_F(ReplicatedRangeTest, ReadsArrivingWhileABarrierRunsShareTheNextOne) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  Put(leader, Key(1), "before");
  // The leader's loop is held: the first read's barrier cannot complete, and the reads after it
  // join the next one.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_TRUE(loops_[leader]->Post([released] { released.wait(); }));
  constexpr int kReads = 8;
  std::vector<std::thread> readers;
  std::atomic<int> ok{0};
  for (int r = 0; r < kReads; ++r) {
    readers.emplace_back([&] {
      if (ranges_[leader]->ReadBarrier().ok()) ++ok;
    });
  }
  EXPECT_TRUE(WaitFor([&] { return ranges_[leader]->barrier_reads() == kReads; }));
  release.set_value();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(ok.load(), kReads);
  EXPECT_EQ(ranges_[leader]->barriers(), 2u);
  // A read after an acknowledged write still runs a barrier of its own.
  Put(leader, Key(2), "after");
  ASSERT_OK(ranges_[leader]->ReadBarrier().status());
  EXPECT_EQ(ranges_[leader]->barriers(), 3u);
}

TEST_F(ReplicatedRangeTest, ASplitEndsTheRangeOnEveryReplicaAndHandsItsTailToTheNewGroup) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  WriteBatch b;
  for (int n = 0; n < 30; ++n) b.Put(Key(n), "v");
  ASSERT_OK(ranges_[leader]->WriteAndWait(b, {}, nullptr));
  EXPECT_EQ(ranges_[leader]->Split(Key(5), 7).code(), StatusCode::kInvalidArgument);  // its own id
  EXPECT_EQ(ranges_[leader]->Split("", 8).code(), StatusCode::kInvalidArgument);
  ASSERT_OK(ranges_[leader]->Split(Key(20), 8));
  EXPECT_OK(ranges_[leader]->Split(Key(20), 8));  // again: nothing to do
  EXPECT_EQ(ranges_[leader]->Split(Key(25), 8).code(), StatusCode::kInvalidArgument);
  const uint64_t split_at = ranges_[leader]->applied();
  WaitApplied(split_at);
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_EQ(ranges_[i]->end(), Key(20)) << "replica " << i + 1;
    EXPECT_FALSE(ranges_[i]->Contains(Key(20)));
    EXPECT_TRUE(ranges_[i]->Contains(Key(19)));
    // The new group's first state: the tail's keys, as of its bootstrap entry.
    EXPECT_EQ(AppliedMark(dbs_[i].get(), "raft/range-8/applied"), 1u);
  }
  // Past the end: refused before it is proposed, nothing written.
  WriteBatch past;
  past.Put(Key(25), "after");
  Status refused = ranges_[leader]->WriteAndWait(past, {}, nullptr);
  EXPECT_EQ(refused.code(), StatusCode::kAborted) << refused.ToString();
  EXPECT_NE(refused.ToString().find("split"), std::string::npos) << refused.ToString();
  // A range delete to the range's end stops at the split; one past it is refused.
  RangeWriteResult r;
  ASSERT_OK(ranges_[leader]->DeleteRangeAndWait(Key(10), "", 0, &r));
  EXPECT_EQ(r.deleted.deleted, 10u);
  EXPECT_EQ(ranges_[leader]->DeleteRangeAndWait(Key(10), Key(25), 0, nullptr).code(),
            StatusCode::kAborted);
  WaitApplied(r.index);
  ExpectSameContents();
  for (int i = 0; i < kReplicas; ++i) {
    std::string v;
    EXPECT_TRUE(*dbs_[i]->Get(Key(25), &v));  // the new range's, untouched
    EXPECT_FALSE(*dbs_[i]->Get(Key(15), &v));
  }
  // A restarted replica still ends at the split, whatever its caller says.
  const int follower = (leader + 1) % kReplicas;
  StopReplica(follower, /*power_loss=*/false);
  StartReplica(follower);
  EXPECT_EQ(ranges_[follower]->end(), Key(20));
}

// The engine's log is not synced for replicated writes: a power loss takes the tail of a
// follower's engine away, and its Raft log brings it back. Range deletes with a limit would
// remove more keys if an entry were applied twice.
TEST_F(ReplicatedRangeTest, AFollowerThatLostItsEnginesTailReplaysTheRaftLogFromItsMark) {
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  WriteBatch b;
  for (int n = 0; n < 200; ++n) b.Put(Key(n), "v" + std::to_string(n));
  ASSERT_OK(ranges_[leader]->WriteAndWait(b, {}, nullptr));
  RangeWriteResult r;
  for (int n = 0; n < 10; ++n) {
    ASSERT_OK(ranges_[leader]->DeleteRangeAndWait(Key(0), "", 5, &r));
    r = Put(leader, "step", std::to_string(n));
    if (n == 4) {
      // The follower's engine holds the batch and the first five deletes durably; a second pass
      // of any of them would remove five more keys.
      WaitApplied(r.index);
      ASSERT_OK(dbs_[follower]->SyncWal());
    }
  }
  WaitApplied(r.index);
  const uint64_t before = ranges_[follower]->applied();
  const std::string versions = Versions(follower, 100, 200);
  StopReplica(follower, /*power_loss=*/true);
  {
    // The engine lost the entries after the synced batch (the power loss drops what was not
    // synced; its last checkpoint is older still).
    Options o = SmallOptions(dir_.Sub("db" + std::to_string(follower + 1)));
    auto db = Db::Open(o);
    ASSERT_OK(db.status());
    EXPECT_LT(AppliedMark(db->get(), "raft/range-7/applied"), before);
    ASSERT_OK((*db)->Close());
  }
  StartReplica(follower);
  WaitApplied(before);
  EXPECT_EQ(AppliedMark(dbs_[follower].get(), ranges_[follower]->mark_name()), before);
  EXPECT_EQ(dbs_[follower]->GetStats().index.entries, 200u - 50u + 1u);
  EXPECT_EQ(Versions(follower, 100, 200), versions);
  ExpectSameContents();
}

// Snapshots every 16 entries: a replica restarted from its directories finds its engine past its
// own snapshot and goes on from its mark.
TEST_F(ReplicatedRangeTest, AReplicaRestartedAfterSnapshotsGoesOnFromItsMark) {
  threshold_ = 16;
  trailing_ = 4;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 2) % kReplicas;
  WriteBatch doomed;
  for (int n = 0; n < 60; ++n) doomed.Put("d-" + Key(n), "x");
  ASSERT_OK(ranges_[leader]->WriteAndWait(doomed, {}, nullptr));
  RangeWriteResult r;
  for (int n = 0; n < 100; ++n) {
    r = Put(leader, Key(n % 37), std::to_string(n));
    // Ten range deletes of three keys each: one applied twice would remove three more.
    if (n % 10 == 0) ASSERT_OK(ranges_[leader]->DeleteRangeAndWait("d-", "d.", 3, &r));
  }
  WaitApplied(r.index);
  const std::string before = Versions(follower, 0, 37);
  StopReplica(follower, /*power_loss=*/false);
  StartReplica(follower);
  for (int n = 100; n < 110; ++n) r = Put(leader, "after-" + std::to_string(n), "x");
  WaitApplied(r.index);
  EXPECT_EQ(AppliedMark(dbs_[follower].get(), ranges_[follower]->mark_name()), r.index);
  EXPECT_EQ(Versions(follower, 0, 37), before);
  EXPECT_EQ(dbs_[follower]->GetStats().index.entries, 37u + 30u + 10u);
  ExpectSameContents();
}

// A replica away while the others snapshot and truncate their logs is sent the leader's
// snapshot on its return. Installing a range from another replica is not built: the replica
// refuses the snapshot, says why, and stays behind; the others go on.
TEST_F(ReplicatedRangeTest, AReplicaBehindTheOthersSnapshotsSaysItCannotInstallIt) {
  threshold_ = 16;
  trailing_ = 4;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 2) % kReplicas;
  RangeWriteResult r = Put(leader, "a", "1");
  WaitApplied(r.index);
  const uint64_t held = ranges_[follower]->applied();
  StopReplica(follower, /*power_loss=*/false);
  for (int n = 0; n < 100; ++n) r = Put(leader, Key(n % 37), std::to_string(n));
  StartReplica(follower);
  EXPECT_TRUE(WaitFor([&] { return !ranges_[follower]->GetStatus().failure.ok(); }))
      << "the snapshot was not refused";
  const Status failure = ranges_[follower]->GetStatus().failure;
  EXPECT_NE(failure.ToString().find("needs the range's data from another replica"),
            std::string::npos)
      << failure.ToString();
  // It applied what the leader's log still held for it, and stopped short of the snapshot.
  EXPECT_GE(ranges_[follower]->applied(), held);
  EXPECT_LT(ranges_[follower]->applied(), r.index);
  const RangeWriteResult after = Put(leader, "b", "2");
  EXPECT_GT(after.index, r.index);
}

// Closing a replica in the middle of an install does not wait for the copy: the install gives
// up, its mark stays, and the next start installs again.
TEST_F(ReplicatedRangeTest, ClosingAReplicaCutsItsInstallShortAndTheNextStartRedoesIt) {
  threshold_ = 16;
  trailing_ = 4;
  with_source_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 2) % kReplicas;
  StopReplica(follower, /*power_loss=*/false);
  RangeWriteResult r;
  for (int b = 0; b < 8; ++b) {
    WriteBatch batch;
    for (int n = 0; n < 500; ++n) batch.Put(Key(b * 500 + n), "v");
    ASSERT_OK(ranges_[leader]->WriteAndWait(batch, {}, &r));
  }
  for (int n = 0; n < 40; ++n) r = Put(leader, Key(n), "again");  // past a snapshot
  source_.slow = true;                                            // 4,000 keys: 4 s of copy
  std::thread closer;
  std::atomic<bool> began{false};
  source_.during_copy = [&] {
    closer = std::thread([&] { EXPECT_OK(ranges_[follower]->Close()); });
    began = true;
  };
  StartReplica(follower);
  ASSERT_TRUE(WaitFor([&] { return began.load(); })) << "no install began";
  closer.join();
  EXPECT_TRUE(Installing(follower));
  StopReplica(follower, /*power_loss=*/false);  // its range closed already
  source_.slow = false;
  StartReplica(follower);
  EXPECT_TRUE(WaitFor([&] { return !Installing(follower); }));
  r = Put(leader, "last", "1");
  WaitApplied(r.index);
  EXPECT_OK(ranges_[follower]->GetStatus().failure);
  ExpectSameContents();
}

// As above, with a source: the replica installs the range from the leader while a writer keeps
// changing it (the copy is taken at a cut, writes after it come from the log), then follows.
TEST_F(ReplicatedRangeTest, AReplicaBehindTheOthersSnapshotsInstallsTheRangeFromTheLeader) {
  threshold_ = 16;
  trailing_ = 4;
  with_source_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 2) % kReplicas;
  RangeWriteResult r;
  for (int n = 0; n < 30; ++n) r = Put(leader, Key(n), "first");
  WaitApplied(r.index);
  StopReplica(follower, /*power_loss=*/false);
  for (int n = 0; n < 200; ++n) r = Put(leader, Key(n % 53), "second-" + std::to_string(n));
  ASSERT_OK(ranges_[leader]->DeleteRangeAndWait(Key(0), Key(10), 0, &r));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int n = 0; !stop; ++n) {
      WriteBatch b;
      b.Put(Key(n % 71), "during-" + std::to_string(n));
      if (n % 7 == 0) b.Delete(Key((n * 3) % 71));
      ranges_[leader]->WriteAndWait(b, {}, nullptr).IgnoreError();
    }
  });
  StartReplica(follower);
  EXPECT_TRUE(WaitFor([&] { return source_.copies > 0; })) << "no snapshot was installed";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  writer.join();
  r = Put(leader, "last", "1");
  WaitApplied(r.index);
  EXPECT_OK(ranges_[follower]->GetStatus().failure);
  ExpectSameContents();
}

// A replica whose engine and Raft directories were deleted starts empty, is sent a snapshot and
// installs the range; an install broken part way leaves the installing mark, and the next one
// (the leader resends the snapshot) finishes it.
TEST_F(ReplicatedRangeTest, AReplicaWhoseDirectoriesWereDeletedRejoinsBySnapshot) {
  threshold_ = 16;
  trailing_ = 4;
  with_source_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  RangeWriteResult r;
  for (int n = 0; n < 120; ++n) r = Put(leader, Key(n), std::string(100 + n, 'v'));
  WaitApplied(r.index);
  StopReplica(follower, /*power_loss=*/false);
  std::filesystem::remove_all(dir_.Sub("db" + std::to_string(follower + 1)));
  std::filesystem::remove_all(dir_.Sub("raft" + std::to_string(follower + 1)));
  source_.fail_after = 50;
  StartReplica(follower);
  WaitApplied(r.index);
  EXPECT_GE(source_.copies, 2) << "the broken install was not retried";
  EXPECT_FALSE(Installing(follower));
  EXPECT_EQ(dbs_[follower]->GetStats().index.entries, 120u);
  ExpectSameContents();
}

// The same over the network: the replica fetches the range from the leader's node through the
// Replication service, in checksummed chunks.
TEST_F(ReplicatedRangeTest, AReplicaWhoseDirectoriesWereDeletedRejoinsOverTheNetwork) {
  threshold_ = 16;
  trailing_ = 4;
  over_grpc_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  RangeWriteResult r;
  // About 2.5 MiB, several chunks.
  for (int n = 0; n < 120; ++n) {
    WriteBatch b;
    for (int k = 0; k < 20; ++k) b.Put(Key(n * 20 + k), std::string(1000 + n, 'v'));
    ASSERT_OK(ranges_[leader]->WriteAndWait(b, {}, &r));
  }
  WaitApplied(r.index);
  StopReplica(follower, /*power_loss=*/false);
  std::filesystem::remove_all(dir_.Sub("db" + std::to_string(follower + 1)));
  std::filesystem::remove_all(dir_.Sub("raft" + std::to_string(follower + 1)));
  StartReplica(follower);
  const RangeWriteResult after = Put(leader, "after", "x");
  WaitApplied(after.index);
  EXPECT_FALSE(Installing(follower));
  EXPECT_EQ(dbs_[follower]->GetStats().index.entries, 2401u);
  ExpectSameContents();
}

// Writes that apply while the copy runs, on keys it has not reached: a compare-and-set that
// fails at the cut (the key holds "b"), then a put that makes the condition true. A copy that
// took the put's value would let the replayed compare-and-set succeed on the installed replica
// alone; the copy keeps the cut, so every replica ends the same.
TEST_F(ReplicatedRangeTest, WritesDuringTheCopyComeFromTheLogNotFromTheCopy) {
  // Enough log behind each snapshot that after the install the leader sends the entries that
  // follow the cut, not a newer snapshot.
  threshold_ = 16;
  trailing_ = 64;
  with_source_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 2) % kReplicas;
  RangeWriteResult r = Put(leader, "zz-k", "b");
  WaitApplied(r.index);
  StopReplica(follower, /*power_loss=*/false);
  // Many leaves: the copy's iterator reads the range a leaf at a time, and zz-k is far from the
  // first.
  for (int n = 0; n < 200; ++n) {
    WriteBatch b;
    for (int k = 0; k < 4; ++k) b.Put(Key(n * 4 + k), std::string(200, 'v'));
    ASSERT_OK(ranges_[leader]->WriteAndWait(b, {}, &r));
  }
  source_.during_copy = [&] {
    WriteBatch set_m;
    set_m.Put("zz-m", "1");
    WriteCondition c;
    c.key = "zz-k";
    c.kind = WriteCondition::Kind::kValueEquals;
    c.value = "a";
    EXPECT_EQ(ranges_[leader]->WriteAndWait(set_m, {c}, nullptr).code(),
              StatusCode::kFailedPrecondition);
    WriteBatch set_k;
    set_k.Put("zz-k", "a");
    EXPECT_OK(ranges_[leader]->WriteAndWait(set_k, {}, nullptr));
  };
  StartReplica(follower);
  EXPECT_TRUE(WaitFor([&] { return source_.copies > 0 && !source_.during_copy; }));
  r = Put(leader, "last", "1");
  WaitApplied(r.index);
  std::string m;
  StatusOr<bool> found = dbs_[follower]->Get("zz-m", &m);
  ASSERT_OK(found.status());
  EXPECT_FALSE(*found) << "the installed replica applied the compare-and-set";
  ExpectSameContents();
}

// Every copy fails: the replica gives up, keeps the installing mark (its range is a mix) and
// refuses to apply; restarted with a working source, it installs at start and catches up.
TEST_F(ReplicatedRangeTest, AReplicaWhoseInstallGaveUpInstallsAgainWhenItRestarts) {
  threshold_ = 16;
  trailing_ = 4;
  with_source_ = true;
  const int leader = StartAll();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % kReplicas;
  RangeWriteResult r;
  for (int n = 0; n < 100; ++n) r = Put(leader, Key(n), "v" + std::to_string(n));
  WaitApplied(r.index);
  StopReplica(follower, /*power_loss=*/false);
  for (int n = 0; n < 100; ++n) r = Put(leader, Key(n), "w" + std::to_string(n));
  source_.broken = true;
  StartReplica(follower);
  EXPECT_TRUE(WaitFor([&] { return source_.copies >= 5; })) << "the install was not retried";
  EXPECT_TRUE(WaitFor([&] { return Installing(follower); }));
  StopReplica(follower, /*power_loss=*/false);
  source_.broken = false;
  StartReplica(follower);
  r = Put(leader, "after", "1");
  WaitApplied(r.index);
  EXPECT_FALSE(Installing(follower));
  ExpectSameContents();
}

}  // namespace
}  // namespace grove::raft
