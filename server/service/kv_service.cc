#include "service/kv_service.h"

#include <optional>
#include <string>
#include <vector>

#include "grove/v1/metadata.h"
#include "grove/write_batch.h"

#include "metrics/engine_metrics.h"
#include "service/kv_call.h"
#include "service/status_mapping.h"
#include "service/trace_record.h"
#include "service/version.h"
#include "util/clock.h"

namespace grove::service {
namespace {

// BatchGet reads this many keys per engine call, checking the response size and the deadline in
// between, so that memory stays bounded by max_batch_bytes plus one chunk.
constexpr int kBatchGetChunk = 128;

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

KvService::KvService(KvServiceOptions options, EngineHandle* engine, const Authorizer* auth,
                     metrics::ServerMetrics* metrics, spdlog::logger* log, Ownership* ownership,
                     metrics::GrpcMetrics* grpc_metrics, trace::Tracer* tracer,
                     ReplicaHost* replicas)
    : options_(std::move(options)),
      engine_(engine),
      auth_(auth),
      metrics_(metrics),
      log_(log),
      ownership_(ownership),
      grpc_metrics_(grpc_metrics),
      tracer_(tracer),
      replicas_(replicas) {
  if (grpc_metrics_ == nullptr) return;
  for (size_t i = 0; i < batched_metrics_.size(); ++i) {
    batched_metrics_[i] =
        grpc_metrics_->ForMethod(std::string("/grove.v1.KV/") + kBatchedMethods[i], "batched");
  }
}

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

grpc::Status KvService::FinishWrite(const Call& call, PendingWrite* w, const Status& s) {
  if (s.ok()) {
    call.Applied(w->keys);
    return grpc::Status::OK;
  }
  if (s.code() != StatusCode::kFailedPrecondition || w->result.failed_condition < 0) {
    return EngineError(s, w->what);
  }
  const WriteResult& result = w->result;
  const auto i = static_cast<size_t>(result.failed_condition);
  // The engine names "conditions[i]"; the client knows the field of its request.
  std::string message(s.message());
  if (const size_t colon = message.find(": "); colon != std::string::npos) {
    message = message.substr(colon + 2);
  }
  CallMetadata* md = call.metadata();
  md->AddTrailer("grove-current-found", result.current_found ? "1" : "0");
  if (result.current_found) {
    md->AddTrailer("grove-current-version", std::to_string(result.current_version));
    if (w->return_current) md->AddTrailer("grove-current-value-bin", result.current_value);
  }
  if (i < w->mutations.size()) {
    md->AddTrailer("grove-failed-mutation", std::to_string(w->mutations[i]));
  }
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      (i < w->fields.size() ? w->fields[i] : "precondition") + ": " + message);
}

grpc::Status KvService::RunWrite(const Call& call, PendingWrite* w) {
  if (w->replica.range != nullptr) return RunReplicatedWrite(call, w);
  return FinishWrite(call, w, call.db()->Write(w->batch, w->options, &w->result));
}

grpc::Status KvService::Get(grpc::ServerContext* context, const v1::GetRequest* request,
                            v1::GetResponse* response) {
  Call call(this, context, Role::kRead, "Get");
  if (!call.ok()) return call.status();
  grpc::Status s = DoGet(call, *request, response);
  if (Traced()) tracer_->Add(TraceOf(*request, *response, s));
  return s;
}

grpc::Status KvService::DoGet(const Call& call, const v1::GetRequest& request,
                              v1::GetResponse* response) {
  if (CheckResult r = CheckGet(request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request.key(), "key"); !o.ok()) return o;
  ReplicaBinding binding;
  if (grpc::Status r = ReplicaOf(call, request.key(), &binding); !r.ok()) return r;
  if (grpc::Status r = LeaderRead(call, binding); !r.ok()) return r;
  ValueMeta meta;
  StatusOr<bool> found = call.db()->GetWithMeta(request.key(), response->mutable_value(), &meta);
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
  grpc::Status s = DoBatchGet(call, *request, response);
  if (Traced()) tracer_->Add(TraceOf(*request, *response, s));
  return s;
}

grpc::Status KvService::DoBatchGet(const Call& call, const v1::BatchGetRequest& request,
                                   v1::BatchGetResponse* response) {
  if (CheckResult r = CheckBatchGet(request, options_.limits); !r.ok()) return Reject(r);
  for (int i = 0; i < request.keys_size(); ++i) {
    grpc::Status o = call.Owns(request.keys(i), "keys[" + std::to_string(i) + "]");
    if (!o.ok()) return o;
  }
  if (grpc::Status r = LeaderReadOfKeys(call, request.keys()); !r.ok()) return r;

  uint64_t bytes = 0;
  std::vector<Slice> keys;
  std::vector<std::optional<std::string>> values;
  for (int begin = 0; begin < request.keys_size(); begin += kBatchGetChunk) {
    if (grpc::Status s = call.Continue("during BatchGet"); !s.ok()) return s;
    const int end = std::min(request.keys_size(), begin + kBatchGetChunk);
    keys.clear();
    for (int i = begin; i < end; ++i) keys.emplace_back(request.keys(i));
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
  const grpc::Status s = [&] {
    PendingWrite w;
    if (grpc::Status p = PreparePut(call, *request, &w); !p.ok()) return p;
    grpc::Status r = RunWrite(call, &w);
    if (r.ok()) response->set_version(w.result.version);
    return r;
  }();
  if (Traced()) tracer_->Add(TraceOf(*request, s));
  return s;
}

grpc::Status KvService::PreparePut(const Call& call, const v1::PutRequest& request,
                                   PendingWrite* w) {
  if (CheckResult r = CheckPut(request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request.key(), "key"); !o.ok()) return o;
  if (request.ttl_ms() > 0) {
    w->batch.PutExpiring(request.key(), request.value(), NowUnixMillis() + request.ttl_ms());
  } else {
    w->batch.Put(request.key(), request.value());
  }
  w->options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  if (request.has_precondition()) {
    w->options.conditions.push_back(ToCondition(request.key(), request.precondition()));
    w->fields = {"precondition"};
  }
  w->return_current = request.return_current();
  w->keys = {request.key()};
  w->what = "put";
  return BindReplica(call, w);
}

grpc::Status KvService::Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                               v1::DeleteResponse* response) {
  Call call(this, context, Role::kWrite, "Delete");
  if (!call.ok()) return call.status();
  const grpc::Status s = [&] {
    PendingWrite w;
    if (grpc::Status p = PrepareDelete(call, *request, &w); !p.ok()) return p;
    grpc::Status r = RunWrite(call, &w);
    if (r.ok()) response->set_version(w.result.version);
    return r;
  }();
  if (Traced()) tracer_->Add(TraceOf(*request, s));
  return s;
}

grpc::Status KvService::PrepareDelete(const Call& call, const v1::DeleteRequest& request,
                                      PendingWrite* w) {
  if (CheckResult r = CheckDelete(request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.Owns(request.key(), "key"); !o.ok()) return o;
  w->batch.Delete(request.key());
  w->options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  if (request.has_precondition()) {
    w->options.conditions.push_back(ToCondition(request.key(), request.precondition()));
    w->fields = {"precondition"};
  }
  w->return_current = request.return_current();
  w->keys = {request.key()};
  w->what = "delete";
  return BindReplica(call, w);
}

grpc::Status KvService::BatchInsert(grpc::ServerContext* context,
                                    const v1::BatchInsertRequest* request,
                                    v1::BatchInsertResponse* response) {
  Call call(this, context, Role::kWrite, "BatchInsert");
  if (!call.ok()) return call.status();
  const grpc::Status s = [&] {
    PendingWrite w;
    if (grpc::Status p = PrepareBatchInsert(call, *request, &w); !p.ok()) return p;
    grpc::Status r = RunWrite(call, &w);
    if (!r.ok()) return r;
    response->set_applied(static_cast<uint32_t>(request->mutations_size()));
    response->set_version(w.result.version);
    return grpc::Status::OK;
  }();
  if (Traced()) tracer_->Add(TraceOf(*request, s));
  return s;
}

grpc::Status KvService::PrepareBatchInsert(const Call& call, const v1::BatchInsertRequest& request,
                                           PendingWrite* w) {
  if (CheckResult r = CheckBatchInsert(request, options_.limits); !r.ok()) return Reject(r);
  for (int i = 0; i < request.mutations_size(); ++i) {
    grpc::Status o =
        call.Owns(request.mutations(i).key(), "mutations[" + std::to_string(i) + "].key");
    if (!o.ok()) return o;
  }
  w->options.room_wait = call.Remaining();  // wait for dirty-page room up to the deadline
  const uint64_t now_ms = NowUnixMillis();  // one clock reading: one expiry for the batch
  w->keys.reserve(request.mutations_size());
  for (int i = 0; i < request.mutations_size(); ++i) {
    const v1::Mutation& m = request.mutations(i);
    if (m.type() == v1::Mutation::PUT && m.ttl_ms() > 0) {
      w->batch.PutExpiring(m.key(), m.value(), now_ms + m.ttl_ms());
    } else if (m.type() == v1::Mutation::PUT) {
      w->batch.Put(m.key(), m.value());
    } else {
      w->batch.Delete(m.key());
    }
    if (m.has_precondition()) {
      w->options.conditions.push_back(ToCondition(m.key(), m.precondition()));
      w->fields.push_back("mutations[" + std::to_string(i) + "].precondition");
      w->mutations.push_back(i);
    }
    w->keys.emplace_back(m.key());
  }
  w->return_current = request.return_current();
  w->what = "batch_insert";
  return BindReplica(call, w);
}

grpc::Status KvService::Scan(grpc::ServerContext* context, const v1::ScanRequest* request,
                             grpc::ServerWriter<v1::ScanResponse>* writer) {
  Call call(this, context, Role::kRead, "Scan");
  if (!call.ok()) return call.status();
  uint32_t returned = 0;
  grpc::Status s = DoScan(call, context, request, writer, &returned);
  if (Traced()) tracer_->Add(TraceOfScan(*request, returned, s));
  return s;
}

grpc::Status KvService::DoScan(const Call& call, grpc::ServerContext* context,
                               const v1::ScanRequest* request,
                               grpc::ServerWriter<v1::ScanResponse>* writer, uint32_t* returned) {
  if (CheckResult r = CheckScan(*request, options_.limits); !r.ok()) return Reject(r);

  ScanOptions scan;
  scan.lower = request->start();
  scan.upper = request->end();
  scan.has_upper = !request->end().empty();
  scan.reverse = request->reverse();
  scan.keys_only = request->keys_only();
  std::string stopped_at;  // cluster mode: where the scan goes on at the next range's owner
  if (grpc::Status o = call.ClipScan(&scan, &stopped_at); !o.ok()) return o;
  {
    ReplicaBinding binding;  // the scan is within one range now: the range of its lower bound
    if (grpc::Status r = ReplicaOf(call, scan.lower, &binding); !r.ok()) return r;
    if (grpc::Status r = LeaderRead(call, binding); !r.ok()) return r;
  }
  // The limit's entries and one more, which tells `more`; no limit given: unknown.
  scan.expected_entries = request->limit() == 0 ? 0 : uint64_t{request->limit()} + 1;
  StatusOr<std::unique_ptr<Iterator>> it = call.db()->NewIterator(scan);
  if (!it.ok()) return EngineError(it.status(), "scan");
  Iterator& iter = **it;

  const uint32_t limit = EffectiveScanLimit(*request, options_.limits);
  uint32_t& count = *returned;
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
  grpc::Status s = DoDeleteRange(call, *request, response);
  if (Traced()) tracer_->Add(TraceOf(*request, *response, s));
  return s;
}

grpc::Status KvService::DoDeleteRange(const Call& call, const v1::DeleteRangeRequest& request,
                                      v1::DeleteRangeResponse* response) {
  if (CheckResult r = CheckDeleteRange(request, options_.limits); !r.ok()) return Reject(r);
  if (grpc::Status o = call.OwnsSpan(request.start(), request.end()); !o.ok()) return o;
  DeleteRangeResult result;
  ReplicaBinding binding;
  if (grpc::Status r = ReplicaOf(call, request.start(), &binding); !r.ok()) return r;
  if (grpc::Status r = SpanInOneReplicatedRange(call, binding, request); !r.ok()) return r;
  if (binding.range != nullptr) {
    if (grpc::Status r = RunReplicatedDeleteRange(call, binding, request, &result); !r.ok()) {
      return r;
    }
  } else if (Status s =
                 call.db()->DeleteRange(request.start(), request.end(), request.limit(), &result);
             !s.ok()) {
    return EngineError(s, "delete_range");
  }
  response->set_deleted(result.deleted);
  response->set_more(result.more);
  response->set_resume_key(result.resume_key);
  response->set_limited_by(result.limited_by);
  response->set_version(result.version);
  return grpc::Status::OK;
}

}  // namespace grove::service
