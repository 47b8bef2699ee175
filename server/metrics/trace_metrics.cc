#include "metrics/trace_metrics.h"

namespace grove::metrics {

std::vector<prometheus::MetricFamily> TraceCollector::Collect() const {
  const TraceTotals t = source_();
  prometheus::MetricFamily records{"grove_trace_records_total",
                                   "Calls recorded into workload traces, or dropped at the "
                                   "trace size cap.",
                                   prometheus::MetricType::Counter,
                                   {}};
  for (const auto& [outcome, value] : {std::pair{"written", t.written}, {"dropped", t.dropped}}) {
    prometheus::ClientMetric m;
    m.label.push_back({"outcome", outcome});
    m.counter.value = static_cast<double>(value);
    records.metric.push_back(std::move(m));
  }
  prometheus::MetricFamily active{
      "grove_trace_active", "1 while a workload trace runs.", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric a;
  a.gauge.value = t.active ? 1 : 0;
  active.metric.push_back(std::move(a));
  return {std::move(records), std::move(active)};
}

}  // namespace grove::metrics
