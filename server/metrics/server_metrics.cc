#include "metrics/server_metrics.h"

namespace grove::metrics {

ServerMetrics::ServerMetrics(prometheus::Registry& registry, std::string_view version)
    : ready_(prometheus::BuildGauge()
                 .Name("grove_ready")
                 .Help("1 while groved serves requests (engine open, not draining).")
                 .Register(registry)
                 .Add({})),
      inflight_(prometheus::BuildGauge()
                    .Name("grove_inflight_requests")
                    .Help("RPCs being handled now.")
                    .Register(registry)
                    .Add({})),
      rejections_(prometheus::BuildCounter()
                      .Name("grove_limit_rejections_total")
                      .Help("Requests refused by a configured limit, by the limit's field name.")
                      .Register(registry)) {
  prometheus::BuildGauge()
      .Name("grove_build_info")
      .Help("groved build information (constant 1).")
      .Register(registry)
      .Add({{"version", std::string(version)}})
      .Set(1);
}

void ServerMetrics::LimitRejected(std::string_view limit) {
  // Family::Add returns the existing series for known labels.
  rejections_.Add({{"limit", std::string(limit)}}).Increment();
}

}  // namespace grove::metrics
