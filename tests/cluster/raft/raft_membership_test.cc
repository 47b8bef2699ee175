// RaftGroup's configuration changes on loopback: a replica started without state joins as a
// standby, receives the log, then votes; leadership passes to it; a removed replica leaves the
// majority to the others; each change refuses what it cannot do (on a follower, removing the
// leader itself, a transfer to a non-voter, an address that does not match) and one change at a
// time runs.

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/raft/raft_group.h"
#include "cluster/raft/raft_test_util.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::raft {
namespace {

Status Wait(const std::function<void(RaftGroup::Done)>& start) {
  auto result = std::make_shared<std::promise<Status>>();
  std::future<Status> f = result->get_future();
  start([result](const Status& s, uint64_t) { result->set_value(s); });
  return f.get();
}

const RaftMember* MemberOf(const RaftStatus& s, uint64_t id) {
  for (const RaftMember& m : s.members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

class RaftMembershipTest : public ::testing::Test {
 protected:
  static constexpr int kSlots = 4;  // three voters at bootstrap, one to add

  void SetUp() override {
    for (int i = 0; i < kSlots; ++i) {
      auto loop = RaftLoop::Start();
      ASSERT_OK(loop.status());
      loops_.push_back(std::move(*loop));
      auto transport = GroupTransport::Start(loops_.back().get(), LoopbackTransport());
      ASSERT_OK(transport.status());
      transports_.push_back(std::move(*transport));
      logs_.push_back(std::make_unique<EntryLog>());
    }
    groups_.resize(kSlots);
  }

  void TearDown() override {
    for (auto& g : groups_) {
      if (g) EXPECT_OK(g->Close());
    }
    groups_.clear();
    for (auto& t : transports_) EXPECT_OK(t->Stop());
    for (auto& l : loops_) l->Stop();
  }

  uint64_t Id(int i) const { return static_cast<uint64_t>(i + 1); }
  std::string Address(int i) const { return transports_[i]->address(); }

  void StartReplica(int i, bool bootstrap) {
    RaftGroupOptions o;
    o.group = 9;
    o.id = Id(i);
    o.transport = transports_[i].get();
    o.dir = dir_.Sub("replica" + std::to_string(i + 1));
    if (bootstrap) {
      for (int k = 0; k < 3; ++k) o.bootstrap.push_back({Id(k), Address(k)});
    }
    o.election_timeout_ms = 300;
    o.heartbeat_ms = 50;
    auto g = RaftGroup::Start(loops_[i].get(), o, logs_[i].get());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    groups_[i] = std::move(*g);
  }

  std::vector<std::string> Propose(int leader, int n, const std::string& prefix) {
    std::vector<std::string> out;
    for (int k = 0; k < n; ++k) {
      out.push_back(prefix + std::to_string(k));
      EXPECT_OK(groups_[leader]->ProposeAndWait(out.back()).status());
    }
    return out;
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<RaftLoop>> loops_;
  std::vector<std::unique_ptr<GroupTransport>> transports_;
  std::vector<std::unique_ptr<EntryLog>> logs_;
  std::vector<std::unique_ptr<RaftGroup>> groups_;
};

TEST_F(RaftMembershipTest, AJoiningReplicaCatchesUpAsAStandbyVotesLeadsAndTheRemovedOneIsLeftOut) {
  for (int i = 0; i < 3; ++i) StartReplica(i, /*bootstrap=*/true);
  StartReplica(3, /*bootstrap=*/false);
  const int leader = WaitForLeaderOf(groups_);
  ASSERT_GE(leader, 0);
  ASSERT_LT(leader, 3);
  std::vector<std::string> want = Propose(leader, 30, "a");

  // Without state and outside every configuration, the new replica holds nothing.
  RaftStatus joining = groups_[3]->GetStatus();
  EXPECT_TRUE(joining.members.empty());
  EXPECT_FALSE(joining.voter);

  ASSERT_OK(Wait([&](RaftGroup::Done d) {
    groups_[leader]->SetRole(Id(3), Address(3), MemberRole::kStandby, std::move(d));
  }));
  ASSERT_TRUE(WaitFor([&] { return logs_[3]->entries().size() >= want.size(); }));
  EXPECT_EQ(logs_[3]->entries(), want);
  RaftStatus s = groups_[leader]->GetStatus();
  ASSERT_NE(MemberOf(s, Id(3)), nullptr);
  EXPECT_EQ(MemberOf(s, Id(3))->role, MemberRole::kStandby);
  EXPECT_EQ(MemberOf(s, Id(3))->address, Address(3));
  // The same role again is nothing to do.
  EXPECT_OK(Wait([&](RaftGroup::Done d) {
    groups_[leader]->SetRole(Id(3), Address(3), MemberRole::kStandby, std::move(d));
  }));

  ASSERT_OK(Wait([&](RaftGroup::Done d) {
    groups_[leader]->SetRole(Id(3), Address(3), MemberRole::kVoter, std::move(d));
  }));
  ASSERT_TRUE(WaitFor([&] { return groups_[3]->GetStatus().voter; }));
  EXPECT_EQ(MemberOf(groups_[leader]->GetStatus(), Id(3))->role, MemberRole::kVoter);

  // Leadership passes to the new voter.
  ASSERT_OK(Wait([&](RaftGroup::Done d) { groups_[leader]->Transfer(Id(3), std::move(d)); }));
  EXPECT_EQ(groups_[3]->GetStatus().role, RaftRole::kLeader);
  for (const std::string& e : Propose(3, 10, "b")) want.push_back(e);

  // The old leader leaves; the three others commit without it.
  ASSERT_OK(Wait([&](RaftGroup::Done d) { groups_[3]->Remove(Id(leader), std::move(d)); }));
  s = groups_[3]->GetStatus();
  EXPECT_EQ(s.members.size(), 3u);
  EXPECT_EQ(MemberOf(s, Id(leader)), nullptr);
  ASSERT_OK(groups_[leader]->Close());
  groups_[leader].reset();
  const size_t before = logs_[leader]->entries().size();
  for (const std::string& e : Propose(3, 10, "c")) want.push_back(e);
  for (int i = 0; i < kSlots; ++i) {
    if (!groups_[i]) continue;
    ASSERT_TRUE(WaitFor([&] { return logs_[i]->entries().size() >= want.size(); }));
    EXPECT_EQ(logs_[i]->entries(), want) << "replica " << Id(i);
  }
  EXPECT_LT(before, want.size());
}

TEST_F(RaftMembershipTest, ChangesRefuseWhatTheyCannotDoAndRunOneAtATime) {
  for (int i = 0; i < 3; ++i) StartReplica(i, /*bootstrap=*/true);
  const int leader = WaitForLeaderOf(groups_);
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % 3;
  auto set_role = [&](int at, uint64_t id, std::string address, MemberRole role) {
    return Wait([&](RaftGroup::Done d) {
      groups_[at]->SetRole(id, std::move(address), role, std::move(d));
    });
  };

  Status s = set_role(follower, Id(3), Address(3), MemberRole::kStandby);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.ToString().find("not the leader"), std::string::npos) << s.ToString();
  s = Wait([&](RaftGroup::Done d) { groups_[leader]->Remove(Id(leader), std::move(d)); });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.ToString().find("transfer leadership"), std::string::npos) << s.ToString();
  s = Wait([&](RaftGroup::Done d) { groups_[leader]->Transfer(99, std::move(d)); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = set_role(leader, 99, "", MemberRole::kStandby);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = set_role(leader, Id(follower), Address(3), MemberRole::kVoter);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  // Removing one that is not in, and transferring to itself, are nothing to do.
  EXPECT_OK(Wait([&](RaftGroup::Done d) { groups_[leader]->Remove(42, std::move(d)); }));
  EXPECT_OK(Wait([&](RaftGroup::Done d) { groups_[leader]->Transfer(Id(leader), std::move(d)); }));

  // Two changes asked at once: the second finds the first's configuration uncommitted.
  auto first = std::make_shared<std::promise<Status>>();
  auto second = std::make_shared<std::promise<Status>>();
  groups_[leader]->SetRole(Id(3), Address(3), MemberRole::kSpare,
                           [first](const Status& st, uint64_t) { first->set_value(st); });
  groups_[leader]->SetRole(50, "127.0.0.1:9", MemberRole::kSpare,
                           [second](const Status& st, uint64_t) { second->set_value(st); });
  EXPECT_OK(first->get_future().get());
  s = second->get_future().get();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  // A spare is no voter: it cannot lead.
  s = Wait([&](RaftGroup::Done d) { groups_[leader]->Transfer(Id(3), std::move(d)); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_OK(Wait([&](RaftGroup::Done d) { groups_[leader]->Remove(Id(3), std::move(d)); }));
  EXPECT_EQ(groups_[leader]->GetStatus().members.size(), 3u);
}

}  // namespace
}  // namespace grove::raft
