#include "metrics/http_server.h"

#include <atomic>

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "metrics/http_get.h"
#include "metrics/server_metrics.h"

namespace grove::metrics {
namespace {

using grove::testing::HttpGet;

TEST(HttpServerTest, ServesMetricsLivezAndReadyz) {
  auto registry = std::make_shared<prometheus::Registry>();
  ServerMetrics server_metrics(*registry, "test");
  std::atomic<bool> ready{false};
  StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start("127.0.0.1:0", {registry}, [&] { return ready.load(); });
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  const int port = (*http)->port();
  ASSERT_GT(port, 0);

  testing::HttpResponse r = HttpGet(port, "/livez");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");

  r = HttpGet(port, "/readyz");
  EXPECT_EQ(r.status, 503);
  ready = true;
  r = HttpGet(port, "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ready\n");

  r = HttpGet(port, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("grove_build_info{version=\"test\"} 1"), std::string::npos) << r.body;

  r = HttpGet(port, "/nothing");
  EXPECT_EQ(r.status, 404);
}

TEST(HttpServerTest, DestroyedCollectablesAreSkipped) {
  auto registry = std::make_shared<prometheus::Registry>();
  StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start("127.0.0.1:0", {registry}, {});
  ASSERT_TRUE(http.ok());
  registry.reset();
  EXPECT_EQ((*http)->RenderMetrics(), "");
  EXPECT_EQ(HttpGet((*http)->port(), "/readyz").status, 503) << "no readiness source: not ready";
}

TEST(HttpServerTest, BusyPortIsAClearError) {
  StatusOr<std::unique_ptr<HttpServer>> first = HttpServer::Start("127.0.0.1:0", {}, {});
  ASSERT_TRUE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Start(taken, {}, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("server.metrics_listen"), std::string_view::npos);
}

TEST(HttpServerTest, BadAddress) {
  StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Start("nonsense", {}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace grove::metrics
