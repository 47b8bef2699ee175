// grove.v1.KV/Batch: many calls on one stream (the contract is in kv.proto).
//
// The handler reads one message, answers every sub-request in it, and only then reads the next:
// a stream has at most one message in flight, and a client that sends faster waits on gRPC's
// flow control (back-pressure without dropping anything).
//
// A message runs in order, with writes deferred so that they share one log sync:
//
//   sub-request        what happens
//   Get, BatchGet      runs at once, unless a deferred write touches one of its keys: then the
//                      deferred writes are logged first (the read sees them)
//   Put, Delete,       checked at once (a refusal is answered at once); then deferred
//   BatchInsert
//   DeleteRange        the deferred writes are logged first, then it runs
//   a replicated       the deferred writes are logged first, then it is proposed to its
//   range's write      range's Raft group and answered once applied (kv_replicated.cc)
//   end of message     the deferred writes are logged
//   (and whenever kMaxDeferredWrites are deferred)
//
// Deferred writes are logged by one Db::WriteMany: writes on distinct keys share a group commit,
// writes of one key apply in message order. Results already known are sent before a sync, so a
// read never waits for the message's writes unless it must. Each sub-request has its own
// KvService::Call: its admission slot, role, deadline, ownership ticket and status metadata.

#include <deque>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "grove/v1/metadata.h"

#include "service/kv_call.h"
#include "service/trace_record.h"

namespace grove::service {
namespace {

// Deferred writes are logged once this many wait: each holds an admission slot (a stream must not
// take limits.max_inflight_requests alone), and one group commit of more gains little.
constexpr size_t kMaxDeferredWrites = 64;

Role RoleOf(v1::SubRequest::CallCase kind) {
  return kind == v1::SubRequest::kGet || kind == v1::SubRequest::kBatchGet ? Role::kRead
                                                                           : Role::kWrite;
}

// The keys a read looks at, for the same-key rule.
std::vector<std::string_view> ReadKeys(const v1::SubRequest& r) {
  if (r.has_get()) return {r.get().key()};
  return {r.batch_get().keys().begin(), r.batch_get().keys().end()};
}

}  // namespace

// One sub-request while its message runs. Not movable: `md` and `call` point into it.
struct KvService::SubCall {
  SubCall(grpc::ServerContext* context, const v1::SubRequest* r)
      : request(r), md(context, result.mutable_status()) {
    result.set_tag(r->tag());
  }
  SubCall(const SubCall&) = delete;
  SubCall& operator=(const SubCall&) = delete;

  const v1::SubRequest* const request;
  v1::SubResult result;
  SubRequestMetadata md;
  std::optional<Call> call;  // from the gate until the result is known
  PendingWrite write;
  metrics::MethodMetrics* method = nullptr;
  std::chrono::steady_clock::time_point started;
  bool answered = false;
  bool served = false;  // passed the gate: traced when sampled
};

// Runs one request message: see the table above.
class KvService::MessageRun {
 public:
  MessageRun(KvService* service, grpc::ServerContext* context,
             grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* stream)
      : service_(service), context_(context), stream_(stream) {}

  // OK once every sub-request was answered; CANCELLED when the client went away meanwhile.
  grpc::Status Run(const v1::BatchRequest& request) {
    const Clock::time_point received = Clock::now();
    const uint32_t max = service_->options_.limits.max_batch_entries;
    for (int i = 0; i < request.requests_size(); ++i) {
      SubCall& sub = subs_.emplace_back(context_, &request.requests(i));
      if (static_cast<uint32_t>(request.requests_size()) > max) {
        // Refused whole: nothing of the message was applied.
        if (i == 0) service_->metrics_->LimitRejected("max_batch_entries");
        sub.md.AddTrailer(v1::kNotAppliedMetadata, "1");
        Answer(&sub, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                  "requests: " + std::to_string(request.requests_size()) +
                                      " sub-requests in one message exceed "
                                      "limits.max_batch_entries (" +
                                      std::to_string(max) + ")"));
      } else {
        Start(&sub, i, received);
      }
      // A cancelled stream stops here: what it did not reach is not applied.
      if (!sent_ok_ || context_->IsCancelled()) return Gone();
    }
    LogDeferred();
    Send();
    return sent_ok_ ? grpc::Status::OK : Gone();
  }

