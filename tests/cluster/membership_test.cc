// Membership against a real etcd: registration, a name held by a live node, stop, a lost lease,
// and etcd going away and coming back.

#include "cluster/membership.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "cluster/etcd_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

using cluster::EtcdClient;
using cluster::Membership;
using cluster::MembershipOptions;

struct CountingListener : Membership::Listener {
  void OnRegistered(bool r) override { (r ? registered : lost)++; }
  void OnKeepAlive(bool answered) override { (answered ? keepalives : failures)++; }
  std::atomic<int> registered{0}, lost{0}, keepalives{0}, failures{0};
};

class MembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.path());
    ASSERT_NE(etcd_, nullptr);
    etcd_client_ = Client();
  }

  std::shared_ptr<EtcdClient> Client() {
    auto c = EtcdClient::Create({.endpoints = {etcd_->endpoint()}, .call_timeout_seconds = 1});
    EXPECT_TRUE(c.ok());
    return std::shared_ptr<EtcdClient>(std::move(*c));
  }

  static MembershipOptions Node(const std::string& name, int64_t ttl = 2) {
    return {.cluster = "test",
            .node_name = name,
            .advertise_address = "127.0.0.1:7" + std::to_string(name.size()),
            .lease_ttl_seconds = ttl,
            .version = "t"};
  }

  std::map<std::string, bool> Alive() {
    std::map<std::string, bool> out;
    auto nodes = cluster::ListNodes(etcd_client_.get(), "test");
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    if (nodes.ok()) {
      for (const auto& n : *nodes) out[n.name] = n.alive;
    }
    return out;
  }

  // Polls until `name`'s liveness is `alive`, for at most `timeout`.
  bool WaitAlive(const std::string& name, bool alive, std::chrono::seconds timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < give_up) {
      auto a = Alive();
      if (a.count(name) && a[name] == alive) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::shared_ptr<EtcdClient> etcd_client_;
};

TEST_F(MembershipTest, NodesRegisterAndStopIsSeenAtOnce) {
  CountingListener l;
  Membership a(Client(), Node("a"), nullptr, &l);
  Membership b(Client(), Node("bb"), nullptr, nullptr);
  ASSERT_OK(a.Start());
  ASSERT_OK(b.Start());
  EXPECT_TRUE(a.registered());
  EXPECT_EQ(l.registered.load(), 1);
  auto nodes = cluster::ListNodes(etcd_client_.get(), "test");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "a");
  EXPECT_EQ((*nodes)[0].address, "127.0.0.1:71");
  EXPECT_TRUE((*nodes)[0].alive);
  EXPECT_TRUE((*nodes)[1].alive);
  // Keep-alives hold the lease well past its 2 s.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_TRUE(Alive()["a"]);
  EXPECT_GE(l.keepalives.load(), 3);
  // Stop revokes the lease: down at once, still a member.
  a.Stop();
  auto after = Alive();
  ASSERT_TRUE(after.count("a"));
  EXPECT_FALSE(after["a"]);
  EXPECT_TRUE(after["bb"]);
}

TEST_F(MembershipTest, ANameHeldByALiveNodeIsRefused) {
  Membership a(Client(), Node("same"), nullptr, nullptr);
  ASSERT_OK(a.Start());
  Membership b(Client(), Node("same"), nullptr, nullptr);
  const auto start = std::chrono::steady_clock::now();
  Status s = b.Start();  // waits out a lease's life (2 s + 2 s) for the holder to go
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.ToString().find("cluster.node_name"), std::string::npos) << s.ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_FALSE(b.registered());
  EXPECT_TRUE(Alive()["same"]);
}

TEST_F(MembershipTest, ARestartAfterAKillWaitsForTheOldLease) {
  // A node that died without revoking (kill -9): its key lives until the lease expires.
  auto lease = etcd_client_->GrantLease(2);
  ASSERT_TRUE(lease.ok());
  ASSERT_OK(etcd_client_->Put(cluster::AliveKey("test", "r"), "old", *lease));
  Membership r(Client(), Node("r"), nullptr, nullptr);
  ASSERT_OK(r.Start());
  EXPECT_TRUE(r.registered());
  EXPECT_NE(r.lease(), *lease);
}

TEST_F(MembershipTest, ALostLeaseIsReplaced) {
  CountingListener l;
  Membership a(Client(), Node("a"), nullptr, &l);
  ASSERT_OK(a.Start());
  const int64_t first = a.lease();
  // Someone revokes the lease (an operator, or etcd expired it while the node was cut off).
  ASSERT_OK(etcd_client_->RevokeLease(first));
  ASSERT_TRUE(WaitAlive("a", false, std::chrono::seconds(5)));
  ASSERT_TRUE(WaitAlive("a", true, std::chrono::seconds(10))) << "the keeper did not re-register";
  EXPECT_NE(a.lease(), first);
  EXPECT_GE(l.lost.load(), 1);
  EXPECT_GE(l.registered.load(), 2);
}

TEST_F(MembershipTest, StartsWithoutEtcdAndRegistersWhenItComesBack) {
  etcd_->Kill();
  CountingListener l;
  Membership a(Client(), Node("late"), nullptr, &l);
  ASSERT_OK(a.Start());  // a node serves even when etcd is down
  EXPECT_FALSE(a.registered());
  ASSERT_TRUE(etcd_->Restart());
  ASSERT_TRUE(WaitAlive("late", true, std::chrono::seconds(15))) << etcd_->Log();
  EXPECT_TRUE(a.registered());
}

TEST_F(MembershipTest, SurvivesAShortEtcdOutage) {
  Membership a(Client(), Node("a", 6), nullptr, nullptr);
  ASSERT_OK(a.Start());
  etcd_->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(etcd_->Restart());
  // etcd extends every lease by its TTL when it restarts; the node keeps its lease.
  ASSERT_TRUE(WaitAlive("a", true, std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(a.registered());
  EXPECT_TRUE(Alive()["a"]);
}

TEST(MembershipNamesTest, BadNamesAreRefused) {
  EXPECT_OK(cluster::CheckNames("prod", "node-1"));
  EXPECT_FALSE(cluster::CheckNames("Prod", "n").ok());
  EXPECT_FALSE(cluster::CheckNames("p", "").ok());
  EXPECT_FALSE(cluster::CheckNames("p", "a/b").ok());
  EXPECT_FALSE(cluster::CheckNames("p", std::string(64, 'a')).ok());
}

}  // namespace
}  // namespace grove::testing
