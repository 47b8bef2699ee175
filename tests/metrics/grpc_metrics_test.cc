#include "metrics/grpc_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace grove::metrics {
namespace {

std::string Render(prometheus::Registry& r) {
  return prometheus::TextSerializer().Serialize(r.Collect());
}

TEST(GrpcMetricsTest, CodeNamesAreCanonical) {
  EXPECT_EQ(GrpcCodeName(0), "OK");
  EXPECT_EQ(GrpcCodeName(3), "InvalidArgument");
  EXPECT_EQ(GrpcCodeName(8), "ResourceExhausted");
  EXPECT_EQ(GrpcCodeName(14), "Unavailable");
  EXPECT_EQ(GrpcCodeName(15), "DataLoss");
  EXPECT_EQ(GrpcCodeName(16), "Unauthenticated");
  EXPECT_EQ(GrpcCodeName(99), "Unknown");
}

TEST(GrpcMetricsTest, BucketsStartAtTenMicroseconds) {
  std::vector<double> b = LatencyBuckets();
  ASSERT_EQ(b.size(), 24u);
  EXPECT_DOUBLE_EQ(b.front(), 1e-5);
  EXPECT_DOUBLE_EQ(b[1], 2e-5);
  EXPECT_GT(b.back(), 60.0);
}

TEST(GrpcMetricsTest, StandardFamilyWithLabels) {
  prometheus::Registry registry;
  GrpcMetrics m(registry);
  MethodMetrics* get = m.ForMethod("/grove.v1.KV/Get", "unary");
  EXPECT_EQ(get, m.ForMethod("/grove.v1.KV/Get", "unary")) << "resolved once";
  MethodMetrics* scan = m.ForMethod("/grove.v1.KV/Scan", "server_stream");
  get->Started();
  get->Handled(0, 0.00002);
  get->Started();
  get->Handled(3, 0.5);
  scan->Started();

  const std::string text = Render(registry);
  EXPECT_NE(text.find("# TYPE grpc_server_started_total counter"), std::string::npos);
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"Get\",grpc_service=\"grove.v1.KV\","
                      "grpc_type=\"unary\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Get\","
                      "grpc_service=\"grove.v1.KV\",grpc_type=\"unary\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"InvalidArgument\",grpc_method="
                      "\"Get\",grpc_service=\"grove.v1.KV\",grpc_type=\"unary\"} 1"),
            std::string::npos)
      << text;
  // A method that has not finished yet already exports handled{OK} 0, so rate() sees it start.
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Scan\","
                      "grpc_service=\"grove.v1.KV\",grpc_type=\"server_stream\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_bucket{grpc_method=\"Get\",grpc_service="
                      "\"grove.v1.KV\",grpc_type=\"unary\",le=\"2e-05\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_count{grpc_method=\"Get\",grpc_service="
                      "\"grove.v1.KV\",grpc_type=\"unary\"} 2"),
            std::string::npos)
      << text;
}

TEST(GrpcMetricsTest, HealthServiceNamesSplitCorrectly) {
  prometheus::Registry registry;
  GrpcMetrics m(registry);
  m.ForMethod("/grpc.health.v1.Health/Check", "unary")->Started();
  const std::string text = Render(registry);
  EXPECT_NE(text.find("grpc_method=\"Check\",grpc_service=\"grpc.health.v1.Health\""),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace grove::metrics