 private:
  void Start(SubCall* sub, int index, Clock::time_point received) {
    const v1::SubRequest& r = *sub->request;
    const v1::SubRequest::CallCase kind = r.call_case();
    if (kind == v1::SubRequest::CALL_NOT_SET) {
      Answer(sub, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                               "requests[" + std::to_string(index) +
                                   "]: no call set (get, batch_get, put, delete, batch_insert "
                                   "or delete_range)"));
      return;
    }
    static_assert(v1::SubRequest::kDeleteRange - v1::SubRequest::kGet + 1 ==
                      KvService::kBatchedMethods.size(),
                  "kBatchedMethods follows the call fields get (10) .. delete_range (15)");
    const size_t index_of_kind = kind - v1::SubRequest::kGet;
    const char* method = KvService::kBatchedMethods[index_of_kind];
    sub->method = service_->batched_metrics_[index_of_kind];
    if (sub->method != nullptr) sub->method->Started();
    sub->started = std::chrono::steady_clock::now();
    Clock::time_point deadline = context_->deadline();
    if (r.timeout_ms() > 0) {
      deadline = std::min(deadline, received + std::chrono::milliseconds(r.timeout_ms()));
    }
    sub->call.emplace(service_, context_, &sub->md, deadline, RoleOf(kind), method);
    if (!sub->call->ok()) return Answer(sub, sub->call->status());
    sub->served = true;
    const Call& call = *sub->call;
    switch (kind) {
      case v1::SubRequest::kGet:
      case v1::SubRequest::kBatchGet: {
        const std::vector<std::string_view> keys = ReadKeys(r);
        for (std::string_view k : keys) {
          if (deferred_keys_.contains(k)) {
            LogDeferred();  // the read must see the message's earlier writes of its keys
            break;
          }
        }
        if (!sent_ok_) return;
        if (kind == v1::SubRequest::kGet) {
          return Answer(sub, service_->DoGet(call, r.get(), sub->result.mutable_get()));
        }
        return Answer(sub,
                      service_->DoBatchGet(call, r.batch_get(), sub->result.mutable_batch_get()));
      }
      case v1::SubRequest::kDeleteRange:
        LogDeferred();
        if (!sent_ok_) return;
        return Answer(sub, service_->DoDeleteRange(call, r.delete_range(),
                                                   sub->result.mutable_delete_range()));
      default:
        break;
    }
    grpc::Status prepared;
    if (kind == v1::SubRequest::kPut) {
      prepared = service_->PreparePut(call, r.put(), &sub->write);
    } else if (kind == v1::SubRequest::kDelete) {
      prepared = service_->PrepareDelete(call, r.delete_(), &sub->write);
    } else {
      prepared = service_->PrepareBatchInsert(call, r.batch_insert(), &sub->write);
    }
    if (!prepared.ok()) return Answer(sub, prepared);
    if (sub->write.replica.range != nullptr) {
      // A replicated range's write is its own Raft entry, after the message's earlier writes.
      LogDeferred();
      if (!sent_ok_) return;
      return AnswerWrite(sub, service_->RunWrite(call, &sub->write));
    }
    deferred_.push_back(sub);
    deferred_keys_.insert(sub->write.keys.begin(), sub->write.keys.end());
    if (deferred_.size() >= kMaxDeferredWrites) LogDeferred();
  }

  // Logs the deferred writes in one Db::WriteMany and answers them. What is answered already
  // goes out first, so that it does not wait for the sync.
  void LogDeferred() {
    if (deferred_.empty()) return;
    Send();
    if (!sent_ok_) return;  // the client is gone: its deferred writes are not applied
    std::vector<WriteRequest> writes;
    writes.reserve(deferred_.size());
    for (SubCall* sub : deferred_) {
      writes.push_back({&sub->write.batch, &sub->write.options, &sub->write.result, {}});
    }
    deferred_.front()->call->db()->WriteMany(writes);
    for (size_t k = 0; k < deferred_.size(); ++k) {
      SubCall* sub = deferred_[k];
      AnswerWrite(sub, service_->FinishWrite(*sub->call, &sub->write, writes[k].status));
    }
    deferred_.clear();
    deferred_keys_.clear();
  }

  // Answers a write with its outcome, and its version when it applied.
  void AnswerWrite(SubCall* sub, const grpc::Status& s) {
    if (s.ok()) {
      const uint64_t version = sub->write.result.version;
      switch (sub->request->call_case()) {
        case v1::SubRequest::kPut:
          sub->result.mutable_put()->set_version(version);
          break;
        case v1::SubRequest::kDelete:
          sub->result.mutable_delete_()->set_version(version);
          break;
        default:
          sub->result.mutable_batch_insert()->set_applied(
              static_cast<uint32_t>(sub->request->batch_insert().mutations_size()));
          sub->result.mutable_batch_insert()->set_version(version);
          break;
      }
    }
    Answer(sub, s);
  }

  // Sets the sub-request's status, ends its call and queues its result; a response message that
  // reached scan_message_bytes is sent.
  void Answer(SubCall* sub, const grpc::Status& s) {
    v1::SubStatus* status = sub->result.mutable_status();
    status->set_code(static_cast<int32_t>(s.error_code()));
    status->set_message(s.error_message());
    if (!s.ok()) sub->result.clear_result();
    sub->answered = true;
    if (sub->method != nullptr) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - sub->started;
      sub->method->Handled(static_cast<int>(s.error_code()), elapsed.count());
    }
    sub->call.reset();  // frees its admission slot and engine lease
    if (sub->served && service_->Traced()) {
      if (std::optional<trace::Record> r = TraceOf(*sub->request, sub->result)) {
        service_->tracer_->Add(std::move(*r));
      }
    }
    out_bytes_ += sub->result.ByteSizeLong();
    *out_.add_results() = std::move(sub->result);
    if (out_bytes_ >= service_->options_.scan_message_bytes) Send();
  }

  void Send() {
    if (out_.results_size() == 0 || !sent_ok_) return;
    sent_ok_ = stream_->Write(out_);
    out_.Clear();
    out_bytes_ = 0;
  }

  // The client went away: what was not answered counts as cancelled (and was not applied).
  grpc::Status Gone() {
    for (SubCall& sub : subs_) {
      if (sub.answered || sub.method == nullptr) continue;
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - sub.started;
      sub.method->Handled(static_cast<int>(grpc::StatusCode::CANCELLED), elapsed.count());
    }
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
  }

  KvService* const service_;
  grpc::ServerContext* const context_;
  grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* const stream_;
  std::deque<SubCall> subs_;  // a deque: SubCalls do not move
  std::vector<SubCall*> deferred_;
  std::unordered_set<std::string_view> deferred_keys_;
  v1::BatchResponse out_;
  uint64_t out_bytes_ = 0;
  bool sent_ok_ = true;
};

