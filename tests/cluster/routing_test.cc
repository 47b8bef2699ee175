// The client's cluster routing (client/lib/router.h) against two groved nodes and a real etcd:
// every call reaches the owner of its keys, batches are split or refused as documented, scans
// and range deletes cross ranges in both directions, and a client whose map went stale learns it
// from a node's refusal, reads the map again and resends.

#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "grove/client/client.h"

#include "cluster/etcd_process.h"
#include "cluster/shard_map.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

class RoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    cluster::EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    auto c = cluster::EtcdClient::Create(o);
    ASSERT_OK(c.status());
    etcd_client_ = std::move(*c);
    // alpha: [-inf, g) and [p, +inf); beta: [g, p).
    ASSERT_OK(cluster::CreateShardMap(etcd_client_.get(), "r", "alpha").status());
    ASSERT_OK(Edit([](cluster::ShardMap* m) { return m->Split("g"); }));
    ASSERT_OK(Edit([](cluster::ShardMap* m) { return m->Split("p"); }));
    ASSERT_OK(Edit([](cluster::ShardMap* m) { return m->Assign("g", "beta"); }));
    alpha_ = StartNode("alpha");
    ASSERT_NE(alpha_, nullptr);
    beta_ = StartNode("beta");
    ASSERT_NE(beta_, nullptr);
    client::ClientOptions co;
    co.address = "etcd://" + etcd_->endpoint() + "/r";
    ASSERT_TRUE(client::Client::Create(co, &client_).ok());
  }

  Status Edit(const std::function<Status(cluster::ShardMap*)>& edit) {
    return cluster::UpdateShardMap(etcd_client_.get(), "r", 0, edit).status();
  }

  std::unique_ptr<GrovedProcess> StartNode(const std::string& name) {
    GrovedConfig c;
    c.data_dir = dir_.Sub("data-" + name);
    c.grpc_port = PickFreePort();
    c.metrics_port = PickFreePort();
    c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
             "\"]\n  name: r\n  node_name: " + name +
             "\n  advertise_address: 127.0.0.1:" + std::to_string(c.grpc_port) +
             "\n  lease_ttl_seconds: 2\n";
    return GrovedProcess::Start(dir_.path(), c);
  }

  // Whether `node` itself answers `key` as present (its own engine, no routing).
  static bool Holds(GrovedProcess* node, const std::string& key) {
    auto kv = v1::KV::NewStub(Plaintext(node->address()));
    v1::GetRequest req;
    req.set_key(key);
    v1::GetResponse resp;
    return kv->Get(Ctx().get(), req, &resp).ok() && resp.found();
  }

  std::vector<std::string> ScanKeys(const client::ScanRange& range) {
    std::vector<std::string> keys;
    grpc::Status s = client_->Scan(range, [&](std::string_view k, std::string_view) {
      keys.emplace_back(k);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.error_message();
    return keys;
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<cluster::EtcdClient> etcd_client_;
  std::unique_ptr<GrovedProcess> alpha_, beta_;
  std::unique_ptr<client::Client> client_;
};

// Keys "a00".."z09": 26 first letters, ten each.
std::vector<std::string> Keys() {
  std::vector<std::string> keys;
  for (char c = 'a'; c <= 'z'; ++c) {
    for (int i = 0; i < 10; ++i) keys.push_back(std::string(1, c) + "0" + std::to_string(i));
  }
  return keys;
}

TEST_F(RoutingTest, EveryCallReachesTheOwnerOfItsKeys) {
  const std::vector<std::string> keys = Keys();
  for (const std::string& k : keys) ASSERT_TRUE(client_->Put(k, "v" + k).ok()) << k;
  for (const std::string& k : keys) {
    std::string v;
    bool found = false;
    ASSERT_TRUE(client_->Get(k, &v, &found).ok());
    EXPECT_TRUE(found) << k;
    EXPECT_EQ(v, "v" + k);
    const bool on_beta = k >= "g" && k < "p";
    EXPECT_EQ(Holds(beta_.get(), k), on_beta) << k;
    EXPECT_EQ(Holds(alpha_.get(), k), !on_beta) << k;
  }
  // BatchGet across both nodes, answers in the request's order.
  std::vector<std::string> ask = {"z05", "a01", "h03", "nope", "p00", "f09"};
  std::vector<std::optional<std::string>> got;
  ASSERT_TRUE(client_->BatchGet(ask, &got).ok());
  ASSERT_EQ(got.size(), ask.size());
  EXPECT_EQ(got[0], "vz05");
  EXPECT_EQ(got[1], "va01");
  EXPECT_EQ(got[2], "vh03");
  EXPECT_EQ(got[3], std::nullopt);
  EXPECT_EQ(got[4], "vp00");
  EXPECT_EQ(got[5], "vf09");

  // Scans cross ranges and nodes in both directions, with limits across a boundary.
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(ScanKeys({}), sorted);
  client::ScanRange rev;
  rev.reverse = true;
  std::vector<std::string> desc(sorted.rbegin(), sorted.rend());
  EXPECT_EQ(ScanKeys(rev), desc);
  client::ScanRange mid;
  mid.start = "f05";
  mid.end = "q";
  mid.limit = 20;
  mid.page_size = 3;
  std::vector<std::string> want(std::find(sorted.begin(), sorted.end(), "f05"),
                                std::find(sorted.begin(), sorted.end(), "f05") + 20);
  EXPECT_EQ(ScanKeys(mid), want);
  mid.reverse = true;
  mid.start = "f";
  mid.end = "p05";  // from p04 down, through beta's whole range into alpha's
  mid.limit = 0;
  std::vector<std::string> down;
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
    if (*it < "p05" && *it >= "f") down.push_back(*it);
  }
  EXPECT_EQ(ScanKeys(mid), down);

  // A batch within one range goes to its owner; one spanning ranges is refused, naming both.
  std::vector<client::Mutation> in_one = {{client::Mutation::Type::kPut, "h99", "x"},
                                          {client::Mutation::Type::kPut, "i99", "y"}};
  ASSERT_TRUE(client_->BatchInsert(in_one).ok());
  EXPECT_TRUE(Holds(beta_.get(), "i99"));
  std::vector<client::Mutation> spanning = {{client::Mutation::Type::kPut, "a99", "x"},
                                            {client::Mutation::Type::kPut, "z99", "y"}};
  grpc::Status s = client_->BatchInsert(spanning);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("mutations[1].key is in shard range [p, (end)), "
                                   "mutations[0].key in [(start), g)"),
            std::string::npos)
      << s.error_message();
  bool found = true;
  std::string v;
  ASSERT_TRUE(client_->Get("a99", &v, &found).ok());
  EXPECT_FALSE(found);

  // DeleteRange across the three ranges, first with a limit.
  client::DeleteRangeOutcome out;
  ASSERT_TRUE(client_->DeleteRange("e", "r", 25, &out).ok());
  EXPECT_EQ(out.deleted, 25u);
  EXPECT_TRUE(out.more);
  // Resuming from the outcome's own resume_key, with the outcome as the output.
  ASSERT_TRUE(client_->DeleteRange(out.resume_key, "r", 0, &out).ok());
  EXPECT_FALSE(out.more);
  std::vector<std::string> left;
  for (const std::string& k : sorted) {
    if (k < "e" || k >= "r") left.push_back(k);
  }
  EXPECT_EQ(ScanKeys({}), left);

  // Stats are per node; NodeStats gives each owner's.
  v1::StatsResponse one;
  EXPECT_EQ(client_->Stats(&one).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  std::vector<std::pair<std::string, v1::StatsResponse>> nodes;
  ASSERT_TRUE(client_->NodeStats(&nodes).ok());
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].first, "alpha");
  EXPECT_EQ(nodes[1].first, "beta");
}

