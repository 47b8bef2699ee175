// The health service and the metrics interceptor, on an in-process gRPC server (no engine).

#include "service/health_service.h"

#include <atomic>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "service/metrics_interceptor.h"

namespace grove::service {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc_metrics_ = std::make_unique<metrics::GrpcMetrics>(registry_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&health_);
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> f;
    f.push_back(std::make_unique<MetricsInterceptorFactory>(grpc_metrics_.get(), &in_flight_));
    builder.experimental().SetInterceptorCreators(std::move(f));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                                grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown();
  }

  grpc::Status Check(const std::string& service, HealthCheckResponse* r) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    HealthCheckRequest req;
    req.set_service(service);
    return stub_->Check(&ctx, req, r);
  }

  prometheus::Registry registry_;
  std::unique_ptr<metrics::GrpcMetrics> grpc_metrics_;
  std::atomic<int64_t> in_flight_{0};
  HealthService health_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckFollowsServingState) {
  HealthCheckResponse r;
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING) << "not serving until told";
  health_.SetServing(true);
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  ASSERT_TRUE(Check("grove.v1.KV", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  health_.SetServing(false);
  ASSERT_TRUE(Check("grove.v1.KV", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, UnknownServiceIsNotFound) {
  HealthCheckResponse r;
  grpc::Status s = Check("other.Service", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthServiceTest, WatchSeesEveryTransitionAndEndsOnShutdown) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  HealthCheckRequest req;
  auto reader = stub_->Watch(&ctx, req);
  HealthCheckResponse r;
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  health_.SetServing(true);
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  health_.SetServing(false);
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  health_.Shutdown();
  while (reader->Read(&r)) EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(HealthServiceTest, WatchOfUnknownServiceSaysServiceUnknown) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  HealthCheckRequest req;
  req.set_service("nope");
  auto reader = stub_->Watch(&ctx, req);
  HealthCheckResponse r;
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVICE_UNKNOWN);
  ctx.TryCancel();
}

TEST_F(HealthServiceTest, InterceptorCountsEveryCallWithItsCode) {
  HealthCheckResponse r;
  ASSERT_TRUE(Check("", &r).ok());
  ASSERT_TRUE(Check("", &r).ok());
  ASSERT_FALSE(Check("unknown", &r).ok());
  const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
  const std::string labels =
      "grpc_method=\"Check\",grpc_service=\"grpc.health.v1.Health\",grpc_type=\"unary\"";
  EXPECT_NE(text.find("grpc_server_started_total{" + labels + "} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"OK\"," + labels + "} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"NotFound\"," + labels + "} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_count{" + labels + "} 3"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace grove::service