grpc::Status KvService::Batch(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::BatchResponse, v1::BatchRequest>* stream) {
  // A stream without a valid token ends at once; roles are checked per sub-request.
  if (grpc::Status a = auth_->Check(*context, Role::kRead, "Batch");
      a.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return a;
  }
  v1::BatchRequest request;
  for (;;) {
    StreamWaiting();
    const bool got = stream->Read(&request);
    if (!StreamWorking()) {
      context->AddTrailingMetadata(v1::kNotAppliedMetadata, "1");
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the server is shutting down; this message was not applied");
    }
    if (!got) return grpc::Status::OK;  // the client closed its side
    MessageRun run(this, context, stream);
    if (grpc::Status s = run.Run(request); !s.ok()) return s;
    if (draining_.load()) {
      context->AddTrailingMetadata(v1::kNotAppliedMetadata, "1");
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the server is shutting down; every sub-request sent after the last "
                          "answered one was not applied");
    }
  }
}

void KvService::StreamWaiting() {
  MutexLock lock(&streams_mu_);
  ++streams_waiting_;
}

bool KvService::StreamWorking() {
  MutexLock lock(&streams_mu_);
  --streams_waiting_;
  return !streams_closed_;
}

bool KvService::CloseStreamsIfIdle(int64_t calls) {
  MutexLock lock(&streams_mu_);
  if (calls > streams_waiting_) return false;
  streams_closed_ = true;
  return true;
}

}  // namespace grove::service
