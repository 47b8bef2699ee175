#include "service/trace_record.h"

namespace grove::service {
namespace {

trace::Record Base(trace::Op op, const grpc::Status& status) {
  trace::Record r;
  r.op = op;
  r.code = static_cast<uint8_t>(status.error_code());
  return r;
}

void AddKey(trace::Record* r, const std::string& key) { r->entries.push_back({key, false, 0}); }
void AddPut(trace::Record* r, const std::string& key, size_t value_bytes) {
  r->entries.push_back({key, true, static_cast<uint32_t>(value_bytes)});
}

uint8_t PreconditionFlags(const v1::Precondition& p) {
  uint8_t kind = 0;
  switch (p.condition_case()) {
    case v1::Precondition::kAbsent:
      kind = 1;
      break;
    case v1::Precondition::kValueEquals:
      kind = 2;
      break;
    case v1::Precondition::kVersionEquals:
      kind = 3;
      break;
    case v1::Precondition::CONDITION_NOT_SET:
      return 0;
  }
  return trace::record_flags::kPrecondition |
         static_cast<uint8_t>(kind << trace::record_flags::kPreconditionKindShift);
}

}  // namespace

trace::Record TraceOf(const v1::GetRequest& request, const v1::GetResponse& response,
                      const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kGet, status);
  AddKey(&r, request.key());
  r.result = status.ok() && response.found() ? 1 : 0;
  return r;
}

trace::Record TraceOf(const v1::BatchGetRequest& request, const v1::BatchGetResponse& response,
                      const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kBatchGet, status);
  for (const std::string& k : request.keys()) AddKey(&r, k);
  if (status.ok()) {
    for (const v1::GetResult& g : response.results()) r.result += g.found() ? 1 : 0;
  }
  return r;
}

trace::Record TraceOf(const v1::PutRequest& request, const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kPut, status);
  AddPut(&r, request.key(), request.value().size());
  if (request.has_precondition()) r.flags = PreconditionFlags(request.precondition());
  return r;
}

trace::Record TraceOf(const v1::DeleteRequest& request, const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kDelete, status);
  AddKey(&r, request.key());
  if (request.has_precondition()) r.flags = PreconditionFlags(request.precondition());
  return r;
}

trace::Record TraceOf(const v1::BatchInsertRequest& request, const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kBatchInsert, status);
  for (const v1::Mutation& m : request.mutations()) {
    if (m.type() == v1::Mutation::PUT) {
      AddPut(&r, m.key(), m.value().size());
    } else {
      AddKey(&r, m.key());
    }
    if (r.flags == 0 && m.has_precondition()) r.flags = PreconditionFlags(m.precondition());
  }
  return r;
}

trace::Record TraceOf(const v1::DeleteRangeRequest& request,
                      const v1::DeleteRangeResponse& response, const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kDeleteRange, status);
  AddKey(&r, request.start());
  AddKey(&r, request.end());
  r.arg = request.limit();
  r.result = status.ok() ? response.deleted() : 0;
  return r;
}

trace::Record TraceOfScan(const v1::ScanRequest& request, uint64_t returned,
                          const grpc::Status& status) {
  trace::Record r = Base(trace::Op::kScan, status);
  AddKey(&r, request.start());
  AddKey(&r, request.end());
  r.arg = request.limit();
  r.result = returned;
  if (request.reverse()) r.flags = trace::record_flags::kReverse;
  return r;
}

std::optional<trace::Record> TraceOf(const v1::SubRequest& request, const v1::SubResult& result) {
  const grpc::Status status(static_cast<grpc::StatusCode>(result.status().code()), "");
  switch (request.call_case()) {
    case v1::SubRequest::kGet:
      return TraceOf(request.get(), result.get(), status);
    case v1::SubRequest::kBatchGet:
      return TraceOf(request.batch_get(), result.batch_get(), status);
    case v1::SubRequest::kPut:
      return TraceOf(request.put(), status);
    case v1::SubRequest::kDelete:
      return TraceOf(request.delete_(), status);
    case v1::SubRequest::kBatchInsert:
      return TraceOf(request.batch_insert(), status);
    case v1::SubRequest::kDeleteRange:
      return TraceOf(request.delete_range(), result.delete_range(), status);
    case v1::SubRequest::CALL_NOT_SET:
      break;
  }
  return std::nullopt;
}

}  // namespace grove::service
