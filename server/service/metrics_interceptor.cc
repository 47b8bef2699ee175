#include "service/metrics_interceptor.h"

#include <chrono>

namespace grove::service {
namespace {

using grpc::experimental::InterceptionHookPoints;

const char* TypeName(grpc::experimental::ServerRpcInfo::Type type) {
  using Type = grpc::experimental::ServerRpcInfo::Type;
  switch (type) {
    case Type::UNARY:
      return "unary";
    case Type::CLIENT_STREAMING:
      return "client_stream";
    case Type::SERVER_STREAMING:
      return "server_stream";
    case Type::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unary";
}

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(metrics::MethodMetrics* method, std::atomic<int64_t>* in_flight)
      : method_(method), in_flight_(in_flight) {
    in_flight_->fetch_add(1, std::memory_order_relaxed);
  }
  ~MetricsInterceptor() override { in_flight_->fetch_sub(1, std::memory_order_relaxed); }
  MetricsInterceptor(const MetricsInterceptor&) = delete;
  MetricsInterceptor& operator=(const MetricsInterceptor&) = delete;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      start_ = std::chrono::steady_clock::now();
      method_->Started();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
      method_->Handled(static_cast<int>(methods->GetSendStatus().error_code()), elapsed.count());
    }
    methods->Proceed();
  }

 private:
  metrics::MethodMetrics* method_;
  std::atomic<int64_t>* in_flight_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

grpc::experimental::Interceptor* MetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new MetricsInterceptor(metrics_->ForMethod(info->method(), TypeName(info->type())),
                                in_flight_);
}

}  // namespace grove::service
