// The metrics port of a real groved: /metrics content after real calls, /livez, /readyz.

#include <gtest/gtest.h>

#include "service/integration.h"

namespace grove::testing {
namespace {

class GrovedMetricsTest : public GrovedTest {
 protected:
  void SetUp() override { StartGroved(); }
};

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line) != std::string::npos;
}

TEST_F(GrovedMetricsTest, GrpcServerFamily) {
  const std::string secret_key = "customer-4711-secret";
  ASSERT_TRUE(Put(secret_key, "v").ok());
  ASSERT_TRUE(Put(secret_key, "v2").ok());
  EXPECT_EQ(Get(secret_key), "v2");
  EXPECT_FALSE(Put("", "v").ok());

  const std::string m = MetricsText();
  const std::string put = "grpc_method=\"Put\",grpc_service=\"grove.v1.KV\",grpc_type=\"unary\"";
  EXPECT_TRUE(Has(m, "grpc_server_started_total{" + put + "} 3")) << m;
  EXPECT_TRUE(Has(m, "grpc_server_handled_total{grpc_code=\"OK\"," + put + "} 2")) << m;
  EXPECT_TRUE(Has(m, "grpc_server_handled_total{grpc_code=\"InvalidArgument\"," + put + "} 1"))
      << m;
  EXPECT_TRUE(Has(m, "grpc_server_handling_seconds_bucket{" + put + ",le=\"1e-05\"}")) << m;
  EXPECT_TRUE(Has(m, "grpc_server_handling_seconds_count{" + put + "} 3")) << m;
  EXPECT_TRUE(Has(m, "# TYPE grpc_server_handling_seconds histogram")) << m;
  EXPECT_TRUE(Has(m,
                  "grpc_server_started_total{grpc_method=\"Get\",grpc_service=\"grove.v1.KV\","
                  "grpc_type=\"unary\"} 1"))
      << m;
  EXPECT_EQ(m.find(secret_key), std::string::npos) << "no keys in labels";
}

TEST_F(GrovedMetricsTest, StreamingCallsAreLabelledServerStream) {
  auto ctx = Ctx();
  auto reader = kv_->Scan(ctx.get(), v1::ScanRequest());
  v1::ScanResponse msg;
  while (reader->Read(&msg)) {
  }
  ASSERT_TRUE(reader->Finish().ok());
  const std::string m = MetricsText();
  EXPECT_TRUE(Has(m,
                  "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Scan\","
                  "grpc_service=\"grove.v1.KV\",grpc_type=\"server_stream\"} 1"))
      << m;
}

TEST_F(GrovedMetricsTest, EngineFamilies) {
  ASSERT_TRUE(Put("k", "v").ok());
  const std::string m = MetricsText();
  EXPECT_TRUE(Has(m, "grove_io_backend_info{backend=\"uring\"} 1") ||
              Has(m, "grove_io_backend_info{backend=\"psync\"} 1"))
      << m;
  EXPECT_TRUE(Has(m, "grove_index_info{variant=\"btree\"} 1")) << m;
  for (const char* family : {"grove_page_reads_total{cause=\"demand\"}",
                             "grove_page_writes_total{cause=\"checkpoint\"}",
                             "grove_cache_hits_total",
                             "grove_cache_misses_total",
                             "grove_cache_resident_bytes",
                             "grove_cache_dirty_bytes",
                             "grove_cache_capacity_bytes",
                             "grove_prefetch_issued_pages_total",
                             "grove_prefetch_used_pages_total",
                             "grove_prefetch_wasted_pages_total",
                             "grove_wal_written_bytes_total",
                             "grove_wal_records_total",
                             "grove_wal_syncs_total",
                             "grove_wal_sync_duration_seconds_bucket{le=\"1e-05\"}",
                             "grove_checkpoints_total",
                             "grove_checkpoint_duration_seconds_bucket",
                             "grove_index_height",
                             "grove_index_inner_bytes",
                             "grove_index_leaf_pages",
                             "grove_index_model_bytes",
                             "grove_checksum_failures_total 0",
                             "grove_operations_total{op=\"put\"} 1",
                             "grove_build_info{version=",
                             "grove_ready 1",
                             "grove_inflight_requests"}) {
    EXPECT_TRUE(Has(m, family)) << family << "\n" << m;
  }
  EXPECT_TRUE(Has(m, "grove_cache_capacity_bytes 16777216")) << "cache_bytes: 16MiB\n" << m;
}

TEST_F(GrovedMetricsTest, HealthCallsAreCountedToo) {
  grpc::health::v1::HealthCheckResponse h;
  ASSERT_TRUE(health_->Check(Ctx().get(), {}, &h).ok());
  EXPECT_TRUE(Has(MetricsText(),
                  "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Check\","
                  "grpc_service=\"grpc.health.v1.Health\",grpc_type=\"unary\"} 1"));
}

TEST_F(GrovedMetricsTest, ProbesAndUnknownPaths) {
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/livez").status, 200);
  HttpResponse r = HttpGet(groved_->metrics_port(), "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ready\n");
  EXPECT_EQ(HttpGet(groved_->metrics_port(), "/debug").status, 404);
}

}  // namespace
}  // namespace grove::testing
