// Two groved nodes of one cluster with a shard map in etcd: each serves its own ranges, refuses
// the other's keys with OUT_OF_RANGE and its map version, narrows scans to its range with the
// boundary in trailing metadata, follows map changes made with grovectl, refuses keys until it
// knows a map, and exports the ownership metrics.

#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "grove/v1/metadata.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/shard_map.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

class GrovedOwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    cluster::EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    auto c = cluster::EtcdClient::Create(o);
    ASSERT_OK(c.status());
    etcd_client_ = std::move(*c);
  }

  std::unique_ptr<GrovedProcess> StartNode(const std::string& name) {
    GrovedConfig c;
    c.data_dir = dir_.Sub("data-" + name);
    c.grpc_port = PickFreePort();
    c.metrics_port = PickFreePort();
    c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
             "\"]\n  name: own\n  node_name: " + name +
             "\n  advertise_address: 127.0.0.1:" + std::to_string(c.grpc_port) +
             "\n  lease_ttl_seconds: 2\n";
    return GrovedProcess::Start(dir_.path(), c);
  }

  int Grovectl(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {"cluster", "--etcd", etcd_->endpoint(), "--cluster", "own"});
    return RunGrovectlInProcess(args, out);
  }

  static grpc::Status Put(v1::KV::Stub* kv, const std::string& key, grpc::ClientContext* ctx) {
    v1::PutRequest req;
    req.set_key(key);
    req.set_value("v-" + key);
    v1::PutResponse resp;
    return kv->Put(ctx, req, &resp);
  }
  static std::string Trailer(const grpc::ClientContext& ctx, const std::string& key) {
    const auto& md = ctx.GetServerTrailingMetadata();
    auto it = md.find(key);
    return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
  }
  // Keys of a scan and the boundary it stopped at ("" when none).
  static std::vector<std::string> Scan(v1::KV::Stub* kv, const std::string& start,
                                       const std::string& end, bool reverse,
                                       std::string* stopped_at, grpc::Status* status) {
    v1::ScanRequest req;
    req.set_start(start);
    req.set_end(end);
    req.set_reverse(reverse);
    auto ctx = Ctx();
    auto reader = kv->Scan(ctx.get(), req);
    std::vector<std::string> keys;
    v1::ScanResponse msg;
    while (reader->Read(&msg)) {
      for (const auto& e : msg.entries()) keys.push_back(e.key());
    }
    *status = reader->Finish();
    *stopped_at = Trailer(*ctx, v1::kScanStoppedAtMetadata);
    return keys;
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<cluster::EtcdClient> etcd_client_;
};

