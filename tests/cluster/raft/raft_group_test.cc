// RaftGroup on loopback: three replicas, each on a loop of its own, elect a leader and apply the
// same entries in the same order; a follower refuses proposals naming the leader; the group
// keeps committing when its leader is closed, and a replica that restarts from its directory
// (or that was away while snapshots truncated the log) catches up to the same state; a second
// replica of a group on one transport fails to start and releases what it set up; closing a
// leader with proposals in flight completes every one of them.

#include "cluster/raft/raft_group.h"

#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "cluster/raft/raft_test_util.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"
#include "util/coding.h"
#include "util/mutex.h"

namespace grove::raft {
namespace {

using std::chrono::milliseconds;

class RaftGroupTest : public ::testing::Test {
 protected:
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
      logs_.push_back(std::make_unique<EntryLog>());
    }
    groups_.resize(kReplicas);
  }

  void TearDown() override {
    for (auto& g : groups_) {
      if (g) EXPECT_OK(g->Close());
    }
    groups_.clear();
    for (auto& t : transports_) EXPECT_OK(t->Stop());
    for (auto& l : loops_) l->Stop();
  }

  RaftGroupOptions OptionsFor(int i) {
    RaftGroupOptions o;
    o.group = 7;
    o.id = peers_[i].id;
    o.transport = transports_[i].get();
    o.dir = dir_.Sub("replica" + std::to_string(i + 1));
    o.bootstrap = peers_;
    o.election_timeout_ms = 300;
    o.heartbeat_ms = 50;
    o.snapshot_threshold = threshold_;
    o.snapshot_trailing = trailing_;
    o.segment_bytes = segment_bytes_;
    return o;
  }

  void StartReplica(int i) {
    auto g = RaftGroup::Start(loops_[i].get(), OptionsFor(i), logs_[i].get());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    groups_[i] = std::move(*g);
  }

  // The replica every running one agrees leads, once there is one.
  int WaitForLeader() { return WaitForLeaderOf(groups_); }

  void ExpectAllApplied(const std::vector<std::string>& want) {
    for (int i = 0; i < kReplicas; ++i) {
      if (!groups_[i]) continue;
      EXPECT_TRUE(WaitFor([&] { return logs_[i]->entries().size() >= want.size(); }))
          << "replica " << i + 1 << " applied " << logs_[i]->entries().size() << " of "
          << want.size();
      EXPECT_EQ(logs_[i]->entries(), want) << "replica " << i + 1;
    }
  }

  testing::TempDir dir_;
  std::vector<RaftPeer> peers_;
  std::vector<std::unique_ptr<RaftLoop>> loops_;
  std::vector<std::unique_ptr<GroupTransport>> transports_;  // one per loop: a node's port
  std::vector<std::unique_ptr<EntryLog>> logs_;
  std::vector<std::unique_ptr<RaftGroup>> groups_;
  uint32_t threshold_ = 1024, trailing_ = 2048;
  uint64_t segment_bytes_ = 8 << 20;
};

TEST_F(RaftGroupTest, ReplicasApplyTheSameEntriesInOrderAndFollowersNameTheLeader) {
  for (int i = 0; i < kReplicas; ++i) StartReplica(i);
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  std::vector<std::string> want;
  uint64_t last = 0;
  for (int n = 0; n < 50; ++n) {
    want.push_back("entry-" + std::to_string(n));
    StatusOr<uint64_t> index = groups_[leader]->ProposeAndWait(want.back());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    EXPECT_GT(*index, last);
    last = *index;
  }
  ASSERT_OK(groups_[leader]->BarrierAndWait().status());
  const int follower = (leader + 1) % kReplicas;
  StatusOr<uint64_t> refused = groups_[follower]->ProposeAndWait("not here");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().ToString().find(peers_[leader].address), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(groups_[leader]->ProposeAndWait("").status().code(), StatusCode::kInvalidArgument);
  ExpectAllApplied(want);
  const RaftStatus s = groups_[follower]->GetStatus();
  EXPECT_EQ(s.role, RaftRole::kFollower);
  EXPECT_EQ(s.leader_id, peers_[leader].id);
  EXPECT_GE(s.commit_index, last);
}

