#include "service/kv_service.h"

#include <optional>
#include <string>
#include <vector>

#include "grove/v1/metadata.h"
#include "grove/write_batch.h"

#include "metrics/engine_metrics.h"
#include "service/status_mapping.h"
#include "service/version.h"
#include "util/clock.h"

namespace grove::service {
namespace {

// BatchGet reads this many keys per engine call, checking the response size and the deadline in
// between, so that memory stays bounded by max_batch_bytes plus one chunk.
constexpr int kBatchGetChunk = 128;

grpc::Status DeadlineExceeded(std::string_view when) {
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      "deadline exceeded " + std::string(when));
}

// A validated precondition (request_checks.h) on `key`.
WriteCondition ToCondition(const std::string& key, const v1::Precondition& p) {
  WriteCondition c;
  c.key = key;
  switch (p.condition_case()) {
    case v1::Precondition::kValueEquals:
      c.kind = WriteCondition::Kind::kValueEquals;
      c.value = p.value_equals();
      break;
    case v1::Precondition::kVersionEquals:
      c.kind = WriteCondition::Kind::kVersionEquals;
      c.version = p.version_equals();
      break;
    default:
      c.kind = WriteCondition::Kind::kAbsent;
      break;
  }
  return c;
}

}  // namespace

// The gate every call passes (see kv_service.h); releases its admission slot when destroyed.
class KvService::Call {
 public:
  Call(KvService* service, grpc::ServerContext* context, Role role, std::string_view method)
      : service_(service), context_(context), md_(context), lease_(service->engine_) {
    const uint32_t now_inflight = service_->inflight_.fetch_add(1, std::memory_order_relaxed) + 1;
    service_->metrics_->RequestStarted();
    if (now_inflight > service_->options_.max_inflight_requests) {
      service_->metrics_->LimitRejected("max_inflight_requests");
      status_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "server busy: limits.max_inflight_requests (" +
                                 std::to_string(service_->options_.max_inflight_requests) +
                                 ") calls in flight; retry with backoff");
      return;
    }
    status_ = service_->auth_->Check(*context, role, method);
    if (!status_.ok()) return;
    db_ = lease_.db();
    if (db_ == nullptr) {
      // Refused before anything was applied: clients may retry writes on this UNAVAILABLE, unlike
      // one from a broken connection (docs/server.md, "Retrying writes").
      md_.AddTrailer(v1::kNotAppliedMetadata, "1");
      status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "the engine is not open (starting, recovering or shutting down)");
      return;
    }
    deadline_ = EffectiveDeadline(context->deadline(), Clock::now(), service_->options_.deadlines);
    if (Expired()) {
      status_ = DeadlineExceeded("before the call started");
      return;
    }
    if (service_->ownership_ != nullptr && role != Role::kAdmin) {
      status_ = service_->ownership_->Admit(&md_, role == Role::kWrite, &ticket_);
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
  CallMetadata* metadata() const { return &md_; }
  bool Expired() const { return Clock::now() >= deadline_; }
  // Time left until the effective deadline (0 when passed).
  std::chrono::milliseconds Remaining() const {
    const auto left = deadline_ - Clock::now();
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                    std::chrono::milliseconds(0));
  }

  // Cluster mode: OK when this node owns `key` (see service/ownership.h); always OK otherwise.
  grpc::Status Owns(std::string_view key, std::string_view field) const {
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.CheckKey(&md_, key, field);
  }
  grpc::Status OwnsSpan(std::string_view start, std::string_view end) const {
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.CheckSpan(&md_, start, end);
  }
  // Cluster mode: after a write was applied, its keys for the change records of moves.
  void Applied(const std::vector<std::string_view>& keys) const {
    if (ticket_.map() != nullptr) service_->ownership_->RecordWrites(keys);
  }
  // Cluster mode: narrows a scan to this node's range (Ownership::Ticket::ClipScan).
  grpc::Status ClipScan(ScanOptions* scan, std::string* stopped_at) const {
    stopped_at->clear();
    if (ticket_.map() == nullptr) return grpc::Status::OK;
    return ticket_.ClipScan(&md_, scan->reverse, &scan->lower, &scan->upper, &scan->has_upper,
                            stopped_at);
  }

  // DEADLINE_EXCEEDED or CANCELLED when the call should stop now, OK otherwise.
  grpc::Status Continue(std::string_view when) const {
    if (context_->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (Expired()) return DeadlineExceeded(when);
    return grpc::Status::OK;
  }

 private:
  KvService* const service_;
  grpc::ServerContext* const context_;
  mutable ContextMetadata md_;  // the checks' trailers; const methods add them too
  grpc::Status status_;
  EngineHandle::Lease lease_;  // held for the whole call
  Db* db_ = nullptr;
  Ownership::Ticket ticket_;  // cluster mode: the map deciding the call; held until it ends
  Clock::time_point deadline_ = Clock::time_point::max();
};

