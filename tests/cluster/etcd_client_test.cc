// EtcdClient against a real etcd: reads, writes, compare-and-set, leases, and endpoints that
// do not answer.

#include "cluster/etcd_client.h"

#include <thread>

#include <gtest/gtest.h>

#include "cluster/etcd_process.h"
#include "service/groved_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

using cluster::EtcdClient;

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.path());
    ASSERT_NE(etcd_, nullptr);
    auto c = EtcdClient::Create({.endpoints = {etcd_->endpoint()}});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST(PrefixEndTest, IsTheSmallestKeyAfterThePrefix) {
  EXPECT_EQ(cluster::PrefixEnd("/a/"), "/a0");
  EXPECT_EQ(cluster::PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(cluster::PrefixEnd(std::string("\xff\xff", 2)), std::string(1, '\0'));
}

TEST_F(EtcdClientTest, PutGetAndPrefix) {
  ASSERT_OK(client_->Put("/t/b", "2"));
  ASSERT_OK(client_->Put("/t/a", "1"));
  ASSERT_OK(client_->Put("/u/c", "3"));
  auto a = client_->Get("/t/a");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->value, "1");
  EXPECT_GT((*a)->mod_revision, 0);
  auto none = client_->Get("/t/zz");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  int64_t rev = 0;
  auto t = client_->GetPrefix("/t/", &rev);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].key, "/t/a");
  EXPECT_EQ((*t)[1].key, "/t/b");
  EXPECT_GE(rev, (*t)[1].mod_revision);
  ASSERT_OK(client_->Delete("/t/a"));
  EXPECT_FALSE(client_->Get("/t/a")->has_value());
}

TEST_F(EtcdClientTest, PutIfUnchangedIsACompareAndSet) {
  // Absent: only the first of two creators wins.
  auto first = client_->PutIfUnchanged("/cas", "one", 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);
  auto second = client_->PutIfUnchanged("/cas", "two", 0);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
  EXPECT_EQ((*client_->Get("/cas"))->value, "one");
  // Two writers that read the same revision: the second is refused.
  const int64_t read = (*client_->Get("/cas"))->mod_revision;
  EXPECT_TRUE(*client_->PutIfUnchanged("/cas", "three", read));
  EXPECT_FALSE(*client_->PutIfUnchanged("/cas", "four", read));
  EXPECT_EQ((*client_->Get("/cas"))->value, "three");
}

TEST_F(EtcdClientTest, KeysUnderALeaseVanishWithIt) {
  auto lease = client_->GrantLease(5);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_OK(client_->Put("/leased", "x", *lease));
  EXPECT_EQ((*client_->Get("/leased"))->lease, *lease);
  auto ttl = client_->KeepAlive(*lease);
  ASSERT_TRUE(ttl.ok()) << ttl.status().ToString();
  EXPECT_GT(*ttl, 0);
  ASSERT_OK(client_->RevokeLease(*lease));
  EXPECT_FALSE(client_->Get("/leased")->has_value());
  auto gone = client_->KeepAlive(*lease);
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(*gone, 0) << "a revoked lease cannot be kept alive";
}

TEST_F(EtcdClientTest, AnEndpointThatDoesNotAnswerIsSkipped) {
  const std::string dead = "127.0.0.1:" + std::to_string(PickFreePort());
  auto c = EtcdClient::Create({.endpoints = {dead, etcd_->endpoint()}, .call_timeout_seconds = 2});
  ASSERT_TRUE(c.ok());
  ASSERT_OK((*c)->Put("/via-second", "ok"));
  EXPECT_EQ((*(*c)->Get("/via-second"))->value, "ok");

  auto all_dead = EtcdClient::Create({.endpoints = {dead}, .call_timeout_seconds = 1});
  ASSERT_TRUE(all_dead.ok());
  const auto start = std::chrono::steady_clock::now();
  Status s = (*all_dead)->Put("/x", "y");
  EXPECT_TRUE(s.IsUnavailable()) << s.ToString();
  EXPECT_NE(s.ToString().find(dead), std::string::npos) << "the message names the endpoint";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(EtcdClientOptionsTest, BadOptionsAreRefused) {
  EXPECT_FALSE(EtcdClient::Create({}).ok());
  EXPECT_FALSE(EtcdClient::Create({.endpoints = {""}}).ok());
  EXPECT_FALSE(EtcdClient::Create({.endpoints = {"127.0.0.1:1"}, .call_timeout_seconds = 0}).ok());
  auto missing_ca = EtcdClient::Create({.endpoints = {"127.0.0.1:1"}, .ca_file = "/nonexistent"});
  ASSERT_FALSE(missing_ca.ok());
  EXPECT_NE(missing_ca.status().ToString().find("ca_file"), std::string::npos);
}

}  // namespace
}  // namespace grove::testing
