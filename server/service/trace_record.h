#pragma once

// What a served call becomes in a trace (docs/formats/trace.md, "Operations"): the keys, the value
// sizes, the limit and what came back, never a value itself. The same builders serve unary calls
// and the sub-requests of a Batch stream.

#include <cstdint>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "grove/v1/kv.pb.h"

#include "trace/trace_file.h"

namespace grove::service {

trace::Record TraceOf(const v1::GetRequest& request, const v1::GetResponse& response,
                      const grpc::Status& status);
trace::Record TraceOf(const v1::BatchGetRequest& request, const v1::BatchGetResponse& response,
                      const grpc::Status& status);
trace::Record TraceOf(const v1::PutRequest& request, const grpc::Status& status);
trace::Record TraceOf(const v1::DeleteRequest& request, const grpc::Status& status);
// A batch keeps each mutation; the precondition flag says some mutation carried one (its kind is
// the first such mutation's).
trace::Record TraceOf(const v1::BatchInsertRequest& request, const grpc::Status& status);
trace::Record TraceOf(const v1::DeleteRangeRequest& request,
                      const v1::DeleteRangeResponse& response, const grpc::Status& status);
trace::Record TraceOfScan(const v1::ScanRequest& request, uint64_t returned,
                          const grpc::Status& status);
// A Batch sub-request with its result; nullopt for one with no call set.
std::optional<trace::Record> TraceOf(const v1::SubRequest& request, const v1::SubResult& result);

}  // namespace grove::service