KvService::KvService(KvServiceOptions options, EngineHandle* engine, const Authorizer* auth,
                     metrics::ServerMetrics* metrics, spdlog::logger* log, Ownership* ownership)
    : options_(std::move(options)),
      engine_(engine),
      auth_(auth),
      metrics_(metrics),
      log_(log),
      ownership_(ownership) {}

grpc::Status KvService::EngineError(const Status& s, std::string_view what) {
  // Damage and IO failures are events an operator must see; everything else is the caller's.
  if (s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kInternal) {
    log_->error("{}: {}", what, s.ToString());
  }
  return ToGrpcStatus(s, what);
}

grpc::Status KvService::Reject(const CheckResult& r) {
  if (!r.limit.empty()) metrics_->LimitRejected(r.limit);
  return r.status;
}

grpc::Status KvService::ConditionalWrite(CallMetadata* md, Db* db, const WriteBatch& batch,
                                         const WriteOptions& options,
                                         const std::vector<std::string>& fields,
                                         const std::vector<int>& mutations, bool return_current,
                                         WriteResult* result, std::string_view what) {
  const Status s = db->Write(batch, options, result);
  if (s.code() != StatusCode::kFailedPrecondition || result->failed_condition < 0) {
    return EngineError(s, what);
  }
  const auto i = static_cast<size_t>(result->failed_condition);
  // The engine names "conditions[i]"; the client knows the field of its request.
  std::string message(s.message());
  if (const size_t colon = message.find(": "); colon != std::string::npos) {
    message = message.substr(colon + 2);
  }
  md->AddTrailer("grove-current-found", result->current_found ? "1" : "0");
  if (result->current_found) {
    md->AddTrailer("grove-current-version", std::to_string(result->current_version));
    if (return_current) md->AddTrailer("grove-current-value-bin", result->current_value);
  }
  if (i < mutations.size()) {
    md->AddTrailer("grove-failed-mutation", std::to_string(mutations[i]));
  }
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      (i < fields.size() ? fields[i] : "precondition") + ": " + message);
}

grpc::Status KvService::Get(grpc::ServerContext* context, const v1::GetRequest* request,
                            v1::GetResponse* response) {
  Call call(this, context, Role::kRead, "Get");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckGet(*request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request->key(), "key"); !o.ok()) return o;
  ValueMeta meta;
  StatusOr<bool> found = call.db()->GetWithMeta(request->key(), response->mutable_value(), &meta);
  if (!found.ok()) return EngineError(found.status(), "get");
  response->set_found(*found);
  response->set_version(meta.version);
  response->set_expires_at_ms(meta.expires_ms);
  if (!*found) response->clear_value();
  return grpc::Status::OK;
}

grpc::Status KvService::BatchGet(grpc::ServerContext* context, const v1::BatchGetRequest* request,
                                 v1::BatchGetResponse* response) {
  Call call(this, context, Role::kRead, "BatchGet");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckBatchGet(*request, options_.limits); !r.ok()) return Reject(r);
  for (int i = 0; i < request->keys_size(); ++i) {
    grpc::Status o = call.Owns(request->keys(i), "keys[" + std::to_string(i) + "]");
    if (!o.ok()) return o;
  }

  uint64_t bytes = 0;
  std::vector<Slice> keys;
  std::vector<std::optional<std::string>> values;
  for (int begin = 0; begin < request->keys_size(); begin += kBatchGetChunk) {
    if (grpc::Status s = call.Continue("during BatchGet"); !s.ok()) return s;
    const int end = std::min(request->keys_size(), begin + kBatchGetChunk);
    keys.clear();
    for (int i = begin; i < end; ++i) keys.emplace_back(request->keys(i));
    values.clear();
    if (Status s = call.db()->BatchGet(keys, &values); !s.ok()) {
      return EngineError(s, "batch_get");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      v1::GetResult* result = response->add_results();
      result->set_found(values[i].has_value());
      if (values[i]) {
        bytes += keys[i].size() + values[i]->size();
        *result->mutable_value() = std::move(*values[i]);
      }
    }
    // The response's size is known only after reading; refuse before it grows further.
    if (bytes > options_.limits.max_batch_bytes) {
      metrics_->LimitRejected("max_batch_bytes");
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "keys: the found keys and values exceed limits.max_batch_bytes (" +
                              std::to_string(options_.limits.max_batch_bytes) +
                              "); ask for fewer keys per call");
    }
  }
  return grpc::Status::OK;
}

