// TLS, mutual TLS, bearer tokens and the loopback rule, against a real groved. Certificates are
// generated for each test by gen_certs.sh (openssl).

#include <fstream>

#include <gtest/gtest.h>

#include "grove/client/client.h"

#include "service/integration.h"
#include "service/token_store.h"

namespace grove::testing {
namespace {

constexpr const char* kReadToken = "read-token-0123456789abcdef";
constexpr const char* kWriteToken = "write-token-0123456789abcdef";

class GrovedSecurityTest : public GrovedTest {
 protected:
  void SetUp() override {
    certs_ = dir_.Sub("certs");
    ASSERT_EQ(system(("mkdir -p " + certs_ + " && " GEN_CERTS_SCRIPT " " + certs_).c_str()), 0);
  }

  std::string Cert(const std::string& name) { return certs_ + "/" + name; }

  // A client of the library, with retries off so that refusals surface at once.
  std::unique_ptr<client::Client> Connect(client::ClientOptions o) {
    o.address = groved_->address();
    o.max_attempts = 1;
    o.timeout = std::chrono::seconds(5);
    std::unique_ptr<client::Client> c;
    grpc::Status s = client::Client::Create(o, &c);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return c;
  }

  std::string certs_;
};

TEST_F(GrovedSecurityTest, BearerTokensWithRoles) {
  // One token in the clear, one as its digest: the file need not hold the secret.
  std::ofstream(dir_.Sub("tokens"))
      << "read " << kReadToken << "\nwrite sha256:" << service::Sha256Hex(kWriteToken) << "\n";
  StartGroved("auth:\n  tokens_file: " + dir_.Sub("tokens") + "\n");

  v1::PutRequest put;
  put.set_key("k");
  put.set_value("v");
  v1::PutResponse presp;
  grpc::Status s = kv_->Put(Ctx().get(), put, &presp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "missing 'authorization: Bearer <token>' metadata");
  s = kv_->Put(Ctx(std::chrono::seconds(10), "wrong-token-0123456789").get(), put, &presp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "unknown token");
  s = kv_->Put(Ctx(std::chrono::seconds(10), kReadToken).get(), put, &presp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "the token's role 'read' does not allow Put (needs 'write')");
  EXPECT_TRUE(kv_->Put(Ctx(std::chrono::seconds(10), kWriteToken).get(), put, &presp).ok());

  v1::GetRequest get;
  get.set_key("k");
  v1::GetResponse gresp;
  EXPECT_TRUE(kv_->Get(Ctx(std::chrono::seconds(10), kReadToken).get(), get, &gresp).ok());
  EXPECT_EQ(gresp.value(), "v");
  EXPECT_EQ(kv_->Get(Ctx().get(), get, &gresp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::StatsResponse stats;
  EXPECT_TRUE(kv_->Stats(Ctx(std::chrono::seconds(10), kReadToken).get(), {}, &stats).ok());

  // Probes need no token.
  grpc::health::v1::HealthCheckResponse h;
  EXPECT_TRUE(health_->Check(Ctx().get(), {}, &h).ok());

  // The client library sends its token with every call.
  client::ClientOptions o;
  o.token = kWriteToken;
  auto c = Connect(o);
  EXPECT_TRUE(c->Put("lib", "ok").ok());
  o.token = kReadToken;
  c = Connect(o);
  EXPECT_EQ(c->Delete("lib").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const std::string metrics = MetricsText();
  EXPECT_EQ(metrics.find(kReadToken), std::string::npos) << "no secret in metrics";
  EXPECT_NE(metrics.find("grpc_code=\"PermissionDenied\""), std::string::npos);
}

TEST_F(GrovedSecurityTest, Tls) {
  StartGroved("tls:\n  cert_file: " + Cert("server.pem") + "\n  key_file: " + Cert("server.key") +
              "\n");
  client::ClientOptions o;
  o.tls = true;
  o.ca_file = Cert("ca.pem");
  auto c = Connect(o);
  ASSERT_TRUE(c->Put("secure", "yes").ok());
  std::string v;
  bool found = false;
  ASSERT_TRUE(c->Get("secure", &v, &found).ok());
  EXPECT_EQ(v, "yes");

  // A plaintext client cannot talk to the TLS listener.
  EXPECT_EQ(Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  // Nor can a client that does not trust the server's CA.
  o.ca_file = Cert("other-ca.pem");
  EXPECT_EQ(Connect(o)->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  // The certificate names 127.0.0.1 and localhost, nothing else.
  o.ca_file = Cert("ca.pem");
  o.server_name = "grove.example";
  EXPECT_EQ(Connect(o)->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(groved_->Log().find("(TLS)"), std::string::npos);
}

TEST_F(GrovedSecurityTest, MutualTls) {
  StartGroved("tls:\n  cert_file: " + Cert("server.pem") + "\n  key_file: " + Cert("server.key") +
              "\n  client_ca_file: " + Cert("ca.pem") + "\n");
  client::ClientOptions o;
  o.tls = true;
  o.ca_file = Cert("ca.pem");
  EXPECT_EQ(Connect(o)->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE)
      << "no client certificate";
  o.cert_file = Cert("rogue-client.pem");
  o.key_file = Cert("rogue-client.key");
  EXPECT_EQ(Connect(o)->Put("k", "v").error_code(), grpc::StatusCode::UNAVAILABLE)
      << "a client certificate from another CA";
  o.cert_file = Cert("client.pem");
  o.key_file = Cert("client.key");
  EXPECT_TRUE(Connect(o)->Put("k", "v").ok());
  EXPECT_NE(groved_->Log().find("(mutual TLS)"), std::string::npos);
}

TEST_F(GrovedSecurityTest, TlsAndTokensTogether) {
  std::ofstream(dir_.Sub("tokens")) << "write " << kWriteToken << "\n";
  StartGroved("tls:\n  cert_file: " + Cert("server.pem") + "\n  key_file: " + Cert("server.key") +
              "\nauth:\n  tokens_file: " + dir_.Sub("tokens") + "\n");
  client::ClientOptions o;
  o.tls = true;
  o.ca_file = Cert("ca.pem");
  EXPECT_EQ(Connect(o)->Put("k", "v").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  o.token = kWriteToken;
  EXPECT_TRUE(Connect(o)->Put("k", "v").ok());
}

TEST(GrovedStartupTest, PlaintextOnANonLoopbackAddressIsRefused) {
  TempDir dir;
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.listen_host = "0.0.0.0";
  c.wait_ready = false;
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  EXPECT_EQ(groved->Wait(std::chrono::seconds(30)), 1);
  EXPECT_NE(groved->Log().find("server.listen: '0.0.0.0:"), std::string::npos) << groved->Log();
  EXPECT_NE(groved->Log().find("is not a loopback address and TLS is off"), std::string::npos);
}

TEST(GrovedStartupTest, BadTokensFileIsAStartupError) {
  TempDir dir;
  std::ofstream(dir.Sub("tokens")) << "superuser abcdefghijklmnopqrstuvwxyz\n";
  GrovedConfig c;
  c.data_dir = dir.Sub("data");
  c.yaml = "auth:\n  tokens_file: " + dir.Sub("tokens") + "\n";
  c.wait_ready = false;
  auto groved = GrovedProcess::Start(dir.path(), c);
  ASSERT_NE(groved, nullptr);
  EXPECT_EQ(groved->Wait(std::chrono::seconds(30)), 1);
  EXPECT_NE(groved->Log().find(":1: unknown role 'superuser' (allowed: read, write, admin)"),
            std::string::npos)
      << groved->Log();
}

}  // namespace
}  // namespace grove::testing
