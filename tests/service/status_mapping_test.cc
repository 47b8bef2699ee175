#include "service/status_mapping.h"

#include <gtest/gtest.h>

namespace grove::service {
namespace {

TEST(StatusMappingTest, OkStaysOk) { EXPECT_TRUE(ToGrpcStatus(Status::Ok(), "get").ok()); }

TEST(StatusMappingTest, RequestAndServerCodesPassThrough) {
  struct Case {
    Status in;
    grpc::StatusCode out;
  };
  const Case cases[] = {
      {Status::InvalidArgument("x"), grpc::StatusCode::INVALID_ARGUMENT},
      {Status::DeadlineExceeded("x"), grpc::StatusCode::DEADLINE_EXCEEDED},
      {Status::ResourceExhausted("disk full"), grpc::StatusCode::RESOURCE_EXHAUSTED},
      {Status::FailedPrecondition("x"), grpc::StatusCode::FAILED_PRECONDITION},
      {Status::Aborted("x"), grpc::StatusCode::ABORTED},
      {Status::Unimplemented("x"), grpc::StatusCode::UNIMPLEMENTED},
      {Status::Unavailable("closed"), grpc::StatusCode::UNAVAILABLE},
      {Status::DataLoss("page 7: checksum"), grpc::StatusCode::DATA_LOSS},
      {Status::Internal("fsync failed"), grpc::StatusCode::INTERNAL},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToGrpcStatus(c.in).error_code(), c.out) << c.in.ToString();
  }
}

TEST(StatusMappingTest, ServerFileProblemsAreInternal) {
  // Never let a filesystem EACCES look like an auth failure, or a missing file like a missing key.
  EXPECT_EQ(ToGrpcStatus(Status::PermissionDenied("open data")).error_code(),
            grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ToGrpcStatus(Status::NotFound("wal segment")).error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ToGrpcStatus(Status::AlreadyExists("x")).error_code(), grpc::StatusCode::INTERNAL);
}

TEST(StatusMappingTest, MessageIsPrefixed) {
  grpc::Status s = ToGrpcStatus(Status::DataLoss("page 7: checksum mismatch"), "get");
  EXPECT_EQ(s.error_message(), "get: page 7: checksum mismatch");
  EXPECT_EQ(ToGrpcStatus(Status::DataLoss("m")).error_message(), "m");
}

}  // namespace
}  // namespace grove::service