grpc::Status KvService::Put(grpc::ServerContext* context, const v1::PutRequest* request,
                            v1::PutResponse* response) {
  Call call(this, context, Role::kWrite, "Put");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckPut(*request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request->key(), "key"); !o.ok()) return o;
  WriteBatch batch;
  if (request->ttl_ms() > 0) {
    batch.PutExpiring(request->key(), request->value(), NowUnixMillis() + request->ttl_ms());
  } else {
    batch.Put(request->key(), request->value());
  }
  WriteOptions options;
  options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  if (request->has_precondition()) {
    options.conditions.push_back(ToCondition(request->key(), request->precondition()));
  }
  WriteResult result;
  grpc::Status s = ConditionalWrite(call.metadata(), call.db(), batch, options, {"precondition"},
                                    {}, request->return_current(), &result, "put");
  if (s.ok()) {
    response->set_version(result.version);
    call.Applied({request->key()});
  }
  return s;
}

grpc::Status KvService::Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                               v1::DeleteResponse* response) {
  Call call(this, context, Role::kWrite, "Delete");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckDelete(*request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request->key(), "key"); !o.ok()) return o;
  WriteBatch batch;
  batch.Delete(request->key());
  WriteOptions options;
  options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  if (request->has_precondition()) {
    options.conditions.push_back(ToCondition(request->key(), request->precondition()));
  }
  WriteResult result;
  grpc::Status s = ConditionalWrite(call.metadata(), call.db(), batch, options, {"precondition"},
                                    {}, request->return_current(), &result, "delete");
  if (s.ok()) {
    response->set_version(result.version);
    call.Applied({request->key()});
  }
  return s;
}

grpc::Status KvService::BatchInsert(grpc::ServerContext* context,
                                    const v1::BatchInsertRequest* request,
                                    v1::BatchInsertResponse* response) {
  Call call(this, context, Role::kWrite, "BatchInsert");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckBatchInsert(*request, options_.limits); !r.ok()) return Reject(r);
  for (int i = 0; i < request->mutations_size(); ++i) {
    grpc::Status o =
        call.Owns(request->mutations(i).key(), "mutations[" + std::to_string(i) + "].key");
    if (!o.ok()) return o;
  }
  WriteBatch batch;
  WriteOptions options;
  options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  std::vector<std::string> fields;
  std::vector<int> mutations;
  const uint64_t now_ms = NowUnixMillis();  // one clock reading: one expiry for the batch
  for (int i = 0; i < request->mutations_size(); ++i) {
    const v1::Mutation& m = request->mutations(i);
    if (m.type() == v1::Mutation::PUT && m.ttl_ms() > 0) {
      batch.PutExpiring(m.key(), m.value(), now_ms + m.ttl_ms());
    } else if (m.type() == v1::Mutation::PUT) {
      batch.Put(m.key(), m.value());
    } else {
      batch.Delete(m.key());
    }
    if (m.has_precondition()) {
      options.conditions.push_back(ToCondition(m.key(), m.precondition()));
      fields.push_back("mutations[" + std::to_string(i) + "].precondition");
      mutations.push_back(i);
    }
  }
  WriteResult result;
  grpc::Status s = ConditionalWrite(call.metadata(), call.db(), batch, options, fields, mutations,
                                    request->return_current(), &result, "batch_insert");
  if (!s.ok()) return s;
  std::vector<std::string_view> keys;
  keys.reserve(request->mutations_size());
  for (const v1::Mutation& m : request->mutations()) keys.emplace_back(m.key());
  call.Applied(keys);
  response->set_applied(static_cast<uint32_t>(request->mutations_size()));
  response->set_version(result.version);
  return grpc::Status::OK;
}

