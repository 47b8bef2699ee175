// Changing a replicated range's replicas with grovectl against three groved nodes (docs/cluster.md,
// "Changing a range's replicas"): a replica added on a third node catches up by a snapshot
// install while writes go on and then votes; leadership passes to it and it serves every
// acknowledged write; a removed replica stops and drops its copy; a move of a replicated range
// is add, transfer and remove; bad requests are refused naming what is wrong.

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "grove/client/client.h"
#include "grove/v1/kv.grpc.pb.h"

#include "cluster/replicated_cluster.h"
#include "testutil/status_macros.h"
#include "util/mutex.h"

namespace grove::testing {
namespace {

bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

class GrovedMembershipTest : public ReplicatedClusterTest {
 protected:
  // Every key of `want` reads back its value at node `name` (it must lead the range).
  void ExpectServes(const std::string& name, const std::map<std::string, std::string>& want) {
    int wrong = 0;
    for (const auto& [key, value] : want) {
      grpc::ClientContext ctx;
      v1::GetResponse resp;
      grpc::Status s = Get(name, key, &ctx, &resp);
      if (!s.ok() || !resp.found() || resp.value() != value) {
        if (++wrong <= 3) {
          ADD_FAILURE() << name << ": " << key << ": " << s.error_message() << " found "
                        << resp.found() << " '" << resp.value() << "' want '" << value << "'";
        }
      }
    }
    EXPECT_EQ(wrong, 0) << "of " << want.size() << " keys at " << name;
  }

  std::string RaftDir(const std::string& name) { return dir_.Sub("data-" + name) + "/raft"; }
  int ReplicaDirs(const std::string& name) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(RaftDir(name), ec)) {
      n += e.path().filename().string().rfind("range-", 0) == 0 ? 1 : 0;
    }
    return n;
  }
};

