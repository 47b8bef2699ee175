#pragma once

// KvService::Call: the gate every call of grove.v1.KV passes (the order is in kv_service.h), and
// what a handler needs while it runs (the engine, the deadline, ownership checks, where its
// metadata goes). A unary call has one; each sub-request of a Batch stream has its own, built from
// the stream's context (authorisation, client metadata, cancellation) with the sub-request's own
// deadline and status metadata. Releases its admission slot when destroyed.
//
// Thread safety: one call's, used by the thread handling it.

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "grove/v1/metadata.h"

#include "service/kv_service.h"

namespace grove::service {

class KvService::Call {
 public:
  // A unary (or Scan) call: metadata, deadline and cancellation are the context's.
  Call(KvService* service, grpc::ServerContext* context, Role role, std::string_view method)
      : Call(service, context, nullptr, context->deadline(), role, method) {}

  // `md` null: the context's own metadata. `client_deadline` is what the client asked for
  // (Clock::time_point::max(): none); the deadline policy caps it.
  Call(KvService* service, grpc::ServerContext* context, CallMetadata* md,
       Clock::time_point client_deadline, Role role, std::string_view method)
      : service_(service),
        context_(context),
        own_md_(context),
        md_(md != nullptr ? md : &own_md_),
        lease_(service->engine_) {
    const uint32_t now_inflight = service_->inflight_.fetch_add(1, std::memory_order_relaxed) + 1;
    service_->metrics_->RequestStarted();
    if (now_inflight > service_->options_.max_inflight_requests) {
      service_->metrics_->LimitRejected("max_inflight_requests");
      md_->AddTrailer(v1::kNotAppliedMetadata, "1");  // refused before anything was applied
      status_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "server busy: limits.max_inflight_requests (" +
                                 std::to_string(service_->options_.max_inflight_requests) +
                                 ") calls in flight; retry with backoff");
      return;
    }
    status_ = service_->auth_->Check(md_->Client("authorization"), role, method);
    if (!status_.ok()) return;
    db_ = lease_.db();
    if (db_ == nullptr) {
      // Refused before anything was applied: clients may retry writes on this UNAVAILABLE, unlike
      // one from a broken connection (docs/server.md, "Retrying writes").
      md_->AddTrailer(v1::kNotAppliedMetadata, "1");
      status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "the engine is not open (starting, recovering or shutting down)");
      return;
    }
    deadline_ = EffectiveDeadline(client_deadline, Clock::now(), service_->options_.deadlines);
    if (Expired()) {
      status_ = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                             "deadline exceeded before the call started");
      return;
    }
    if (service_->ownership_ != nullptr && role != Role::kAdmin) {
      status_ = service_->ownership_->Admit(md_, role == Role::kWrite, &ticket_);
    }
  }

  ~Call() {
    service_->inflight_.fetch_sub(1, std::memory_order_relaxed);
    service_->metrics_->RequestFinished();
  }

  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool ok() const { return status_.ok(); }
  const grpc::Status& status() const { return status_; }
  Db* db() const { return db_; }
  // Where the call's checks read client metadata and write trailers.
  CallMetadata* metadata() const { return md_; }
  bool Expired() const { return Clock::now() >= deadline_; }
  // Time left until the effective deadline (0 when passed).
  std::chrono::milliseconds Remaining() const {
    const auto left = deadline_ - Clock::now();
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                    std::chrono::milliseconds(0));
  }

  // Cluster mode: the shard map deciding the call; null otherwise.
  const cluster::ShardMap* map() const { return ticket_.map(); }
  // Cluster mode: OK when this node owns `key` (see service/ownership.h); always OK otherwise.
  grpc::Status Owns(std::string_view key, std::string_view field) const {
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.CheckKey(md_, key, field);
  }
  grpc::Status OwnsSpan(std::string_view start, std::string_view end) const {
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.CheckSpan(md_, start, end);
  }
  // Cluster mode: after a write was applied, its keys for the change records of moves.
  void Applied(const std::vector<std::string_view>& keys) const {
    if (ticket_.map() != nullptr) service_->ownership_->RecordWrites(keys);
  }
  // Cluster mode: narrows a scan to this node's range (Ownership::Ticket::ClipScan).
  grpc::Status ClipScan(ScanOptions* scan, std::string* stopped_at) const {
    stopped_at->clear();
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.ClipScan(md_, scan->reverse, &scan->lower, &scan->upper, &scan->has_upper,
                            stopped_at);
  }

  // DEADLINE_EXCEEDED or CANCELLED when the call should stop now, OK otherwise.
  grpc::Status Continue(std::string_view when) const {
    if (context_->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (Expired()) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "deadline exceeded " + std::string(when));
    }
    return grpc::Status::OK;
  }

 private:
  KvService* const service_;
  grpc::ServerContext* const context_;
  ContextMetadata own_md_;
  CallMetadata* const md_;  // the checks' trailers; const methods add them too
  grpc::Status status_;
  EngineHandle::Lease lease_;  // held for the whole call
  Db* db_ = nullptr;
  Ownership::Ticket ticket_;  // cluster mode: the map deciding the call; held until it ends
  Clock::time_point deadline_ = Clock::time_point::max();
};

// A write prepared from its request (KvService::PrepareX), logged by the caller (alone, or with
// others in one Db::WriteMany), then finished (KvService::FinishWrite).
struct KvService::PendingWrite {
  WriteBatch batch;
  WriteOptions options;
  // fields[i] names condition i in the request, mutations[i] the mutation it belongs to
  // (BatchInsert; empty otherwise).
  std::vector<std::string> fields;
  std::vector<int> mutations;
  bool return_current = false;
  std::vector<std::string_view> keys;  // the request's keys (it outlives the write)
  const char* what = "";               // "put", "delete", "batch_insert"
  ReplicaBinding replica;              // a replicated range's write: its replica here
  WriteResult result;
};

}  // namespace grove::service
