#include "service/tls.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace grove::service {
namespace {

TEST(TlsTest, PlaintextWhenNoCertificate) {
  StatusOr<std::shared_ptr<grpc::ServerCredentials>> c = MakeServerCredentials({});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*c, nullptr);
}

TEST(TlsTest, UnreadableOrNonPemFilesNameTheField) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("junk.pem")) << "not a certificate";
  config::TlsConfig tls;
  tls.cert_file = dir.Sub("missing.pem");
  tls.key_file = dir.Sub("junk.pem");
  StatusOr<std::shared_ptr<grpc::ServerCredentials>> c = MakeServerCredentials(tls);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("tls.cert_file: cannot read"), std::string_view::npos);

  tls.cert_file = dir.Sub("junk.pem");
  c = MakeServerCredentials(tls);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find("tls.cert_file: '" + dir.Sub("junk.pem") + "' is not a PEM file"),
      std::string_view::npos)
      << c.status().message();
}

}  // namespace
}  // namespace grove::service
