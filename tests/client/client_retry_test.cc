// Retry rules of grove::client::Client against an in-process fake server, over unary calls and
// over the Batch stream: reads are retried on any UNAVAILABLE; writes only when the server marked
// the refusal "grove-not-applied", because a write whose connection broke may have been applied
// and must not be applied twice. A server without Batch gets unary calls.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "grove/client/client.h"
#include "grove/v1/metadata.h"

namespace grove::client {
namespace {

// Every call answers UNAVAILABLE, marked as not applied when `mark` is set, and counts itself.
class RefusingKv final : public v1::KV::Service {
 public:
  std::atomic<int> puts{0}, deletes{0}, batches{0}, gets{0};
  std::atomic<int> unary_calls{0}, batch_calls{0};  // calls by way: unary RPCs, sub-requests
  std::atomic<bool> mark{false};
  std::atomic<int> hold_unary_gets_ms{0};  // a unary Get waits this long before it answers
  std::atomic<int> unary_gets_started{0};

  grpc::Status Put(grpc::ServerContext* ctx, const v1::PutRequest*, v1::PutResponse*) override {
    return Refuse(ctx, &puts);
  }
  grpc::Status Delete(grpc::ServerContext* ctx, const v1::DeleteRequest*,
                      v1::DeleteResponse*) override {
    return Refuse(ctx, &deletes);
  }
  grpc::Status BatchInsert(grpc::ServerContext* ctx, const v1::BatchInsertRequest*,
                           v1::BatchInsertResponse*) override {
    return Refuse(ctx, &batches);
  }
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetRequest*, v1::GetResponse*) override {
    unary_gets_started.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_unary_gets_ms.load()));
    return Refuse(ctx, &gets);
  }
  // The same refusals as sub-request results; UNIMPLEMENTED (as a server from before Batch)
  // unless `batch` is set.
  std::atomic<bool> batch{true};
  grpc::Status Batch(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* stream) override {
    if (!batch.load()) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no Batch here");
    v1::BatchRequest request;
    while (stream->Read(&request)) {
      v1::BatchResponse response;
      for (const v1::SubRequest& r : request.requests()) {
        if (r.has_put()) puts.fetch_add(1);
        if (r.has_delete_()) deletes.fetch_add(1);
        if (r.has_batch_insert()) batches.fetch_add(1);
        if (r.has_get()) gets.fetch_add(1);
        batch_calls.fetch_add(1);
        v1::SubResult* result = response.add_results();
        result->set_tag(r.tag());
        result->mutable_status()->set_code(grpc::StatusCode::UNAVAILABLE);
        result->mutable_status()->set_message("refused");
        if (mark.load())
          (*result->mutable_status()->mutable_metadata())[v1::kNotAppliedMetadata] = "1";
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

 private:
  grpc::Status Refuse(grpc::ServerContext* ctx, std::atomic<int>* counter) {
    counter->fetch_add(1);
    unary_calls.fetch_add(1);
    if (mark.load()) ctx->AddTrailingMetadata(v1::kNotAppliedMetadata, "1");
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "refused");
  }
};

class ClientRetryTest : public ::testing::TestWithParam<ClientOptions::Transport> {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&kv_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(port_);
    o.max_attempts = 4;
    o.initial_backoff = std::chrono::milliseconds(1);
    o.max_backoff = std::chrono::milliseconds(2);
    // A cold connection slower than the default second would leave the first write unsent.
    o.connect_timeout = std::chrono::seconds(10);
    o.transport = GetParam();
    o.stream_lone_calls_unary = false;  // the stream's own path, though calls come one at a time
    ASSERT_TRUE(Client::Create(o, &client_).ok());
  }
  void TearDown() override {
    client_.reset();  // ends its Batch streams, which the server's shutdown would wait for
    if (server_) server_->Shutdown();
  }

  RefusingKv kv_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(ClientRetryTest, AWriteThatMayHaveBeenAppliedIsNotRetried) {
  const grpc::Status put = client_->Put("k", "v");
  EXPECT_EQ(put.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(put.error_message().find("may or may not have been applied"), std::string::npos)
      << put.error_message();
  EXPECT_EQ(client_->Delete("k").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(client_->BatchInsert({{Mutation::Type::kPut, "k", "v"}}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv_.puts.load(), 1);
  EXPECT_EQ(kv_.deletes.load(), 1);
  EXPECT_EQ(kv_.batches.load(), 1);
}

TEST_P(ClientRetryTest, AWriteTheServerRefusedBeforeApplyingIsRetried) {
  kv_.mark = true;
  EXPECT_EQ(client_->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(client_->BatchInsert({{Mutation::Type::kDelete, "k", ""}}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv_.puts.load(), 4);
  EXPECT_EQ(kv_.batches.load(), 4);
}

TEST_P(ClientRetryTest, ReadsAreRetriedOnAnyUnavailable) {
  std::string v;
  bool found = false;
  EXPECT_EQ(client_->Get("k", &v, &found).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv_.gets.load(), 4);
}

TEST_P(ClientRetryTest, AServerWithoutBatchGetsUnaryCalls) {
  kv_.batch = false;
  EXPECT_EQ(client_->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv_.puts.load(), 1) << "the unary Put, once (it may have been applied)";
  std::string v;
  bool found = false;
  EXPECT_EQ(client_->Get("k", &v, &found).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv_.gets.load(), 4);
}

// With stream_lone_calls_unary (the default), a call that finds no other in flight goes unary
// and one that overlaps it takes the stream.
TEST(ClientLoneCallTest, ALoneCallGoesUnaryAndAnOverlappingOneTheStream) {
  RefusingKv kv;
  kv.hold_unary_gets_ms = 300;
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&kv);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ClientOptions o;
  o.address = "127.0.0.1:" + std::to_string(port);
  o.max_attempts = 1;
  o.connect_timeout = std::chrono::seconds(10);
  std::unique_ptr<Client> client;
  ASSERT_TRUE(Client::Create(o, &client).ok());
  std::string v;
  bool found = false;
  EXPECT_EQ(client->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv.unary_calls.load(), 1);
  EXPECT_EQ(kv.batch_calls.load(), 0);
  // A Get held by the server for 300 ms; a second Get made meanwhile is not alone.
  std::thread held([&] {
    std::string v2;
    bool f2 = false;
    EXPECT_EQ(client->Get("a", &v2, &f2).error_code(), grpc::StatusCode::UNAVAILABLE);
  });
  while (kv.unary_gets_started.load() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(client->Get("b", &v, &found).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(kv.batch_calls.load(), 1) << "the overlapping Get took the stream";
  held.join();
  EXPECT_EQ(kv.unary_calls.load(), 2);
  client.reset();
  server->Shutdown();
}

INSTANTIATE_TEST_SUITE_P(Transports, ClientRetryTest,
                         ::testing::Values(ClientOptions::Transport::kUnary,
                                           ClientOptions::Transport::kStream),
                         [](const auto& info) {
                           return info.param == ClientOptions::Transport::kUnary ? "Unary"
                                                                                 : "Stream";
                         });

}  // namespace
}  // namespace grove::client
