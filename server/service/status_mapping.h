#pragma once

// grove::Status -> grpc::Status. The engine's codes mirror gRPC's numbering, but three of them
// describe the server's own files rather than the request, and are reported as INTERNAL so that a
// client never mistakes them for its own fault: kPermissionDenied (the filesystem refused access;
// PERMISSION_DENIED is reserved for auth), kNotFound (a missing engine file; a missing key is
// found=false, never NOT_FOUND) and kAlreadyExists.

#include <string_view>

#include <grpcpp/support/status.h>

#include "grove/status.h"

namespace grove::service {

// `what` prefixes the message ("get: ..."); empty for none. OK maps to OK.
grpc::Status ToGrpcStatus(const Status& status, std::string_view what = "");

}  // namespace grove::service
