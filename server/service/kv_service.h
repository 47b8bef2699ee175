#pragma once

// grove.v1.KV on the synchronous gRPC API: each call runs on a gRPC thread and calls the engine,
// whose API is synchronous and thread-safe.
//
// Every call passes the same gate before any work, in this order:
//   1. admission: at most limits.max_inflight_requests calls at once  (RESOURCE_EXHAUSTED)
//   2. authorisation: bearer token and role                           (UNAUTHENTICATED,
//                                                                      PERMISSION_DENIED)
//   3. serving: the engine is open and the server is not closing      (UNAVAILABLE)
//   4. deadline: the effective deadline has not passed yet            (DEADLINE_EXCEEDED)
//   5. cluster mode: a shard map is known                             (UNAVAILABLE)
//   6. request checks against the configured limits                   (INVALID_ARGUMENT,
//                                                                      RESOURCE_EXHAUSTED)
//   7. cluster mode: this node owns every key of the call             (OUT_OF_RANGE,
//                                                                      service/ownership.h)
// Long calls (Scan, BatchGet) check the deadline and cancellation again between units of work.
//
// Thread safety: handlers run concurrently; the service itself holds no per-call state.

#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>

#include <spdlog/logger.h>

#include "grove/v1/kv.grpc.pb.h"

#include "metrics/server_metrics.h"
#include "service/auth.h"
#include "service/call_metadata.h"
#include "service/deadline.h"
#include "service/engine_handle.h"
#include "service/ownership.h"
#include "service/request_checks.h"

namespace grove::service {

struct KvServiceOptions {
  RequestLimits limits;
  DeadlinePolicy deadlines;
  uint64_t scan_message_bytes = 1ull << 20;
  uint32_t max_inflight_requests = 512;
};

class KvService final : public v1::KV::Service {
 public:
  // Every pointer must outlive the service. `ownership` (cluster mode; null otherwise) decides
  // which keys this node serves.
  KvService(KvServiceOptions options, EngineHandle* engine, const Authorizer* auth,
            metrics::ServerMetrics* metrics, spdlog::logger* log, Ownership* ownership = nullptr);

  grpc::Status Get(grpc::ServerContext* context, const v1::GetRequest* request,
                   v1::GetResponse* response) override;
  grpc::Status BatchGet(grpc::ServerContext* context, const v1::BatchGetRequest* request,
                        v1::BatchGetResponse* response) override;
  grpc::Status Put(grpc::ServerContext* context, const v1::PutRequest* request,
                   v1::PutResponse* response) override;
  grpc::Status Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                      v1::DeleteResponse* response) override;
  grpc::Status BatchInsert(grpc::ServerContext* context, const v1::BatchInsertRequest* request,
                           v1::BatchInsertResponse* response) override;
  grpc::Status Scan(grpc::ServerContext* context, const v1::ScanRequest* request,
                    grpc::ServerWriter<v1::ScanResponse>* writer) override;
  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest* request,
                     v1::StatsResponse* response) override;
  grpc::Status DeleteRange(grpc::ServerContext* context, const v1::DeleteRangeRequest* request,
                           v1::DeleteRangeResponse* response) override;

  // Calls being handled now.
  uint32_t inflight() const { return inflight_.load(std::memory_order_relaxed); }

 private:
  class Call;

  // Maps an engine error, logging the ones an operator must see (DATA_LOSS, INTERNAL).
  grpc::Status EngineError(const Status& s, std::string_view what);
  // Returns `r.status`, counting a limit rejection.
  grpc::Status Reject(const CheckResult& r);
  // Runs a write whose `options` may hold conditions; `fields[i]` names condition i in the
  // request, `mutations[i]` the mutation it belongs to (BatchInsert; empty otherwise). A failed
  // condition becomes FAILED_PRECONDITION with the key's current state in trailing metadata.
  grpc::Status ConditionalWrite(CallMetadata* md, Db* db, const WriteBatch& batch,
                                const WriteOptions& options, const std::vector<std::string>& fields,
                                const std::vector<int>& mutations, bool return_current,
                                WriteResult* result, std::string_view what);

  const KvServiceOptions options_;
  EngineHandle* const engine_;
  const Authorizer* const auth_;
  metrics::ServerMetrics* const metrics_;
  spdlog::logger* const log_;
  Ownership* const ownership_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<uint32_t> inflight_{0};
};

}  // namespace grove::service
