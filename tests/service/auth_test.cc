#include "service/auth.h"

#include <gtest/gtest.h>

namespace grove::service {
namespace {

constexpr const char* kReader = "reader-token-0123456789";
constexpr const char* kWriter = "writer-token-0123456789";

TokenStore Tokens() {
  StatusOr<TokenStore> s =
      TokenStore::Parse(std::string("read ") + kReader + "\nwrite " + kWriter + "\n", "t");
  EXPECT_TRUE(s.ok());
  return *std::move(s);
}

std::string Bearer(const char* token) { return std::string("Bearer ") + token; }

TEST(AuthTest, DisabledLetsEverythingThrough) {
  Authorizer auth(nullptr);
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Check(std::nullopt, Role::kWrite, "Put").ok());
}

TEST(AuthTest, MissingOrMalformedIsUnauthenticated) {
  TokenStore tokens = Tokens();
  Authorizer auth(&tokens);
  grpc::Status s = auth.Check(std::nullopt, Role::kRead, "Get");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "missing 'authorization: Bearer <token>' metadata");
  for (const char* bad : {"", "Bearer ", "Basic abc", "bearer reader-token-0123456789", kReader}) {
    s = auth.Check(std::string_view(bad), Role::kRead, "Get");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << bad;
  }
  s = auth.Check(std::string_view("Bearer not-a-known-token-at-all"), Role::kRead, "Get");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "unknown token");
}

TEST(AuthTest, RolesAreEnforced) {
  TokenStore tokens = Tokens();
  Authorizer auth(&tokens);
  const std::string reader = Bearer(kReader);
  const std::string writer = Bearer(kWriter);
  EXPECT_TRUE(auth.Check(std::string_view(reader), Role::kRead, "Get").ok());
  EXPECT_TRUE(auth.Check(std::string_view(writer), Role::kRead, "Scan").ok());
  EXPECT_TRUE(auth.Check(std::string_view(writer), Role::kWrite, "Put").ok());
  grpc::Status s = auth.Check(std::string_view(reader), Role::kWrite, "BatchInsert");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "the token's role 'read' does not allow BatchInsert (needs 'write')");
}

}  // namespace
}  // namespace grove::service
