// Three groved nodes replicating one range by Raft (docs/cluster.md, "Replicated ranges"): the
// leader serves it and the others refuse naming the leader, routing clients find the leader,
// a kill -9 of the leader leaves every acknowledged write readable at the next one, and a
// replica that comes back catches up and can carry the majority. grovectl lays the map out.

#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "grove/client/client.h"
#include "grove/v1/kv.grpc.pb.h"
#include "grove/v1/metadata.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/node_calls.h"
#include "cluster/replicated_cluster.h"
#include "cluster/shard_map.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

using Clock = std::chrono::steady_clock;

using GrovedReplicatedTest = ReplicatedClusterTest;

TEST_F(GrovedReplicatedTest, GrovectlLaysOutReplicasAndRefusesBadLayouts) {
  std::string out;
  EXPECT_EQ(Grovectl({"init", "--owner", "a", "--replicas", "a,b,a"}, &out), 2) << out;
  EXPECT_NE(out.find("nodes[2]"), std::string::npos) << out;
  EXPECT_EQ(
      Grovectl({"init", "--owner", "a", "--replicas", "a,b", "--replication-factor", "3"}, &out), 2)
      << out;
  EXPECT_NE(out.find("replication factor"), std::string::npos) << out;
  EXPECT_EQ(Grovectl({"init", "--owner", "a", "--replication-factor", "2"}, &out), 2) << out;
  EXPECT_EQ(Grovectl({"init", "--owner", "z", "--replicas", "a,b,c"}, &out), 2) << out;
  ASSERT_EQ(Grovectl({"init", "--owner", "a", "--split", "m=b", "--replicas", "a,b,c",
                      "--replication-factor", "2"},
                     &out),
            0)
      << out;
  EXPECT_NE(out.find("(replicas a, b)"), std::string::npos) << out;
  EXPECT_NE(out.find("(replicas b, c)"), std::string::npos) << out;
  ASSERT_EQ(Grovectl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("replicas b, c"), std::string::npos) << out;
  // Keys that are not UTF-8 in JSON status lines (text format) are replaced, not a crash.
  const std::vector<std::string> binary = {
      "cluster", "--etcd", etcd_->endpoint(), "--cluster", "binary", "--key-format", "hex"};
  std::vector<std::string> init = binary;
  init.insert(init.end(), {"init", "--owner", "a", "--split", "ff01=b", "--replicas", "a,b",
                           "--replication-factor", "2"});
  ASSERT_EQ(RunGrovectlInProcess(init, &out), 0) << out;
  ASSERT_EQ(RunGrovectlInProcess({"-o", "json", "cluster", "--etcd", etcd_->endpoint(), "--cluster",
                                  "binary", "status"},
                                 &out),
            0)
      << out;
  EXPECT_NE(out.find("\"replicas\""), std::string::npos) << out;
}