TEST_F(RaftGroupTest, TheGroupOutlivesItsLeaderAndARestartedReplicaCatchesUp) {
  // Snapshots every 8 entries, 2 kept behind: a replica away for 40 entries finds the log
  // truncated and is sent a snapshot.
  threshold_ = 8;
  trailing_ = 2;
  for (int i = 0; i < kReplicas; ++i) StartReplica(i);
  const int first = WaitForLeader();
  ASSERT_GE(first, 0);
  std::vector<std::string> want;
  for (int n = 0; n < 20; ++n) {
    // Lengths 2-15 bytes with zeros in them: entries are framed and padded in the log.
    want.push_back(std::string(1 + n % 13, '\0') + std::to_string(n));
    ASSERT_OK(groups_[first]->ProposeAndWait(want.back()).status());
  }
  ASSERT_OK(groups_[first]->Close());
  groups_[first].reset();

  const int second = WaitForLeader();
  ASSERT_GE(second, 0);
  ASSERT_NE(second, first);
  for (int n = 0; n < 40; ++n) {
    want.push_back("b" + std::to_string(n));
    StatusOr<uint64_t> index = groups_[second]->ProposeAndWait(want.back());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
  }
  // The first leader comes back from its directory with a state machine that knows nothing: what
  // it had is rebuilt from its own snapshot and log, the rest comes from the leader.
  logs_[first] = std::make_unique<EntryLog>();
  StartReplica(first);
  ExpectAllApplied(want);
  // Its own snapshot at start, and the leader's for what the leader's log no longer holds.
  EXPECT_GE(logs_[first]->restores(), 1);
}

TEST_F(RaftGroupTest, ASecondReplicaOfAGroupOnOneTransportFailsToStartAndReleasesItsResources) {
  StartReplica(0);
  RaftGroupOptions o = OptionsFor(0);
  o.dir = dir_.Sub("second");
  EntryLog log;
  auto g = RaftGroup::Start(loops_[0].get(), o, &log);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().ToString().find("already runs on the transport at " + peers_[0].address),
            std::string::npos)
      << g.status().ToString();
  // The first one is untouched: with the others it elects a leader.
  StartReplica(1);
  StartReplica(2);
  ASSERT_GE(WaitForLeader(), 0);
  // Bad options are refused before anything starts, naming the field.
  RaftGroupOptions bad = OptionsFor(1);
  bad.id = 0;
  EXPECT_NE(RaftGroup::Start(loops_[1].get(), bad, &log).status().ToString().find("id"),
            std::string::npos);
  bad = OptionsFor(1);
  bad.segment_bytes = 1000;
  EXPECT_NE(RaftGroup::Start(loops_[1].get(), bad, &log).status().ToString().find("segment_bytes"),
            std::string::npos);
  bad = OptionsFor(1);
  bad.group = 0;
  EXPECT_NE(RaftGroup::Start(loops_[1].get(), bad, &log).status().ToString().find("group"),
            std::string::npos);
  bad = OptionsFor(1);
  bad.transport = transports_[0].get();  // another loop's
  EXPECT_NE(RaftGroup::Start(loops_[1].get(), bad, &log).status().ToString().find("transport"),
            std::string::npos);
}

TEST_F(RaftGroupTest, ClosingALeaderWithProposalsInFlightCompletesEveryOne) {
  for (int i = 0; i < kReplicas; ++i) StartReplica(i);
  const int leader = WaitForLeader();
  ASSERT_GE(leader, 0);
  Mutex mu;
  int done = 0, ok = 0;
  for (int n = 0; n < 40; ++n) {
    groups_[leader]->Propose("p" + std::to_string(n), [&](const Status& s, uint64_t) {
      MutexLock lock(&mu);
      ++done;
      if (s.ok()) ++ok;
    });
  }
  ASSERT_OK(groups_[leader]->Close());
  EXPECT_EQ(groups_[leader]->GetStatus().role, RaftRole::kUnavailable);
  EXPECT_EQ(groups_[leader]->ProposeAndWait("late").status().code(), StatusCode::kUnavailable);
  groups_[leader].reset();
  MutexLock lock(&mu);
  EXPECT_EQ(done, 40) << "every proposal's callback ran before Close returned";
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace grove::raft
