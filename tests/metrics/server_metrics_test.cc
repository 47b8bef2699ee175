#include "metrics/server_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace grove::metrics {
namespace {

TEST(ServerMetricsTest, Families) {
  prometheus::Registry registry;
  ServerMetrics m(registry, "1.2.3");
  m.SetReady(true);
  m.RequestStarted();
  m.RequestStarted();
  m.RequestFinished();
  m.LimitRejected("max_value_bytes");
  m.LimitRejected("max_value_bytes");
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_NE(text.find("grove_build_info{version=\"1.2.3\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("grove_ready 1"), std::string::npos) << text;
  EXPECT_NE(text.find("grove_inflight_requests 1"), std::string::npos) << text;
  EXPECT_NE(text.find("grove_limit_rejections_total{limit=\"max_value_bytes\"} 2"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace grove::metrics
