#pragma once

// Workload trace figures (docs/operations.md, "Trace the workload"), read on each scrape:
//
//   grove_trace_records_total{outcome="written"|"dropped"}  counter, over every trace since start
//   grove_trace_active                                      gauge, 1 while a trace runs
//
// Thread safety: Collect may run concurrently with anything; `source` must be thread-safe.

#include <cstdint>
#include <functional>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace grove::metrics {

struct TraceTotals {
  uint64_t written = 0, dropped = 0;
  bool active = false;
};

class TraceCollector final : public prometheus::Collectable {
 public:
  explicit TraceCollector(std::function<TraceTotals()> source) : source_(std::move(source)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<TraceTotals()> source_;
};

}  // namespace grove::metrics
