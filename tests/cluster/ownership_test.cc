// Ownership in cluster mode: keys of other nodes are refused OUT_OF_RANGE with the map version, a
// client routing by a newer map makes a stale node read it first, scans are narrowed to the
// node's range, and a map that takes a range away waits for the writes admitted under the old
// one (the fence).

#include "service/ownership.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <grpcpp/test/server_context_test_spouse.h>
#include <gtest/gtest.h>

#include "grove/v1/metadata.h"

#include "cluster/etcd_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::service {
namespace {

using cluster::ShardMap;

class OwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = testing::EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    cluster::EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    auto c = cluster::EtcdClient::Create(o);
    ASSERT_OK(c.status());
    client_ = std::move(*c);
    // node-1 owns [-inf, m), node-2 owns [m, +inf): version 3.
    ASSERT_OK(cluster::CreateShardMap(client_.get(), "c", "node-1").status());
    ASSERT_OK(Edit([](ShardMap* m) { return m->Split("m"); }));
    ASSERT_OK(Edit([](ShardMap* m) { return m->Assign("m", "node-2"); }));
    // Not started: the node's map changes only when a call makes it read etcd, which lets the
    // tests hold a node on a stale map.
    watcher_ = std::make_unique<cluster::ShardMapWatcher>(client_, "c", nullptr);
    ownership_ = std::make_unique<Ownership>(watcher_.get(), "c", "node-1", nullptr);
    watcher_->set_listener(ownership_.get());
  }

  Status Edit(const std::function<Status(ShardMap*)>& edit) {
    return cluster::UpdateShardMap(client_.get(), "c", 0, edit).status();
  }

  // A call context carrying the map version a client routes by (0: none). The spouse holds the
  // metadata's bytes, so it lives as long as the context.
  struct CallContext {
    grpc::ServerContext context;
    grpc::testing::ServerContextTestSpouse spouse{&context};
    ContextMetadata md{&context};
    CallMetadata* get() { return &md; }
  };
  static std::unique_ptr<CallContext> Context(uint64_t version) {
    auto ctx = std::make_unique<CallContext>();
    if (version > 0)
      ctx->spouse.AddClientMetadata(v1::kMapVersionMetadata, std::to_string(version));
    return ctx;
  }
  static std::string Trailer(grpc::ServerContext* ctx, const std::string& key) {
    auto md = grpc::testing::ServerContextTestSpouse(ctx).GetTrailingMetadata();
    auto it = md.find(key);
    return it == md.end() ? "" : it->second;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::EtcdProcess> etcd_;
  std::shared_ptr<cluster::EtcdClient> client_;
  std::unique_ptr<cluster::ShardMapWatcher> watcher_;
  std::unique_ptr<Ownership> ownership_;
};

