#include "grove/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace grove {
namespace {

TEST(StatusTest, OkIsDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::DataLoss("page 7: checksum mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsDataLoss());
  EXPECT_EQ(s.ToString(), "DATA_LOSS: page 7: checksum mismatch");
  Status copy = s;
  EXPECT_EQ(copy.ToString(), s.ToString());
  EXPECT_EQ(s.WithContext("get").message(), "get: page 7: checksum mismatch");
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(Status::FromErrno(ENOSPC, "write").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Status::FromErrno(EIO, "read").code(), StatusCode::kInternal);
  EXPECT_EQ(Status::FromErrno(ENOENT, "open").code(), StatusCode::kNotFound);
}

StatusOr<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  GROVE_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, StatusOrAndMacros) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseHalf(3, &out).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace grove
