#pragma once

// A gRPC server interceptor that feeds grpc_server_started_total, grpc_server_handled_total and
// grpc_server_handling_seconds for every service on the server (KV, health, reflection), including
// calls refused before a handler ran (auth, limits, draining). It times from the arrival of the
// request metadata to the sending of the status.

#include <memory>

#include <grpcpp/support/server_interceptor.h>

#include "metrics/grpc_metrics.h"

namespace grove::service {

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `metrics` must outlive the server.
  explicit MetricsInterceptorFactory(metrics::GrpcMetrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  metrics::GrpcMetrics* metrics_;
};

}  // namespace grove::service
