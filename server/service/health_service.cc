#include "service/health_service.h"

namespace grove::service {
namespace {

using grpc::health::v1::HealthCheckResponse;

// How often a Watch notices that its client went away (the sync API has no cancellation callback).
constexpr std::chrono::milliseconds kWatchPoll(200);

}  // namespace

bool HealthService::Known(const std::string& service) {
  return service.empty() || service == kKvService;
}

void HealthService::SetServing(bool serving) {
  MutexLock lock(&mu_);
  if (serving_ == serving) return;
  serving_ = serving;
  ++version_;
  changed_.SignalAll();
}

bool HealthService::serving() const {
  MutexLock lock(&mu_);
  return serving_;
}

void HealthService::Shutdown() {
  MutexLock lock(&mu_);
  serving_ = false;
  shutdown_ = true;
  ++version_;
  changed_.SignalAll();
}

grpc::Status HealthService::Check(grpc::ServerContext*,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  if (!Known(request->service())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + request->service() + "' (known: \"\", grove.v1.KV)");
  }
  response->set_status(serving() ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  const bool known = Known(request->service());
  uint64_t sent_version = 0;
  bool first = true;
  while (true) {
    HealthCheckResponse response;
    bool shutdown = false;
    {
      MutexLock lock(&mu_);
      while (!first && version_ == sent_version && !shutdown_) {
        changed_.WaitFor(kWatchPoll);
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
      }
      first = false;
      sent_version = version_;
      shutdown = shutdown_;
      response.set_status(!known     ? HealthCheckResponse::SERVICE_UNKNOWN
                          : serving_ ? HealthCheckResponse::SERVING
                                     : HealthCheckResponse::NOT_SERVING);
    }
    if (!writer->Write(response)) return grpc::Status::CANCELLED;
    if (shutdown) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down");
    }
  }
}

}  // namespace grove::service
