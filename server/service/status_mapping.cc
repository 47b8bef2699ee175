#include "service/status_mapping.h"

#include <string>

namespace grove::service {

grpc::Status ToGrpcStatus(const Status& status, std::string_view what) {
  if (status.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    case StatusCode::kUnimplemented:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kDataLoss:
      code = grpc::StatusCode::DATA_LOSS;
      break;
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kPermissionDenied:
    case StatusCode::kInternal:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  std::string message;
  if (!what.empty()) {
    message.append(what);
    message += ": ";
  }
  message.append(status.message());
  return grpc::Status(code, message);
}

}  // namespace grove::service
