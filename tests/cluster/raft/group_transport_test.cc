// GroupTransport on loopback: two groups on the same three nodes, one port per node, each group
// electing and committing its own entries; connections that do not greet properly (garbage, an
// unknown group, silence) are closed and counted while the groups go on; a group may start long
// after its peers dial it; a node that stops and comes back on its port is dialed again; Stop is
// refused while a group listens; bad options name the field.

#include "cluster/raft/group_transport.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/raft/raft_group.h"
#include "cluster/raft/raft_test_util.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"
#include "util/coding.h"

namespace grove::raft {
namespace {

using std::chrono::milliseconds;

class GroupTransportTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 3;
  static constexpr uint64_t kGroups[2] = {11, 12};

  void SetUp() override {
    for (int i = 0; i < kNodes; ++i) {
      auto loop = RaftLoop::Start();
      ASSERT_OK(loop.status());
      loops_.push_back(std::move(*loop));
      GroupTransportOptions o = LoopbackTransport();
      o.greeting_timeout_ms = 300;
      auto t = GroupTransport::Start(loops_.back().get(), o);
      ASSERT_OK(t.status());
      transports_.push_back(std::move(*t));
      peers_.push_back({static_cast<uint64_t>(i + 1), transports_.back()->address()});
    }
  }

  void TearDown() override {
    for (auto& g : groups_) {
      if (g) EXPECT_OK(g->Close());
    }
    groups_.clear();
    for (auto& t : transports_) {
      if (t) EXPECT_OK(t->Stop());
    }
    for (auto& l : loops_) l->Stop();
  }

  // Starts group `g` (an index of kGroups) on node `n`.
  void StartReplica(int g, int n) {
    RaftGroupOptions o;
    o.group = kGroups[g];
    o.id = peers_[n].id;
    o.transport = transports_[n].get();
    o.dir = dir_.Sub("g" + std::to_string(kGroups[g]) + "n" + std::to_string(n + 1));
    o.bootstrap = peers_;
    o.election_timeout_ms = 300;
    o.heartbeat_ms = 50;
    logs_[g][n] = std::make_unique<EntryLog>();
    auto started = RaftGroup::Start(loops_[n].get(), o, logs_[g][n].get());
    ASSERT_OK(started.status());
    groups_.push_back(std::move(*started));
    members_[g][n] = groups_.back().get();
  }

  // Proposes `entries` to group g's leader and waits until every replica applied them.
  void CommitAll(int g, const std::vector<std::string>& entries) {
    const int leader = WaitForLeaderOf(members_[g]);
    ASSERT_GE(leader, 0);
    for (const std::string& e : entries) {
      ASSERT_OK(members_[g][leader]->ProposeAndWait(e).status());
    }
    for (int n = 0; n < kNodes; ++n) {
      EXPECT_TRUE(WaitFor([&] { return logs_[g][n]->entries() == entries; }))
          << "group " << kGroups[g] << " node " << n + 1 << " applied "
          << logs_[g][n]->entries().size();
    }
  }

  // A raw connection to node n's port; -1 on failure.
  int Dial(int n) {
    const std::string& a = transports_[n]->address();
    const int port = std::stoi(a.substr(a.rfind(':') + 1));
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Whether the node closes `fd` within 3 s (a read sees end of file or a reset).
  static bool ClosedByPeer(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 3000) != 1) return false;
    char c;
    return read(fd, &c, 1) <= 0;
  }