TEST_F(OwnershipTest, KeysOfOtherNodesAreRefusedWithTheMapVersion) {
  auto ctx = Context(0);
  Ownership::Ticket t;
  ASSERT_TRUE(ownership_->Admit(ctx->get(), true, &t).ok());
  EXPECT_TRUE(t.CheckKey(ctx->get(), "apple", "key").ok());
  EXPECT_TRUE(t.CheckKey(ctx->get(), "", "key").ok());
  grpc::Status s = t.CheckKey(ctx->get(), "melon", "mutations[3].key");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_NE(s.error_message().find("mutations[3].key 'melon' is in range [m, (end)) owned by "
                                   "node 'node-2' at shard map version 3"),
            std::string::npos)
      << s.error_message();
  EXPECT_EQ(Trailer(&ctx->context, v1::kNotOwnerMetadata), "1");
  EXPECT_EQ(Trailer(&ctx->context, v1::kMapVersionMetadata), "3");

  EXPECT_TRUE(t.CheckSpan(ctx->get(), "a", "m").ok());
  EXPECT_EQ(t.CheckSpan(ctx->get(), "a", std::string("m\0", 2)).error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(t.CheckSpan(ctx->get(), "a", "").error_code(), grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(OwnershipTest, AStaleNodeReadsTheMapAClientRoutesByBeforeDeciding) {
  {
    auto ctx = Context(0);
    Ownership::Ticket t;
    ASSERT_TRUE(ownership_->Admit(ctx->get(), true, &t).ok());
    EXPECT_EQ(t.map()->version(), 3u);
  }
  // The range [g, m) goes to node-3 (version 5). node-1 has not read it (no watch here).
  ASSERT_OK(Edit([](ShardMap* m) { return m->Split("g"); }));
  ASSERT_OK(Edit([](ShardMap* m) { return m->Assign("g", "node-3"); }));
  {
    auto ctx = Context(0);  // a client with no newer map: the node decides by what it knows
    Ownership::Ticket t;
    ASSERT_TRUE(ownership_->Admit(ctx->get(), true, &t).ok());
    EXPECT_EQ(t.map()->version(), 3u);
  }
  auto ctx = Context(5);  // the client has seen version 5: the stale owner must not write
  Ownership::Ticket t;
  ASSERT_TRUE(ownership_->Admit(ctx->get(), true, &t).ok());
  EXPECT_EQ(t.map()->version(), 5u);
  grpc::Status s = t.CheckKey(ctx->get(), "h", "key");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE) << s.error_message();
  EXPECT_EQ(Trailer(&ctx->context, v1::kMapVersionMetadata), "5");
  EXPECT_TRUE(t.CheckKey(ctx->get(), "f", "key").ok());
}

TEST_F(OwnershipTest, ScansAreNarrowedToTheNodesRange) {
  ASSERT_OK(Edit([](ShardMap* m) { return m->Split("d"); }));  // node-1: [-inf,d) [d,m)
  auto ctx = Context(0);
  Ownership::Ticket t;
  ASSERT_TRUE(ownership_->Admit(ctx->get(), false, &t).ok());
  std::string lower = "b", upper, stopped;
  bool has_upper = false;
  ASSERT_TRUE(t.ClipScan(ctx->get(), false, &lower, &upper, &has_upper, &stopped).ok());
  EXPECT_TRUE(has_upper);
  EXPECT_EQ(upper, "d");
  EXPECT_EQ(stopped, "d") << "the next range begins at d";
  lower = "e", upper = "f", has_upper = true;
  ASSERT_TRUE(t.ClipScan(ctx->get(), false, &lower, &upper, &has_upper, &stopped).ok());
  EXPECT_EQ(upper, "f");
  EXPECT_EQ(stopped, "") << "the range holds the whole scan";
  lower = "n", has_upper = false;
  EXPECT_EQ(t.ClipScan(ctx->get(), false, &lower, &upper, &has_upper, &stopped).error_code(),
            grpc::StatusCode::OUT_OF_RANGE);

  // Reverse: from the largest key below the end.
  lower = "", upper = "m", has_upper = true;
  ASSERT_TRUE(t.ClipScan(ctx->get(), true, &lower, &upper, &has_upper, &stopped).ok())
      << "keys below m are in [d, m), node-1's";
  EXPECT_EQ(lower, "d");
  EXPECT_EQ(stopped, "d");
  lower = "", upper = "c", has_upper = true;
  ASSERT_TRUE(t.ClipScan(ctx->get(), true, &lower, &upper, &has_upper, &stopped).ok());
  EXPECT_EQ(lower, "");
  EXPECT_EQ(stopped, "");
  lower = "", upper = "", has_upper = false;
  EXPECT_EQ(t.ClipScan(ctx->get(), true, &lower, &upper, &has_upper, &stopped).error_code(),
            grpc::StatusCode::OUT_OF_RANGE)
      << "a reverse scan with no end starts in the last range, node-2's";
}

TEST_F(OwnershipTest, AMapTakingARangeAwayWaitsForTheWritesAdmittedUnderTheOldOne) {
  auto ctx = Context(0);
  auto write = std::make_unique<Ownership::Ticket>();
  ASSERT_TRUE(ownership_->Admit(ctx->get(), true, write.get()).ok());
  ASSERT_TRUE(write->CheckKey(ctx->get(), "k", "key").ok());
  // Reads hold nothing back.
  Ownership::Ticket read;
  ASSERT_TRUE(ownership_->Admit(ctx->get(), false, &read).ok());

  ASSERT_OK(Edit([](ShardMap* m) { return m->Assign("", "node-2"); }));  // version 4
  std::atomic<bool> published{false};
  std::thread publisher([&] {
    auto c = Context(4);
    Ownership::Ticket t;
    EXPECT_TRUE(ownership_->Admit(c->get(), true, &t).ok());
    EXPECT_EQ(t.map()->version(), 4u);
    EXPECT_EQ(t.CheckKey(c->get(), "k", "key").error_code(), grpc::StatusCode::OUT_OF_RANGE);
    published = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(published) << "version 4 took effect while a write decided by version 3 ran";
  write.reset();  // the write is applied: the fence opens
  publisher.join();
  EXPECT_TRUE(published);
}

TEST_F(OwnershipTest, WithoutAMapEveryCallIsRefusedAsNotApplied) {
  cluster::ShardMapWatcher w(client_, "other", nullptr);
  Ownership o(&w, "other", "node-1", nullptr);
  w.set_listener(&o);
  auto ctx = Context(0);
  Ownership::Ticket t;
  grpc::Status s = o.Admit(ctx->get(), true, &t);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("no shard map known yet"), std::string::npos);
  EXPECT_EQ(Trailer(&ctx->context, v1::kNotAppliedMetadata), "1");
}

}  // namespace
}  // namespace grove::service
