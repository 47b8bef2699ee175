#pragma once

// The standard gRPC server metric family (the names and labels of go-grpc-prometheus, so that
// existing dashboards and the etcd mixin's alerts work unchanged):
//
//   grpc_server_started_total{grpc_type,grpc_service,grpc_method}            counter
//   grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}  counter
//   grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method}         histogram
//
// grpc_code uses gRPC's canonical CamelCase names ("OK", "InvalidArgument", ...). Handling-time
// buckets start at 10 us and double up to ~84 s, matching the engine's own histograms.
//
// This layer knows Prometheus but not gRPC: callers pass the method's full name and the numeric
// status code.
//
// Thread safety: every method may be called concurrently.

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "util/mutex.h"

namespace grove::metrics {

inline constexpr int kNumGrpcCodes = 17;

// "OK", "Canceled", ..., "Unauthenticated"; "Unknown" for codes out of range.
std::string_view GrpcCodeName(int code);

// The 24 handling-time bucket bounds: 10 us * 2^i.
std::vector<double> LatencyBuckets();

// Counters and histogram of one RPC method, resolved once so the hot path takes no map lookups.
class MethodMetrics {
 public:
  void Started() { started_->Increment(); }
  void Handled(int code, double seconds);

 private:
  friend class GrpcMetrics;
  std::string full_method_;
  std::string type_;
  prometheus::Family<prometheus::Counter>* handled_family_ = nullptr;
  std::map<std::string, std::string> labels_;
  prometheus::Counter* started_ = nullptr;
  prometheus::Histogram* seconds_ = nullptr;
  std::array<std::atomic<prometheus::Counter*>, kNumGrpcCodes> handled_{};
};

class GrpcMetrics {
 public:
  // Registers the three families in `registry`, which must outlive this object.
  explicit GrpcMetrics(prometheus::Registry& registry);
  GrpcMetrics(const GrpcMetrics&) = delete;
  GrpcMetrics& operator=(const GrpcMetrics&) = delete;

  // At most this many methods get series of their own; calls of any other share one set labelled
  // grpc_service="unknown", grpc_method="unknown" (a server has a few dozen methods; this keeps
  // the label set bounded whatever names calls carry).
  static constexpr size_t kMaxMethods = 256;

  // The metrics of `full_method` ("/grove.v1.KV/Get") called as `type`: "unary",
  // "client_stream", "server_stream", "bidi_stream", or "batched" (a Batch sub-request); one
  // method has a series per type it was called as. Creates the series on first use, with
  // started_total and handled_total{grpc_code="OK"} at 0 so that rate() works from the first
  // scrape. Once created, a method is found without a lock (every call of the server asks). The
  // returned object lives as long as this GrpcMetrics.
  MethodMetrics* ForMethod(std::string_view full_method, std::string_view type) GROVE_EXCLUDES(mu_);

 private:
  // Open addressing over twice kMaxMethods slots: a slot is written once, under mu_, and read
  // without it.
  static constexpr size_t kSlots = 2 * kMaxMethods;
  MethodMetrics* Find(std::string_view full_method, std::string_view type) const;
  MethodMetrics* Create(std::string_view full_method, std::string_view type) GROVE_REQUIRES(mu_);

  prometheus::Family<prometheus::Counter>& started_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& seconds_;
  std::array<std::atomic<MethodMetrics*>, kSlots> slots_{};
  Mutex mu_;
  std::vector<std::unique_ptr<MethodMetrics>> methods_ GROVE_GUARDED_BY(mu_);
  MethodMetrics* unknown_ GROVE_GUARDED_BY(mu_) = nullptr;
};

}  // namespace grove::metrics
