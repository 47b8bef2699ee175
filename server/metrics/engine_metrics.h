#pragma once

// grove_* engine metrics, built from a DbStats snapshot at scrape time. The engine keeps its own
// cumulative counters (Db::GetStats), so exporting means copying them into Prometheus families,
// not incrementing prometheus::Counter objects on the hot path.
//
// Names follow Prometheus conventions: base units (_bytes, _seconds), counters end in _total,
// info metrics carry a constant 1. No key or value ever appears in a label. The full list with
// types and units is in docs/server.md.

#include <functional>
#include <optional>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "grove/stats.h"

namespace grove::metrics {

// The `cause` label value of an IoCause ("demand", "prefetch", "scan", "checkpoint", "recovery",
// "bulk_load"), also used as the key of the Stats RPC's page_reads/page_writes maps.
const char* IoCauseLabel(IoCause cause);

// Every grove_* family describing `stats`.
std::vector<prometheus::MetricFamily> EngineFamilies(const DbStats& stats);

// A Collectable that asks `source` for a snapshot on each scrape. `source` returns nullopt while no
// engine is open (starting or closed); then the scrape has no engine families.
class EngineCollector final : public prometheus::Collectable {
 public:
  using Source = std::function<std::optional<DbStats>()>;
  explicit EngineCollector(Source source) : source_(std::move(source)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  Source source_;
};

}  // namespace grove::metrics