TEST_F(GrovedMembershipTest, AReplicaIsAddedUnderWritesLeadsAndTheOldOnesAreRemoved) {
  // Snapshots every 32 entries: the added replica finds the log truncated and installs the
  // range from another replica.
  raft_extra_ = "    snapshot_threshold: 32\n    snapshot_trailing: 8\n";
  for (const char* name : {"a", "b", "c"}) AddNode(name);
  std::string out;
  ASSERT_EQ(
      Grovectl({"init", "--owner", "a", "--replicas", "a,b,c", "--replication-factor", "2"}, &out),
      0)
      << out;
  for (const char* name : {"a", "b", "c"}) ASSERT_NO_FATAL_FAILURE(StartNode(name));
  ASSERT_FALSE(FindLeader({"a", "b"}, std::chrono::seconds(30)).empty())
      << nodes_["a"].process->Log();

  std::unique_ptr<client::Client> router = Router();
  std::map<std::string, std::string> acknowledged;
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(
        PutEventually(router.get(), key, "v" + std::to_string(i), std::chrono::seconds(10)).ok());
    acknowledged[key] = "v" + std::to_string(i);
  }

  // Refusals first: nothing changes.
  EXPECT_EQ(Grovectl({"add-replica", "", "nosuch"}, &out), 2) << out;
  EXPECT_NE(out.find("no node 'nosuch'"), std::string::npos) << out;
  EXPECT_EQ(Grovectl({"remove-replica", "", "c"}, &out), 2) << out;
  EXPECT_NE(out.find("holds no replica"), std::string::npos) << out;
  EXPECT_EQ(Grovectl({"transfer-leader", "k5", "b"}, &out), 2) << out;
  EXPECT_NE(out.find("no range starts at"), std::string::npos) << out;

  // Writes go on through the router while c joins.
  std::atomic<bool> stop{false};
  Mutex mu;
  std::map<std::string, std::string> during;
  std::thread writer([&] {
    std::unique_ptr<client::Client> w = Router();
    for (int i = 0; !stop.load() && i < 100000; ++i) {
      const std::string key = "w" + std::to_string(i);
      if (w->Put(key, "x" + std::to_string(i)).ok()) {
        MutexLock lock(&mu);
        during[key] = "x" + std::to_string(i);
      }
    }
  });
  const int added = Grovectl({"add-replica", "", "c"}, &out);
  stop = true;
  writer.join();
  ASSERT_EQ(added, 0) << out << nodes_["c"].process->Log();
  std::cout << out;
  EXPECT_NE(out.find("votes"), std::string::npos) << out;
  EXPECT_NE(nodes_["c"].process->Log().find("installing the range"), std::string::npos)
      << nodes_["c"].process->Log();
  ASSERT_EQ(Grovectl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("replicas a, b, c"), std::string::npos) << out;
  // Asked again, it is there already.
  EXPECT_EQ(Grovectl({"add-replica", "", "c"}, &out), 0) << out;

  ASSERT_EQ(Grovectl({"transfer-leader", "", "c"}, &out), 0) << out;
  EXPECT_NE(out.find("c leads"), std::string::npos) << out;
  {
    MutexLock lock(&mu);
    EXPECT_GT(during.size(), 0u);
    for (const auto& kv : during) acknowledged.insert(kv);
  }
  ExpectServes("c", acknowledged);

  // a leaves the group: it stops its replica and drops its copy and log.
  ASSERT_EQ(ReplicaDirs("a"), 1);
  ASSERT_EQ(Grovectl({"remove-replica", "", "a"}, &out), 0) << out;
  EXPECT_TRUE(WaitFor([&] { return ReplicaDirs("a") == 0; }, std::chrono::seconds(15)))
      << nodes_["a"].process->Log();
  EXPECT_NE(nodes_["a"].process->Log().find("its keys and Raft log here dropped"),
            std::string::npos);
  {
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    EXPECT_FALSE(Get("a", "k1", &ctx, &resp).ok()) << "a serves a range it left";
  }
  for (int i = 0; i < 20; ++i) {
    const std::string key = "after-remove-" + std::to_string(i);
    ASSERT_TRUE(PutEventually(router.get(), key, "r", std::chrono::seconds(10)).ok());
    acknowledged[key] = "r";
  }

  // A move of the replicated range: b's replica goes to a (a new replica there, leading).
  ASSERT_EQ(Grovectl({"move", "", "a", "--from", "b"}, &out), 0) << out;
  EXPECT_NE(out.find("moved range"), std::string::npos) << out;
  ASSERT_EQ(Grovectl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("replicas c, a"), std::string::npos) << out;
  EXPECT_TRUE(WaitFor([&] { return ReplicaDirs("b") == 0; }, std::chrono::seconds(15)));
  ExpectServes("a", acknowledged);
  std::string value;
  bool found = false;
  ASSERT_TRUE(router->Get("after-remove-3", &value, &found).ok());
  EXPECT_TRUE(found);
}

TEST_F(GrovedMembershipTest, ARemovedReplicaThatWasDownDropsItsCopyWhenItComesBack) {
  for (const char* name : {"a", "b", "c"}) AddNode(name);
  std::string out;
  ASSERT_EQ(Grovectl({"init", "--owner", "a", "--replicas", "a,b,c"}, &out), 0) << out;
  for (const char* name : {"a", "b", "c"}) ASSERT_NO_FATAL_FAILURE(StartNode(name));
  const std::string leader = FindLeader({"a", "b", "c"}, std::chrono::seconds(30));
  ASSERT_FALSE(leader.empty());
  std::unique_ptr<client::Client> router = Router();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(
        PutEventually(router.get(), "k" + std::to_string(i), "v", std::chrono::seconds(10)).ok());
  }
  // A follower is down while it is removed.
  const std::string gone = leader == "c" ? "b" : "c";
  ASSERT_TRUE(WaitFor([&] { return ReplicaDirs(gone) == 1; }));
  nodes_[gone].process->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[gone].process->Wait(std::chrono::seconds(10)).has_value());
  ASSERT_EQ(Grovectl({"remove-replica", "", gone}, &out), 0) << out;
  ASSERT_NO_FATAL_FAILURE(StartNode(gone));
  EXPECT_TRUE(WaitFor([&] { return ReplicaDirs(gone) == 0; }, std::chrono::seconds(20)))
      << nodes_[gone].process->Log();
  EXPECT_NE(nodes_[gone].process->Log().find("is not in the shard map for this node"),
            std::string::npos)
      << nodes_[gone].process->Log();
  // The two left commit.
  ASSERT_TRUE(PutEventually(router.get(), "later", "v", std::chrono::seconds(10)).ok());
}

