#include "metrics/grpc_metrics.h"

#include <thread>
#include <vector>

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

// A method called both ways (unary, and as a Batch sub-request) has a series per type.
TEST(GrpcMetricsTest, OneMethodCalledAsTwoTypesHasTwoSeries) {
  prometheus::Registry registry;
  GrpcMetrics m(registry);
  MethodMetrics* batched = m.ForMethod("/grove.v1.KV/Put", "batched");
  MethodMetrics* unary = m.ForMethod("/grove.v1.KV/Put", "unary");
  ASSERT_NE(batched, unary);
  EXPECT_EQ(unary, m.ForMethod("/grove.v1.KV/Put", "unary"));
  EXPECT_EQ(batched, m.ForMethod("/grove.v1.KV/Put", "batched"));
  unary->Started();
  const std::string text = Render(registry);
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"Put\",grpc_service=\"grove.v1.KV\","
                      "grpc_type=\"unary\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"Put\",grpc_service=\"grove.v1.KV\","
                      "grpc_type=\"batched\"} 0"),
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

// Every thread gets the one object of each method, created once, however they race.
TEST(GrpcMetricsTest, ConcurrentCallersShareOneObjectPerMethod) {
  prometheus::Registry registry;
  GrpcMetrics m(registry);
  constexpr int kThreads = 4, kMethods = 40;
  std::vector<std::vector<MethodMetrics*>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < kMethods; ++i) {
          const int k = (i + t * 7) % kMethods;
          MethodMetrics* p = m.ForMethod("/s.S/M" + std::to_string(k), "unary");
          if (round == 0) seen[t].resize(kMethods);
          if (seen[t][k] == nullptr) seen[t][k] = p;
          EXPECT_EQ(seen[t][k], p);
          p->Started();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t], seen[0]);
  const std::string text = Render(registry);
  EXPECT_NE(text.find("grpc_method=\"M7\",grpc_service=\"s.S\",grpc_type=\"unary\"} 200"),
            std::string::npos)
      << text;
}

// Names past kMaxMethods share one "unknown" series instead of growing the label set.
TEST(GrpcMetricsTest, MethodsPastTheCapShareTheUnknownSeries) {
  prometheus::Registry registry;
  GrpcMetrics m(registry);
  std::vector<MethodMetrics*> own;
  for (size_t i = 0; i < GrpcMetrics::kMaxMethods; ++i) {
    own.push_back(m.ForMethod("/s.S/M" + std::to_string(i), "unary"));
  }
  MethodMetrics* a = m.ForMethod("/s.S/Extra1", "unary");
  MethodMetrics* b = m.ForMethod("/s.S/Extra2", "unary");
  EXPECT_EQ(a, b);
  for (MethodMetrics* p : own) EXPECT_NE(p, a);
  EXPECT_EQ(m.ForMethod("/s.S/M3", "unary"), own[3]) << "known methods keep their own";
  a->Started();
  b->Started();
  const std::string text = Render(registry);
  EXPECT_NE(text.find("grpc_method=\"unknown\",grpc_service=\"unknown\",grpc_type=\"unary\"} 2"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Extra1"), std::string::npos);
}

}  // namespace
}  // namespace grove::metrics