TEST_F(RoutingTest, AStaleMapIsReadAgainAndTheCallResent) {
  ASSERT_TRUE(client_->Put("u01", "before").ok());  // the client now holds the map
  ASSERT_TRUE(Holds(alpha_.get(), "u01"));
  // [t, +inf) goes to beta (empty there: a move would copy it; not needed for this test).
  ASSERT_OK(Edit([](cluster::ShardMap* m) { return m->Split("t"); }));
  ASSERT_OK(Edit([](cluster::ShardMap* m) { return m->Assign("t", "beta"); }));
  // Once alpha has seen the change (a move makes sure of that before it switches owners; this
  // test changes the owner by hand), the client, which still routes u02 to alpha, is refused,
  // reads the map and resends to beta.
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    seen = HttpGet(alpha_->metrics_port(), "/metrics").body.find("grove_cluster_map_version 6") !=
           std::string::npos;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(seen);
  ASSERT_TRUE(client_->Put("u02", "after").ok());
  EXPECT_TRUE(Holds(beta_.get(), "u02"));
  EXPECT_FALSE(Holds(alpha_.get(), "u02"));
  std::string v;
  bool found = false;
  ASSERT_TRUE(client_->Get("u02", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "after");
  client::ScanRange rev;
  rev.reverse = true;
  rev.start = "t";
  EXPECT_EQ(ScanKeys(rev), std::vector<std::string>{"u02"});
}

TEST_F(RoutingTest, BadAddressesAreRefusedNamingTheField) {
  std::unique_ptr<client::Client> c;
  client::ClientOptions o;
  o.address = "etcd:///r";
  grpc::Status s = client::Client::Create(o, &c);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("address"), std::string::npos);
  o.address = "etcd://" + etcd_->endpoint() + "/Bad Name";
  EXPECT_EQ(client::Client::Create(o, &c).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  o.address = "etcd://" + etcd_->endpoint() + "/nomap";
  ASSERT_TRUE(client::Client::Create(o, &c).ok());
  std::string v;
  bool found = false;
  s = c->Get("k", &v, &found);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("has no shard map"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace grove::testing
