#pragma once

// A gRPC server interceptor that feeds grpc_server_started_total, grpc_server_handled_total and
// grpc_server_handling_seconds for every service on the server (KV, health, reflection), including
// calls refused before a handler ran (auth, limits, draining). It times from the arrival of the
// request metadata to the sending of the status.
//
// It also counts the calls the server holds (`in_flight`): an interceptor lives as long as its
// call, from the moment a server thread takes the call until the call is destroyed, so the count
// covers every service and call kind, streams included. The drain uses it (server.cc).

#include <atomic>
#include <cstdint>
#include <memory>

#include <grpcpp/support/server_interceptor.h>

#include "metrics/grpc_metrics.h"

namespace grove::service {

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `metrics` and `in_flight` must outlive the server.
  MetricsInterceptorFactory(metrics::GrpcMetrics* metrics, std::atomic<int64_t>* in_flight)
      : metrics_(metrics), in_flight_(in_flight) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  metrics::GrpcMetrics* metrics_;
  std::atomic<int64_t>* in_flight_;
};

}  // namespace grove::service