// Inside a Batch stream each sub-request is checked on its own: a key of the other node is
// refused with the unary call's code, message and metadata, the rest of the message is served.
TEST_F(GrovedOwnershipTest, BatchSubRequestsAreCheckedOneByOne) {
  std::string out;
  ASSERT_EQ(Grovectl({"init", "--owner", "alpha"}, &out), 0) << out;
  ASSERT_EQ(Grovectl({"split", "m"}, &out), 0) << out;
  ASSERT_OK(cluster::UpdateShardMap(etcd_client_.get(), "own", 0, [](cluster::ShardMap* m) {
              return m->Assign("m", "beta");
            }).status());
  auto alpha = StartNode("alpha");
  ASSERT_NE(alpha, nullptr);
  auto a = v1::KV::NewStub(Plaintext(alpha->address()));
  auto ctx = Ctx();
  auto stream = a->Batch(ctx.get());
  v1::BatchRequest request;
  for (const std::string k : {"apple", "peach"}) {
    v1::SubRequest* r = request.add_requests();
    r->set_tag(r == request.mutable_requests(0) ? 1 : 2);
    r->mutable_put()->set_key(k);
    r->mutable_put()->set_value("v-" + k);
  }
  ASSERT_TRUE(stream->Write(request));
  std::map<uint64_t, v1::SubResult> results;
  v1::BatchResponse response;
  while (results.size() < 2 && stream->Read(&response)) {
    for (const v1::SubResult& r : response.results()) results[r.tag()] = r;
  }
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].status().code(), 0) << results[1].status().message();
  EXPECT_EQ(results[2].status().code(), static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  EXPECT_NE(results[2].status().message().find("owned by node 'beta' at shard map version 3"),
            std::string::npos)
      << results[2].status().message();
  EXPECT_EQ(results[2].status().metadata().at(v1::kNotOwnerMetadata), "1");
  EXPECT_EQ(results[2].status().metadata().at(v1::kMapVersionMetadata), "3");
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GrovedOwnershipTest, EachNodeServesItsRangesAndRefusesTheOthers) {
  std::string out;
  ASSERT_EQ(Grovectl({"init", "--owner", "alpha"}, &out), 0) << out;
  ASSERT_EQ(Grovectl({"split", "m"}, &out), 0) << out;
  EXPECT_NE(out.find("map version 2"), std::string::npos) << out;
  // No data lives anywhere yet: hand [m, +inf) to beta directly (a move copies data; see
  // docs/cluster.md).
  ASSERT_OK(cluster::UpdateShardMap(etcd_client_.get(), "own", 0, [](cluster::ShardMap* m) {
              return m->Assign("m", "beta");
            }).status());
  auto alpha = StartNode("alpha");
  ASSERT_NE(alpha, nullptr);
  auto beta = StartNode("beta");
  ASSERT_NE(beta, nullptr);
  auto a = v1::KV::NewStub(Plaintext(alpha->address()));
  auto b = v1::KV::NewStub(Plaintext(beta->address()));

  for (const std::string k : {"apple", "kiwi", "lime"}) {
    EXPECT_TRUE(Put(a.get(), k, Ctx().get()).ok());
  }
  for (const std::string k : {"mango", "peach", "zucchini"}) {
    EXPECT_TRUE(Put(b.get(), k, Ctx().get()).ok());
  }
  {
    auto ctx = Ctx();
    grpc::Status s = Put(a.get(), "peach", ctx.get());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_NE(s.error_message().find("owned by node 'beta' at shard map version 3"),
              std::string::npos)
        << s.error_message();
    EXPECT_EQ(Trailer(*ctx, v1::kNotOwnerMetadata), "1");
    EXPECT_EQ(Trailer(*ctx, v1::kMapVersionMetadata), "3");
  }
  {
    v1::GetRequest req;
    req.set_key("apple");
    v1::GetResponse resp;
    EXPECT_EQ(b->Get(Ctx().get(), req, &resp).error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_TRUE(a->Get(Ctx().get(), req, &resp).ok());
    EXPECT_EQ(resp.value(), "v-apple");
  }
  {
    v1::BatchInsertRequest req;
    for (const std::string k : {"banana", "melon"}) {
      v1::Mutation* m = req.add_mutations();
      m->set_key(k);
      m->set_type(v1::Mutation::PUT);
      m->set_value("x");
    }
    v1::BatchInsertResponse resp;
    grpc::Status s = a->BatchInsert(Ctx().get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_NE(s.error_message().find("mutations[1].key 'melon'"), std::string::npos)
        << s.error_message();
    v1::GetRequest g;
    g.set_key("banana");
    v1::GetResponse gr;
    ASSERT_TRUE(a->Get(Ctx().get(), g, &gr).ok());
    EXPECT_FALSE(gr.found()) << "nothing of a refused batch is applied";
  }
  {
    v1::DeleteRangeRequest req;
    req.set_start("a");
    req.set_end("n");
    v1::DeleteRangeResponse resp;
    EXPECT_EQ(a->DeleteRange(Ctx().get(), req, &resp).error_code(), grpc::StatusCode::OUT_OF_RANGE);
  }
  // Scans stop at the range's edge and say where the next range begins.
  std::string stopped;
  grpc::Status s;
  auto keys = Scan(a.get(), "", "", false, &stopped, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(keys, (std::vector<std::string>{"apple", "kiwi", "lime"}));
  EXPECT_EQ(stopped, "m");
  keys = Scan(b.get(), "", "", true, &stopped, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(keys, (std::vector<std::string>{"zucchini", "peach", "mango"}));
  EXPECT_EQ(stopped, "m");
  keys = Scan(b.get(), "a", "", false, &stopped, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);

  // A split made with grovectl reaches both nodes through their watch; ownership is unchanged.
  ASSERT_EQ(Grovectl({"split", "p"}, &out), 0) << out;
  ASSERT_EQ(Grovectl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("shard map version 4: 3 ranges"), std::string::npos) << out;
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    const std::string metrics = HttpGet(beta->metrics_port(), "/metrics").body;
    seen = metrics.find("grove_cluster_map_version 4") != std::string::npos &&
           metrics.find("grove_cluster_owned_ranges 2") != std::string::npos;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(seen) << HttpGet(beta->metrics_port(), "/metrics").body;
  keys = Scan(b.get(), "m", "", false, &stopped, &s);
  EXPECT_EQ(keys, (std::vector<std::string>{"mango"}));
  EXPECT_EQ(stopped, "p");
  const std::string alpha_metrics = HttpGet(alpha->metrics_port(), "/metrics").body;
  EXPECT_NE(alpha_metrics.find("grove_cluster_not_owner_total 3"), std::string::npos)
      << alpha_metrics;
}

TEST_F(GrovedOwnershipTest, ANodeRefusesKeysUntilTheClusterHasAMap) {
  auto alpha = StartNode("alpha");
  ASSERT_NE(alpha, nullptr);
  auto a = v1::KV::NewStub(Plaintext(alpha->address()));
  auto ctx = Ctx();
  grpc::Status s = Put(a.get(), "k", ctx.get());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("no shard map known yet"), std::string::npos);
  EXPECT_EQ(Trailer(*ctx, v1::kNotAppliedMetadata), "1");
  std::string out;
  EXPECT_EQ(Grovectl({"init", "--owner", "alpha", "--split", "novalue"}, &out), 2) << out;
  EXPECT_NE(out.find("'novalue' is not KEY=NODE"), std::string::npos) << out;
  EXPECT_EQ(Grovectl({"init", "--owner", "alpha", "--split", "k=Not A Name"}, &out), 2) << out;
  ASSERT_EQ(Grovectl({"init", "--owner", "alpha", "--split", "x=alpha"}, &out), 0) << out;
  EXPECT_NE(out.find("shard map version 1, 2 ranges"), std::string::npos) << out;
  EXPECT_EQ(Grovectl({"init", "--owner", "alpha"}, &out), 1) << out;
  EXPECT_NE(out.find("has a shard map already"), std::string::npos) << out;
  bool ok = false;
  for (int i = 0; i < 100 && !ok; ++i) {
    ok = Put(a.get(), "k", Ctx().get()).ok();
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ok) << "the node learns of the new map through its watch";
  EXPECT_EQ(Grovectl({"split", ""}, &out), 2) << out;
  EXPECT_EQ(Grovectl({"split", "k", "--expect-version", "7"}, &out), 1) << out;
  EXPECT_NE(out.find("at version 1, not 7"), std::string::npos) << out;
}

}  // namespace
}  // namespace grove::testing