TEST_F(GrovedReplicatedTest, TheLeaderServesAndAKilledLeaderLosesNoAcknowledgedWrite) {
  for (const char* name : {"a", "b", "c"}) AddNode(name);
  std::string out;
  ASSERT_EQ(Grovectl({"init", "--owner", "a", "--replicas", "a,b,c"}, &out), 0) << out;
  for (const char* name : {"a", "b", "c"}) ASSERT_NO_FATAL_FAILURE(StartNode(name));

  std::string leader = FindLeader({"a", "b", "c"}, std::chrono::seconds(30));
  ASSERT_FALSE(leader.empty()) << nodes_["a"].process->Log();

  std::unique_ptr<client::Client> router = Router();
  std::map<std::string, std::string> acknowledged;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(
        PutEventually(router.get(), key, "v" + std::to_string(i), std::chrono::seconds(10)).ok());
    acknowledged[key] = "v" + std::to_string(i);
  }
  // A compare-and-set decided at apply time: the version read is the one a second set fails on.
  std::string value;
  bool found = false;
  client::ValueInfo info;
  ASSERT_TRUE(router->Get("k7", &value, &found, &info).ok());
  ASSERT_TRUE(found);
  client::WriteOptions cas;
  cas.precondition = client::Precondition::VersionEquals(info.version);
  ASSERT_TRUE(router->Put("k7", "cas-1", cas).ok());
  client::WriteOutcome lost;
  grpc::Status second = router->Put("k7", "cas-2", cas, &lost);
  EXPECT_EQ(second.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << second.error_message();
  EXPECT_GT(lost.failure.version, info.version);
  acknowledged["k7"] = "cas-1";

  // Per-group metrics: the leader leads range 1 and sees both followers; the others do not lead,
  // and every replica's engine holds the entries committed.
  const std::string leader_metrics =
      HttpGet(nodes_[leader].process->metrics_port(), "/metrics").body;
  EXPECT_NE(leader_metrics.find("grove_raft_leader{range=\"1\"} 1"), std::string::npos)
      << leader_metrics;
  EXPECT_NE(leader_metrics.find("grove_raft_follower_lag_entries{range=\"1\",replica=\""),
            std::string::npos);
  EXPECT_NE(leader_metrics.find("grove_raft_proposals_total{range=\"1\",result=\"committed\"}"),
            std::string::npos);
  // The reads above waited for barriers at the leader, at most one each.
  EXPECT_NE(leader_metrics.find("grove_raft_read_barriers_total{range=\"1\",kind=\"reads\"}"),
            std::string::npos)
      << leader_metrics;
  for (const char* name : {"a", "b", "c"}) {
    if (name == leader) continue;
    const std::string m = HttpGet(nodes_[name].process->metrics_port(), "/metrics").body;
    EXPECT_NE(m.find("grove_raft_leader{range=\"1\"} 0"), std::string::npos) << m;
    EXPECT_EQ(m.find("grove_raft_follower_lag_entries{"), std::string::npos)
        << "only the leader reports followers' lag";
  }
  // A batch and a range delete go through the group too.
  ASSERT_TRUE(router
                  ->BatchInsert({{client::Mutation::Type::kPut, "b1", "x"},
                                 {client::Mutation::Type::kPut, "b2", "y"},
                                 {client::Mutation::Type::kPut, "d1", "gone"},
                                 {client::Mutation::Type::kPut, "d2", "gone"}})
                  .ok());
  acknowledged["b1"] = "x";
  acknowledged["b2"] = "y";
  client::DeleteRangeOutcome deleted;
  ASSERT_TRUE(router->DeleteRange("d", "e", 0, &deleted).ok());
  EXPECT_EQ(deleted.deleted, 2u);

  // A stale read: any replica that heard from its leader lately serves it from its own engine and
  // says how stale it may be; a bound that is not a number is refused, naming the metadata.
  for (const char* name : {"a", "b", "c"}) {
    if (name == leader) continue;
    grpc::Status s;
    v1::GetResponse resp;
    std::string staleness;
    // Applied here soon after the leader acknowledged it.
    for (int i = 0; i < 100; ++i) {
      grpc::ClientContext ctx;
      ctx.AddMetadata(v1::kMaxStalenessMetadata, "5000");
      s = Get(name, "k7", &ctx, &resp);
      staleness = Trailer(ctx, v1::kStalenessMetadata);
      if (!s.ok() || resp.value() == "cas-1") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(s.ok()) << name << ": " << s.error_message();
    EXPECT_EQ(resp.value(), "cas-1");
    EXPECT_NE(staleness, "") << "the bound is said";
    grpc::ClientContext bad;
    bad.AddMetadata(v1::kMaxStalenessMetadata, "soon");
    s = Get(name, "k7", &bad, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(v1::kMaxStalenessMetadata), std::string::npos)
        << s.error_message();
  }
  {
    // A routing client that accepts staleness spreads its reads over the replicas.
    client::ClientOptions o;
    o.address = "etcd://" + etcd_->endpoint() + "/" + kCluster;
    o.metadata = {{v1::kMaxStalenessMetadata, "5000"}};
    std::unique_ptr<client::Client> stale;
    ASSERT_TRUE(client::Client::Create(o, &stale).ok());
    for (int i = 0; i < 30; ++i) {
      ASSERT_TRUE(stale->Get("k1", &value, &found).ok());
      EXPECT_TRUE(found);
    }
  }

  // Kill -9 the leader: a new one is elected and the acknowledged writes are all there.
  nodes_[leader].process->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[leader].process->Wait(std::chrono::seconds(10)).has_value());
  std::vector<std::string> up;
  for (const char* name : {"a", "b", "c"}) {
    if (name != leader) up.push_back(name);
  }
  const auto lost_at = Clock::now();
  ASSERT_TRUE(PutEventually(router.get(), "after", "failover", std::chrono::seconds(20)).ok());
  const auto failover =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - lost_at);
  acknowledged["after"] = "failover";
  std::cout << "first acknowledged write " << failover.count() << " ms after the leader's kill\n";
  for (const auto& [key, expected] : acknowledged) {
    ASSERT_TRUE(router->Get(key, &value, &found).ok()) << key;
    ASSERT_TRUE(found) << key;
    EXPECT_EQ(value, expected) << key;
  }
  ASSERT_TRUE(router->Get("d1", &value, &found).ok());
  EXPECT_FALSE(found);
  const std::string second_leader = FindLeader(up, std::chrono::seconds(10));
  ASSERT_FALSE(second_leader.empty());

  // The old leader comes back and catches up; then the second leader is killed: the old one and
  // the third now make the majority, so it must hold every acknowledged write.
  ASSERT_NO_FATAL_FAILURE(StartNode(leader));
  for (int i = 0; i < 50; ++i) {
    const std::string key = "r" + std::to_string(i);
    ASSERT_TRUE(PutEventually(router.get(), key, "back", std::chrono::seconds(10)).ok());
    acknowledged[key] = "back";
  }
  // Wait until the returned node names the leader: it has heard from it, and been sent the log.
  const auto caught_up_deadline = Clock::now() + std::chrono::seconds(20);
  std::string named;
  while (Clock::now() < caught_up_deadline) {
    std::string v;
    grpc::Status s = DirectGet(leader, "probe", &v, &named);
    if (s.error_code() == grpc::StatusCode::OUT_OF_RANGE && named == second_leader) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(named, second_leader);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // heartbeats carry the commit index
  nodes_[second_leader].process->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[second_leader].process->Wait(std::chrono::seconds(10)).has_value());
  ASSERT_TRUE(PutEventually(router.get(), "last", "write", std::chrono::seconds(20)).ok());
  acknowledged["last"] = "write";
  for (const auto& [key, expected] : acknowledged) {
    ASSERT_TRUE(router->Get(key, &value, &found).ok()) << key;
    ASSERT_TRUE(found) << key;
    EXPECT_EQ(value, expected) << key;
  }
}

}  // namespace
}  // namespace grove::testing
