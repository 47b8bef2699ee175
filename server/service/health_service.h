#pragma once

// grpc.health.v1.Health for groved. Service "" (the whole server) and "grove.v1.KV" report
//
//   NOT_SERVING  while the engine opens/recovers, and from the moment draining starts
//   SERVING      once the engine is open, until draining starts
//
// and any other name is NOT_FOUND (Check) or SERVICE_UNKNOWN (Watch), as the protocol says.
//
// gRPC has a built-in health service, but it is switched on through process-wide state and its
// Watch streams keep a draining server waiting until the drain deadline. This one is an object the
// server owns, and Shutdown() ends every Watch so that draining waits only for real work.
//
// Thread safety: all methods may be called concurrently.

#include <chrono>
#include <cstdint>

#include "grpc/health/v1/health.grpc.pb.h"
#include "util/mutex.h"

namespace grove::service {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  // The service name of the KV API, reported alongside "".
  static constexpr const char* kKvService = "grove.v1.KV";

  void SetServing(bool serving) GROVE_EXCLUDES(mu_);
  bool serving() const GROVE_EXCLUDES(mu_);

  // Ends every Watch (after it has sent the current status) and makes new ones end at once.
  void Shutdown() GROVE_EXCLUDES(mu_);

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  static bool Known(const std::string& service);

  mutable Mutex mu_;
  CondVar changed_{&mu_};
  bool serving_ GROVE_GUARDED_BY(mu_) = false;
  bool shutdown_ GROVE_GUARDED_BY(mu_) = false;
  uint64_t version_ GROVE_GUARDED_BY(mu_) = 0;  // bumped on every change, so watchers miss none
};

}  // namespace grove::service
