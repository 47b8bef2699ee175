#pragma once

// Server-level metrics that are neither per-RPC nor engine figures:
//
//   grove_build_info{version}              gauge, constant 1
//   grove_ready                            gauge, 1 while serving (health SERVING, /readyz 200)
//   grove_inflight_requests                gauge, RPCs being handled now
//   grove_limit_rejections_total{limit}    counter, requests refused by a configured limit
//                                          (limit = the config field, e.g. "max_value_bytes")
//
// Thread safety: every method may be called concurrently.

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace grove::metrics {

class ServerMetrics {
 public:
  // Registers the families in `registry`, which must outlive this object.
  ServerMetrics(prometheus::Registry& registry, std::string_view version);
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  void SetReady(bool ready) { ready_.Set(ready ? 1 : 0); }
  void RequestStarted() { inflight_.Increment(); }
  void RequestFinished() { inflight_.Decrement(); }
  // `limit` is the configuration field that refused the request (a small fixed set).
  void LimitRejected(std::string_view limit);

 private:
  prometheus::Gauge& ready_;
  prometheus::Gauge& inflight_;
  prometheus::Family<prometheus::Counter>& rejections_;
};

}  // namespace grove::metrics
