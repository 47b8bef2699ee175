// Every call of grove::client::Client carries a deadline: against an in-process server whose
// handlers never answer (unary calls and the Batch stream alike), each call ends with
// DEADLINE_EXCEEDED once ClientOptions::timeout has passed, instead of waiting forever.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "grove/client/client.h"

namespace grove::client {
namespace {

using std::chrono::milliseconds;

// Blocks until the caller gives up (or, as a bound on a broken client, for ten seconds).
grpc::Status Stall(grpc::ServerContext* ctx) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ctx->IsCancelled() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, "the client set no deadline");
}

class StallingKv final : public v1::KV::Service {
 public:
  grpc::Status Get(grpc::ServerContext* c, const v1::GetRequest*, v1::GetResponse*) override {
    return Stall(c);
  }
  grpc::Status BatchGet(grpc::ServerContext* c, const v1::BatchGetRequest*,
                        v1::BatchGetResponse*) override {
    return Stall(c);
  }
  grpc::Status Put(grpc::ServerContext* c, const v1::PutRequest*, v1::PutResponse*) override {
    return Stall(c);
  }
  grpc::Status Delete(grpc::ServerContext* c, const v1::DeleteRequest*,
                      v1::DeleteResponse*) override {
    return Stall(c);
  }
  grpc::Status BatchInsert(grpc::ServerContext* c, const v1::BatchInsertRequest*,
                           v1::BatchInsertResponse*) override {
    return Stall(c);
  }
  grpc::Status Scan(grpc::ServerContext* c, const v1::ScanRequest*,
                    grpc::ServerWriter<v1::ScanResponse>*) override {
    return Stall(c);
  }
  grpc::Status Stats(grpc::ServerContext* c, const v1::StatsRequest*, v1::StatsResponse*) override {
    return Stall(c);
  }
  // Reads sub-requests and answers none.
  grpc::Status Batch(
      grpc::ServerContext* c,
      grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* stream) override {
    v1::BatchRequest request;
    while (stream->Read(&request)) {
    }
    return Stall(c);
  }
};

// Answers SERVING until `stall` is set.
class StallingHealth final : public grpc::health::v1::Health::Service {
 public:
  std::atomic<bool> stall{false};

  grpc::Status Check(grpc::ServerContext* c, const grpc::health::v1::HealthCheckRequest*,
                     grpc::health::v1::HealthCheckResponse* resp) override {
    if (stall.load()) return Stall(c);
    resp->set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    return grpc::Status::OK;
  }
};

class ClientDeadlineTest : public ::testing::TestWithParam<ClientOptions::Transport> {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&kv_);
    b.RegisterService(&health_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(port_);
    o.timeout = milliseconds(200);
    o.max_attempts = 1;  // DEADLINE_EXCEEDED is not retried anyway; keep the test short
    o.transport = GetParam();
    o.stream_lone_calls_unary = false;  // the stream's own path, though calls come one at a time
    ASSERT_TRUE(Client::Create(o, &client_).ok());
    // Connect while Health still answers, so that no write is refused unsent (UNAVAILABLE)
    // because a slow machine took longer than the timeout to connect.
    grpc::health::v1::HealthCheckResponse::ServingStatus h{};
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!client_->Health("", &h).ok() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_EQ(h, grpc::health::v1::HealthCheckResponse::SERVING);
    health_.stall = true;
  }
  void TearDown() override {
    client_.reset();  // ends its Batch streams
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  // A call without a deadline would end with the stall's INTERNAL after ten seconds instead.
  template <typename Call>
  void ExpectDeadline(const char* name, Call call) {
    SCOPED_TRACE(name);
    const grpc::Status s = call();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  }

  StallingKv kv_;
  StallingHealth health_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(ClientDeadlineTest, EveryCallHasADeadline) {
  std::string v;
  bool found = false;
  std::vector<std::optional<std::string>> values;
  v1::StatsResponse stats;
  grpc::health::v1::HealthCheckResponse::ServingStatus h{};
  ExpectDeadline("Get", [&] { return client_->Get("k", &v, &found); });
  ExpectDeadline("BatchGet", [&] { return client_->BatchGet({"k"}, &values); });
  ExpectDeadline("Put", [&] { return client_->Put("k", "v"); });
  ExpectDeadline("Delete", [&] { return client_->Delete("k"); });
  ExpectDeadline("BatchInsert", [&] {
    return client_->BatchInsert({{Mutation::Type::kPut, "k", "v"}});
  });
  ExpectDeadline("Scan", [&] {
    return client_->Scan(ScanRange{}, [](std::string_view, std::string_view) { return true; });
  });
  ExpectDeadline("Stats", [&] { return client_->Stats(&stats); });
  ExpectDeadline("Health", [&] { return client_->Health("", &h); });
}

INSTANTIATE_TEST_SUITE_P(Transports, ClientDeadlineTest,
                         ::testing::Values(ClientOptions::Transport::kUnary,
                                           ClientOptions::Transport::kStream),
                         [](const auto& info) {
                           return info.param == ClientOptions::Transport::kUnary ? "Unary"
                                                                                 : "Stream";
                         });

}  // namespace
}  // namespace grove::client
