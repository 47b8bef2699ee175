#include "config/address.h"

#include <gtest/gtest.h>

namespace grove::config {
namespace {

TEST(AddressTest, ParsesHostAndPort) {
  StatusOr<HostPort> hp = ParseHostPort("127.0.0.1:7400", "server.listen");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 7400);
  EXPECT_EQ(hp->ToString(), "127.0.0.1:7400");
}

TEST(AddressTest, ParsesBracketedIpv6) {
  StatusOr<HostPort> hp = ParseHostPort("[::1]:0", "server.listen");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "::1");
  EXPECT_TRUE(hp->ipv6);
  EXPECT_EQ(hp->port, 0);
  EXPECT_EQ(hp->ToString(), "[::1]:0");
}

TEST(AddressTest, RejectsMalformedAddressesNamingTheField) {
  for (const char* bad :
       {"7400", "localhost:", ":7400", "host:70000", "host:12x", "::1:7400", "[::1]7400", "[::1"}) {
    StatusOr<HostPort> hp = ParseHostPort(bad, "server.metrics_listen");
    ASSERT_FALSE(hp.ok()) << bad;
    EXPECT_EQ(hp.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(hp.status().message().find("server.metrics_listen"), std::string_view::npos);
  }
}

TEST(AddressTest, RecognisesLoopback) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("example.com"));
}

}  // namespace
}  // namespace grove::config