  static std::string Greeting(uint64_t group, uint64_t sender, const std::string& address) {
    std::string g = "GRFT";
    PutFixed32(&g, 1);
    PutFixed64(&g, group);
    PutFixed64(&g, sender);
    PutFixed32(&g, static_cast<uint32_t>(address.size()));
    return g + address;
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<RaftLoop>> loops_;
  std::vector<std::unique_ptr<GroupTransport>> transports_;
  std::vector<RaftPeer> peers_;
  std::vector<std::unique_ptr<RaftGroup>> groups_;
  std::unique_ptr<EntryLog> logs_[2][kNodes];
  std::vector<RaftGroup*> members_[2] = {std::vector<RaftGroup*>(kNodes),
                                         std::vector<RaftGroup*>(kNodes)};
};

TEST_F(GroupTransportTest, TwoGroupsShareOnePortPerNodeAndKeepTheirEntriesApart) {
  for (int g = 0; g < 2; ++g) {
    for (int n = 0; n < kNodes; ++n) StartReplica(g, n);
  }
  CommitAll(0, {"a1", "a2", "a3"});
  CommitAll(1, {"b1", "b2"});
  // The same address leads or follows in both groups: one port per node.
  EXPECT_EQ(members_[0][0]->GetStatus().leader_address.empty(), false);
  for (int n = 0; n < kNodes; ++n) {
    const GroupTransportStats s = transports_[n]->stats();
    EXPECT_GE(s.accepted, 2u) << "node " << n + 1;  // at least one peer of each group dialed in
    EXPECT_EQ(s.bad_greeting, 0u) << "node " << n + 1;
  }
}

TEST_F(GroupTransportTest, ConnectionsThatDoNotGreetProperlyAreClosedAndTheGroupsGoOn) {
  for (int n = 0; n < kNodes; ++n) StartReplica(0, n);
  ASSERT_GE(WaitForLeaderOf(members_[0]), 0);
  const GroupTransportStats before = transports_[0]->stats();

  const int garbage = Dial(0);
  ASSERT_GE(garbage, 0);
  const std::string junk(40, 'x');
  ASSERT_EQ(write(garbage, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  EXPECT_TRUE(ClosedByPeer(garbage)) << "a greeting of another format";
  close(garbage);

  const int stranger = Dial(0);
  ASSERT_GE(stranger, 0);
  const std::string hello = Greeting(99, 5, "127.0.0.1:1");
  ASSERT_EQ(write(stranger, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  EXPECT_TRUE(ClosedByPeer(stranger)) << "a group that does not run here";
  close(stranger);

  const int silent = Dial(0);
  ASSERT_GE(silent, 0);
  const std::string half = Greeting(kGroups[0], 5, "127.0.0.1:1").substr(0, 10);
  ASSERT_EQ(write(silent, half.data(), half.size()), static_cast<ssize_t>(half.size()));
  EXPECT_TRUE(ClosedByPeer(silent)) << "a greeting that never ends (timeout 300 ms)";
  close(silent);

  const GroupTransportStats after = transports_[0]->stats();
  EXPECT_EQ(after.bad_greeting - before.bad_greeting, 2u);  // the garbage and the silent one
  EXPECT_EQ(after.unknown_group - before.unknown_group, 1u);
  CommitAll(0, {"still", "going"});
}

TEST_F(GroupTransportTest, AGroupStartedLongAfterItsPeersDialItJoinsThem) {
  StartReplica(0, 0);
  StartReplica(0, 1);
  ASSERT_GE(WaitForLeaderOf(members_[0]), 0);
  ASSERT_OK(members_[0][WaitForLeaderOf(members_[0])]->ProposeAndWait("before").status());
  // The leader has been dialing node 3 all along; its connections were closed as unknown.
  EXPECT_TRUE(WaitFor([&] { return transports_[2]->stats().unknown_group > 0; }));
  StartReplica(0, 2);
  EXPECT_TRUE(
      WaitFor([&] { return logs_[0][2]->entries() == std::vector<std::string>{"before"}; }));
}

// A node goes away, transport and all, and comes back on the same port: while it is away the
// others' dials fail (and are counted); once it is back they reach it again and it catches up.
TEST_F(GroupTransportTest, ANodeThatComesBackOnItsPortIsDialedAgain) {
  for (int n = 0; n < kNodes; ++n) StartReplica(0, n);
  CommitAll(0, {"one"});
  const int leader = WaitForLeaderOf(members_[0]);
  ASSERT_GE(leader, 0);
  const int away = (leader + 1) % kNodes;
  for (auto& g : groups_) {
    if (g.get() == members_[0][away]) {
      ASSERT_OK(g->Close());
      g.reset();
    }
  }
  members_[0][away] = nullptr;
  ASSERT_OK(transports_[away]->Stop());
  transports_[away].reset();
  const uint64_t failures = transports_[leader]->stats().dial_failures;
  ASSERT_OK(members_[0][leader]->ProposeAndWait("two").status());  // a majority is left
  EXPECT_TRUE(WaitFor([&] { return transports_[leader]->stats().dial_failures > failures; }))
      << "the leader's dials to the stopped node did not fail";

  GroupTransportOptions o = LoopbackTransport();
  o.bind_address = peers_[away].address;  // the same port
  auto back = GroupTransport::Start(loops_[away].get(), o);
  ASSERT_OK(back.status());
  transports_[away] = std::move(*back);
  RaftGroupOptions g;
  g.group = kGroups[0];
  g.id = peers_[away].id;
  g.transport = transports_[away].get();
  g.dir = dir_.Sub("g" + std::to_string(kGroups[0]) + "n" + std::to_string(away + 1));
  g.bootstrap = peers_;
  g.election_timeout_ms = 300;
  g.heartbeat_ms = 50;
  logs_[0][away] = std::make_unique<EntryLog>();
  auto restarted = RaftGroup::Start(loops_[away].get(), g, logs_[0][away].get());
  ASSERT_OK(restarted.status());
  groups_.push_back(std::move(*restarted));
  members_[0][away] = groups_.back().get();
  EXPECT_TRUE(WaitFor([&] {
    return logs_[0][away]->entries() == std::vector<std::string>{"one", "two"};
  })) << "applied "
      << logs_[0][away]->entries().size();
}

TEST_F(GroupTransportTest, StopIsRefusedWhileAGroupListensAndBadOptionsNameTheField) {
  StartReplica(0, 0);
  const Status refused = transports_[0]->Stop();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.ToString().find("groups still listen on it (1)"), std::string::npos)
      << refused.ToString();

  GroupTransportOptions o = LoopbackTransport();
  o.bind_address = peers_[0].address;
  auto taken = GroupTransport::Start(loops_[1].get(), o);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.status().ToString().find(peers_[0].address), std::string::npos)
      << taken.status().ToString();
  for (const std::string bad : {"127.0.0.1", ":7500", "host:port", "127.0.0.1:99999"}) {
    o.bind_address = bad;
    auto t = GroupTransport::Start(loops_[1].get(), o);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(t.status().ToString().find("bind_address"), std::string::npos) << bad;
  }
  o = LoopbackTransport();
  o.advertise_address = "nohost";
  auto t = GroupTransport::Start(loops_[1].get(), o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("advertise_address"), std::string::npos);
  // An advertised address is what peers are told, whatever was bound.
  o.advertise_address = "node-2:7500";
  auto advertised = GroupTransport::Start(loops_[1].get(), o);
  ASSERT_OK(advertised.status());
  EXPECT_EQ((*advertised)->address(), "node-2:7500");
  EXPECT_OK((*advertised)->Stop());
}

}  // namespace
}  // namespace grove::raft