grpc::Status KvService::Scan(grpc::ServerContext* context, const v1::ScanRequest* request,
                             grpc::ServerWriter<v1::ScanResponse>* writer) {
  Call call(this, context, Role::kRead, "Scan");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckScan(*request, options_.limits); !r.ok()) return Reject(r);

  ScanOptions scan;
  scan.lower = request->start();
  scan.upper = request->end();
  scan.has_upper = !request->end().empty();
  scan.reverse = request->reverse();
  scan.keys_only = request->keys_only();
  std::string stopped_at;  // cluster mode: where the scan goes on at the next range's owner
  if (grpc::Status o = call.ClipScan(&scan, &stopped_at); !o.ok()) return o;
  // The limit's entries and one more, which tells `more`; no limit given: unknown.
  scan.expected_entries = request->limit() == 0 ? 0 : uint64_t{request->limit()} + 1;
  StatusOr<std::unique_ptr<Iterator>> it = call.db()->NewIterator(scan);
  if (!it.ok()) return EngineError(it.status(), "scan");
  Iterator& iter = **it;

  const uint32_t limit = EffectiveScanLimit(*request, options_.limits);
  uint32_t count = 0;
  uint64_t message_bytes = 0;
  v1::ScanResponse message;
  auto flush = [&]() -> grpc::Status {
    message.set_last_key(message.entries(message.entries_size() - 1).key());
    if (!writer->Write(message)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
    message.Clear();
    message_bytes = 0;
    return call.Continue("during Scan; resume after last_key");
  };
  for (; iter.Valid() && count < limit; iter.Next()) {
    // Small entries fill a message slowly while the reads behind them may hit the disk: check
    // the budget every 1024 entries too, sending what was read so the client can resume.
    if ((count & 1023) == 1023 && call.Expired()) {
      return message.entries_size() > 0 ? flush() : call.Continue("during Scan");
    }
    const Slice key = iter.key();
    const Slice value = request->keys_only() ? Slice() : iter.value();
    const uint64_t entry_bytes = key.size() + value.size();
    // A message holds at least one entry, and otherwise stays within scan_message_bytes.
    if (message.entries_size() > 0 && message_bytes + entry_bytes > options_.scan_message_bytes) {
      if (grpc::Status s = flush(); !s.ok()) return s;
    }
    v1::KeyValue* kv = message.add_entries();
    kv->set_key(key.data(), key.size());
    kv->set_value(value.data(), value.size());
    if (const uint64_t expires = iter.expires_ms(); expires != 0) kv->set_expires_at_ms(expires);
    message_bytes += entry_bytes;
    ++count;
  }
  if (!iter.status().ok()) {
    // Entries already sent stay valid; the client resumes after the last key it received.
    return EngineError(iter.status(), "scan");
  }
  if (!stopped_at.empty() && !(count == limit && iter.Valid())) {
    // The range ended before the scan did: a routing client goes on at the next owner.
    context->AddTrailingMetadata(v1::kScanStoppedAtMetadata, stopped_at);
  }
  if (message.entries_size() > 0) {
    message.set_more(count == limit && iter.Valid());
    message.set_last_key(message.entries(message.entries_size() - 1).key());
    if (!writer->Write(message)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
  }
  return grpc::Status::OK;
}

grpc::Status KvService::Stats(grpc::ServerContext* context, const v1::StatsRequest*,
                              v1::StatsResponse* response) {
  Call call(this, context, Role::kRead, "Stats");
  if (!call.ok()) return call.status();
  const DbStats s = call.db()->GetStats();
  response->set_version(kVersion);
  response->set_variant(s.index.variant);
  response->set_io_backend(s.io_backend);
  response->set_uptime_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());

  v1::StatsResponse::Operations* ops = response->mutable_operations();
  ops->set_gets(s.gets);
  ops->set_puts(s.puts);
  ops->set_deletes(s.deletes);
  ops->set_writes(s.writes);
  ops->set_scans(s.scans);

  v1::StatsResponse::Storage* st = response->mutable_storage();
  st->set_data_file_pages(s.data_file_pages);
  st->set_free_pages(s.free_pages);
  st->set_blob_values(s.blob_values);
  st->set_blob_pages(s.blob_pages);
  st->set_recovery_replayed_records(s.recovery_replayed_records);
  st->set_recovery_seconds(s.recovery_seconds);

  v1::StatsResponse::Expiry* ex = response->mutable_expiry();
  ex->set_expired_reads(s.expiry.expired_reads);
  ex->set_keys_removed(s.expiry.keys_removed);
  ex->set_sweeps(s.expiry.sweeps);
  ex->set_sweeping(s.expiry.may_hold_expiring);

  v1::StatsResponse::Cache* c = response->mutable_cache();
  c->set_capacity_pages(s.cache.capacity_pages);
  c->set_resident_pages(s.cache.resident_pages);
  c->set_dirty_pages(s.cache.dirty_pages);
  c->set_hits(s.cache.hits);
  c->set_misses(s.cache.misses);
  c->set_evictions(s.cache.evictions);
  for (int i = 0; i < kNumIoCauses; ++i) {
    const char* cause = metrics::IoCauseLabel(static_cast<IoCause>(i));
    (*c->mutable_page_reads())[cause] = s.cache.page_reads[i];
    (*c->mutable_page_writes())[cause] = s.cache.page_writes[i];
  }
  c->set_prefetch_issued(s.cache.prefetch_issued);
  c->set_prefetch_used(s.cache.prefetch_used);
  c->set_prefetch_wasted(s.cache.prefetch_wasted);
  c->set_checksum_failures(s.cache.checksum_failures);

  v1::StatsResponse::Wal* w = response->mutable_wal();
  w->set_records(s.wal.records);
  w->set_bytes(s.wal.bytes);
  w->set_group_commits(s.wal.groups);
  w->set_syncs(s.wal.syncs);
  w->set_segments(s.wal.segments);
  w->set_next_lsn(s.wal.next_lsn);
  w->set_sync_p50_seconds(s.wal.sync_seconds.Percentile(50));
  w->set_sync_p99_seconds(s.wal.sync_seconds.Percentile(99));

  v1::StatsResponse::Checkpoint* cp = response->mutable_checkpoint();
  cp->set_count(s.checkpoint.count);
  cp->set_failures(s.checkpoint.failures);
  cp->set_epoch(s.checkpoint.epoch);
  cp->set_redo_lsn(s.checkpoint.redo_lsn);
  cp->set_pages_written(s.checkpoint.pages_written);
  cp->set_bytes_written(s.checkpoint.bytes_written);
  cp->set_duration_p50_seconds(s.checkpoint.duration_seconds.Percentile(50));
  cp->set_duration_p99_seconds(s.checkpoint.duration_seconds.Percentile(99));

  v1::StatsResponse::Index* ix = response->mutable_index();
  ix->set_height(s.index.height);
  ix->set_inner_pages(s.index.inner_pages);
  ix->set_leaf_pages(s.index.leaf_pages);
  ix->set_inner_bytes(s.index.inner_bytes);
  ix->set_model_bytes(s.index.model_bytes);
  ix->set_entries(s.index.entries);
  for (const auto& [name, value] : s.index.extra) (*ix->mutable_extra())[name] = value;
  return grpc::Status::OK;
}

grpc::Status KvService::DeleteRange(grpc::ServerContext* context,
                                    const v1::DeleteRangeRequest* request,
                                    v1::DeleteRangeResponse* response) {
  Call call(this, context, Role::kWrite, "DeleteRange");
  if (!call.ok()) return call.status();
  if (CheckResult r = CheckDeleteRange(*request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.OwnsSpan(request->start(), request->end()); !o.ok()) return o;
  DeleteRangeResult result;
  Status s = call.db()->DeleteRange(request->start(), request->end(), request->limit(), &result);
  if (!s.ok()) return EngineError(s, "delete_range");
  response->set_deleted(result.deleted);
  response->set_more(result.more);
  response->set_resume_key(result.resume_key);
  response->set_limited_by(result.limited_by);
  response->set_version(result.version);
  return grpc::Status::OK;
}

}  // namespace grove::service
