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
//   8. replicated ranges: this node's replica leads the range's group  (OUT_OF_RANGE naming
//      (a write is proposed there, a read waits for a barrier)         the leader;
//                                                                      kv_replicated.cc)
// Long calls (Scan, BatchGet) check the deadline and cancellation again between units of work.
// Each sub-request of a Batch stream passes the same gate on its own (kv_batch.cc).
//
// Thread safety: handlers run concurrently; the service itself holds no per-call state.

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>

#include <spdlog/logger.h>

#include "grove/v1/kv.grpc.pb.h"

#include "metrics/grpc_metrics.h"
#include "metrics/server_metrics.h"
#include "service/auth.h"
#include "service/call_metadata.h"
#include "service/deadline.h"
#include "service/engine_handle.h"
#include "service/ownership.h"
#include "service/replica_host.h"
#include "service/request_checks.h"
#include "trace/tracer.h"
#include "util/mutex.h"

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
  // `grpc_metrics` (may be null) receives the per-method series of Batch sub-requests
  // (grpc_type="batched").
  KvService(KvServiceOptions options, EngineHandle* engine, const Authorizer* auth,
            metrics::ServerMetrics* metrics, spdlog::logger* log, Ownership* ownership = nullptr,
            metrics::GrpcMetrics* grpc_metrics = nullptr, trace::Tracer* tracer = nullptr,
            ReplicaHost* replicas = nullptr);

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
  // kv_batch.cc.
  grpc::Status Batch(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* stream) override;

  // Calls being handled now (each sub-request of a stream counts as one).
  uint32_t inflight() const { return inflight_.load(std::memory_order_relaxed); }

  // The drain (server.cc). After BeginDrain a Batch stream ends once it has answered the message
  // in hand. CloseStreamsIfIdle is true when every one of `calls` (the server's calls in flight)
  // is a Batch stream waiting for its next message; from then on no stream takes another message,
  // and the server may cancel the calls left.
  void BeginDrain() { draining_.store(true); }
  bool CloseStreamsIfIdle(int64_t calls) GROVE_EXCLUDES(streams_mu_);

 private:
  class Call;
  struct PendingWrite;
  // A call's key in a replicated range: the range (null: not replicated) and this node's
  // running replica of it.
  struct ReplicaBinding {
    const cluster::ShardRange* range = nullptr;
    std::shared_ptr<raft::ReplicatedRange> replica;
  };
  struct SubCall;
  class MessageRun;

  // Maps an engine error, logging the ones an operator must see (DATA_LOSS, INTERNAL).
  grpc::Status EngineError(const Status& s, std::string_view what);
  // Returns `r.status`, counting a limit rejection.
  grpc::Status Reject(const CheckResult& r);

  // The body of each call once it passed the gate: shared by the unary handlers and the
  // sub-requests of a Batch stream.
  grpc::Status DoGet(const Call& call, const v1::GetRequest& request, v1::GetResponse* response);
  grpc::Status DoBatchGet(const Call& call, const v1::BatchGetRequest& request,
                          v1::BatchGetResponse* response);
  grpc::Status DoDeleteRange(const Call& call, const v1::DeleteRangeRequest& request,
                             v1::DeleteRangeResponse* response);
  grpc::Status DoScan(const Call& call, grpc::ServerContext* context,
                      const v1::ScanRequest* request, grpc::ServerWriter<v1::ScanResponse>* writer,
                      uint32_t* returned);
  // Whether the call served now goes into the running trace (docs/formats/trace.md); calls
  // refused at the gate (auth, admission, drain) are not traced.
  bool Traced() { return tracer_ != nullptr && tracer_->Sampled(); }
  // Writes come in halves, so that a stream can log several in one Db::WriteMany: Prepare checks
  // the request and builds the batch; FinishWrite maps the engine's outcome (a failed condition
  // becomes FAILED_PRECONDITION with the key's current state in trailing metadata) and records
  // the keys written. RunWrite is both around a Db::Write.
  grpc::Status PreparePut(const Call& call, const v1::PutRequest& request, PendingWrite* w);
  grpc::Status PrepareDelete(const Call& call, const v1::DeleteRequest& request, PendingWrite* w);
  grpc::Status PrepareBatchInsert(const Call& call, const v1::BatchInsertRequest& request,
                                  PendingWrite* w);
  grpc::Status FinishWrite(const Call& call, PendingWrite* w, const Status& s);
  grpc::Status RunWrite(const Call& call, PendingWrite* w);

  // Replicated ranges (kv_replicated.cc). ReplicaOf binds a key's range and this node's replica
  // of it (UNAVAILABLE, not applied, when the range is replicated and the replica is not running);
  // BindReplica does it for a prepared write, whose keys must then share one range.
  grpc::Status ReplicaOf(const Call& call, std::string_view key, ReplicaBinding* out) const;
  grpc::Status BindReplica(const Call& call, PendingWrite* w) const;
  // The refusal of a replica that does not lead: OUT_OF_RANGE naming the leader, or UNAVAILABLE
  // (not applied) during an election.
  grpc::Status NotLeader(const Call& call, const ReplicaBinding& binding,
                         const Status& refusal) const;
  // Proposes through `propose` and waits for the outcome up to the call's deadline.
  static Status WaitForReplicated(const Call& call,
                                  const std::function<void(raft::ReplicatedRange::Done)>& propose,
                                  raft::RangeWriteResult* result);
  // Refusals a replicated write may meet before it applies (*decided: the returned status is the
  // answer).
  grpc::Status ReplicatedOutcome(const Call& call, const ReplicaBinding& binding, const Status& s,
                                 const raft::RangeWriteResult& result, bool* decided) const;
  grpc::Status RunReplicatedWrite(const Call& call, PendingWrite* w);
  grpc::Status RunReplicatedDeleteRange(const Call& call, const ReplicaBinding& binding,
                                        const v1::DeleteRangeRequest& request,
                                        DeleteRangeResult* deleted);
  // Whether a read that accepts staleness (grove-max-staleness-ms) may be served by this replica
  // as it is (*served; the bound then goes into grove-staleness-ms); INVALID_ARGUMENT for a
  // value that is not a number of milliseconds.
  grpc::Status StaleRead(const Call& call, const ReplicaBinding& binding, bool* served) const;
  // A linearizable read: a barrier on the leader first (nothing for an unreplicated range), or a
  // stale one the client accepts (StaleReadServed).
  // OUT_OF_RANGE, not owner and nothing applied: a replica of this node applied a split of
  // its range that the node's map does not show yet (`why`).
  grpc::Status SplitSince(const Call& call, std::string_view why) const;
  grpc::Status LeaderRead(const Call& call, const ReplicaBinding& binding) const;
  // A DeleteRange on a replicated range must stay within it (one group).
  grpc::Status SpanInOneReplicatedRange(const Call& call, const ReplicaBinding& binding,
                                        const v1::DeleteRangeRequest& request) const;
  grpc::Status LeaderReadOfKeys(const Call& call,
                                const google::protobuf::RepeatedPtrField<std::string>& keys) const;

  // Batch streams: marks the stream waiting for a message, or back at work; false when the drain
  // closed the streams.
  void StreamWaiting() GROVE_EXCLUDES(streams_mu_);
  bool StreamWorking() GROVE_EXCLUDES(streams_mu_);

  const KvServiceOptions options_;
  EngineHandle* const engine_;
  const Authorizer* const auth_;
  metrics::ServerMetrics* const metrics_;
  spdlog::logger* const log_;
  Ownership* const ownership_;
  metrics::GrpcMetrics* const grpc_metrics_;
  trace::Tracer* const tracer_;
  ReplicaHost* const replicas_;
  // The methods a Batch sub-request can call, by SubRequest::CallCase - kGet (get = 10 ..
  // delete_range = 15), and their series (grpc_type="batched"; null without grpc_metrics_).
  static constexpr std::array<const char*, 6> kBatchedMethods = {
      "Get", "BatchGet", "Put", "Delete", "BatchInsert", "DeleteRange"};
  std::array<metrics::MethodMetrics*, kBatchedMethods.size()> batched_metrics_{};
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<uint32_t> inflight_{0};
  std::atomic<bool> draining_{false};
  Mutex streams_mu_;
  int64_t streams_waiting_ GROVE_GUARDED_BY(streams_mu_) = 0;
  bool streams_closed_ GROVE_GUARDED_BY(streams_mu_) = false;
};

}  // namespace grove::service