TEST_F(GrovedMembershipTest, AReplicatedRangeSplitsUnderWritesAndAReplicaAwayInstallsItsHalf) {
  for (const char* name : {"a", "b", "c"}) AddNode(name);
  std::string out;
  ASSERT_EQ(Grovectl({"init", "--owner", "a", "--replicas", "a,b,c"}, &out), 0) << out;
  for (const char* name : {"a", "b", "c"}) ASSERT_NO_FATAL_FAILURE(StartNode(name));
  const std::string leader = FindLeader({"a", "b", "c"}, std::chrono::seconds(30));
  ASSERT_FALSE(leader.empty());
  std::unique_ptr<client::Client> router = Router();
  std::map<std::string, std::string> acknowledged;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(1000 + i);  // k1000..k1199
    ASSERT_TRUE(
        PutEventually(router.get(), key, "v" + std::to_string(i), std::chrono::seconds(10)).ok());
    acknowledged[key] = "v" + std::to_string(i);
  }
  // A follower is away during the split: it learns of it from the log when it comes back, and
  // holds none of the new range's first state.
  const std::string away = leader == "c" ? "b" : "c";
  nodes_[away].process->Signal(SIGKILL);
  ASSERT_TRUE(nodes_[away].process->Wait(std::chrono::seconds(10)).has_value());

  std::atomic<bool> stop{false};
  Mutex mu;
  std::map<std::string, std::string> during;
  std::thread writer([&] {
    std::unique_ptr<client::Client> w = Router();
    for (int i = 0; !stop.load() && i < 100000; ++i) {
      const std::string key = "k" + std::to_string(1000 + i % 200);
      const std::string value = "w" + std::to_string(i);
      if (w->Put(key, value).ok()) {
        MutexLock lock(&mu);
        during[key] = value;
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int split = Grovectl({"split", "k1100"}, &out);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  writer.join();
  ASSERT_EQ(split, 0) << out << nodes_[leader].process->Log();
  std::cout << out;
  ASSERT_EQ(Grovectl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("k1100"), std::string::npos) << out;
  {
    MutexLock lock(&mu);
    for (const auto& [k, v] : during) acknowledged[k] = v;
  }
  // Both halves serve every acknowledged write, and take new ones.
  for (const auto& [key, want] : acknowledged) {
    std::string value;
    bool found = false;
    ASSERT_TRUE(router->Get(key, &value, &found).ok()) << key;
    EXPECT_TRUE(found) << key;
    EXPECT_EQ(value, want) << key;
  }
  for (const std::string key : {"k1050", "k1150", "zz"}) {
    ASSERT_TRUE(PutEventually(router.get(), key, "after-split", std::chrono::seconds(10)).ok())
        << key;
    acknowledged[key] = "after-split";
  }
  // A write across the split point is two ranges now.
  EXPECT_FALSE(router
                   ->BatchInsert({client::Mutation(client::Mutation::Type::kPut, "k1001", "x"),
                                  client::Mutation(client::Mutation::Type::kPut, "k1101", "x")})
                   .ok());

  // The replica that was away comes back and leads the right half: it installed that half's
  // first state from another replica.
  ASSERT_NO_FATAL_FAILURE(StartNode(away));
  ASSERT_EQ(Grovectl({"transfer-leader", "k1100", away}, &out), 0) << out;
  ASSERT_EQ(Grovectl({"transfer-leader", "", away}, &out), 0) << out;
  std::map<std::string, std::string> right, left;
  for (const auto& [key, value] : acknowledged) (key >= "k1100" ? right : left)[key] = value;
  ExpectServes(away, right);
  ExpectServes(away, left);
  const std::string log = nodes_[away].process->Log();
  EXPECT_NE(log.find("replica of range 2 is behind a snapshot: installing"), std::string::npos)
      << log;
}

}  // namespace
}  // namespace grove::testing
