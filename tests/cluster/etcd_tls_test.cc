// TLS to etcd, against a real etcd that serves only TLS and requires client certificates
// (--client-cert-auth): the etcd client refuses half-given settings and reaches etcd only with a
// certificate its CA signed; a groved node registers and serves through it; routing clients
// (etcd:// addresses) and grovectl's cluster commands reach it with their etcd TLS options.
// Certificates come from tests/service/gen_certs.sh (openssl), made for each test.

#include <gtest/gtest.h>

#include "grove/client/client.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/shard_map.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = dir_.Sub("certs");
    ASSERT_EQ(system(("mkdir -p " + certs_ + " && " GEN_CERTS_SCRIPT " " + certs_).c_str()), 0);
    etcd_ = EtcdProcess::Start(dir_.Sub(""), std::chrono::seconds(30),
                               EtcdTls{Pem("ca"), Pem("server"), Key("server")}, Client());
    ASSERT_NE(etcd_, nullptr);
  }

  std::string Pem(const std::string& name) const { return certs_ + "/" + name + ".pem"; }
  std::string Key(const std::string& name) const { return certs_ + "/" + name + ".key"; }
  EtcdTls Client() const { return {Pem("ca"), Pem("client"), Key("client")}; }

  // An etcd client with `tls` (empty: plaintext), calls timing out after a second.
  StatusOr<std::unique_ptr<cluster::EtcdClient>> Connect(const EtcdTls& tls) const {
    cluster::EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    o.ca_file = tls.ca_file;
    o.cert_file = tls.cert_file;
    o.key_file = tls.key_file;
    o.call_timeout_seconds = 1;
    return cluster::EtcdClient::Create(o);
  }

  static int Grovectl(const std::vector<std::string>& args, std::string* out) {
    return RunGrovectlInProcess(args, out);
  }

  std::vector<std::string> EtcdTlsFlags() const {
    return {"--etcd-ca", Pem("ca"), "--etcd-cert", Pem("client"), "--etcd-key", Key("client")};
  }

  TempDir dir_;
  std::string certs_;
  std::unique_ptr<EtcdProcess> etcd_;
};

TEST_F(EtcdTlsTest, OnlyACertificateSignedByTheCaReachesEtcd) {
  auto good = Connect(Client());
  ASSERT_OK(good.status());
  EXPECT_OK((*good)->Put("/t/k", "v"));

  auto plaintext = Connect({});
  ASSERT_OK(plaintext.status());
  EXPECT_EQ((*plaintext)->Get("/t/k").status().code(), StatusCode::kUnavailable);

  auto no_certificate = Connect({Pem("ca"), "", ""});
  ASSERT_OK(no_certificate.status());
  EXPECT_FALSE((*no_certificate)->Get("/t/k").ok());

  auto rogue = Connect({Pem("ca"), Pem("rogue-client"), Key("rogue-client")});
  ASSERT_OK(rogue.status());
  EXPECT_FALSE((*rogue)->Get("/t/k").ok());

  auto wrong_ca = Connect({Pem("other-ca"), Pem("client"), Key("client")});
  ASSERT_OK(wrong_ca.status());
  EXPECT_FALSE((*wrong_ca)->Get("/t/k").ok());

  // Half-given settings are refused before any call.
  EXPECT_EQ(Connect({"", Pem("client"), Key("client")}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Connect({Pem("ca"), Pem("client"), ""}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Connect({certs_ + "/missing.pem", "", ""}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EtcdTlsTest, NodesRoutingClientsAndGrovectlGoThroughTls) {
  std::string out;
  std::vector<std::string> init = {"cluster", "--etcd", etcd_->endpoint(), "--cluster", "tls"};
  for (const std::string& f : EtcdTlsFlags()) init.push_back(f);
  init.insert(init.end(), {"init", "--owner", "alpha"});
  ASSERT_EQ(Grovectl(init, &out), 0) << out;

  GrovedConfig c;
  c.data_dir = dir_.Sub("data-alpha");
  c.grpc_port = PickFreePort();
  c.metrics_port = PickFreePort();
  c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
           "\"]\n  name: tls\n  node_name: alpha\n  advertise_address: 127.0.0.1:" +
           std::to_string(c.grpc_port) + "\n  lease_ttl_seconds: 2\n  etcd_ca_file: " + Pem("ca") +
           "\n  etcd_cert_file: " + Pem("client") + "\n  etcd_key_file: " + Key("client") + "\n";
  auto alpha = GrovedProcess::Start(dir_.path(), c);
  ASSERT_NE(alpha, nullptr);

  // The routing client reaches etcd with its etcd TLS options, then the node in plaintext.
  client::ClientOptions co;
  co.address = "etcd://" + etcd_->endpoint() + "/tls";
  co.timeout = std::chrono::milliseconds(2000);
  co.etcd_ca_file = Pem("ca");
  co.etcd_cert_file = Pem("client");
  co.etcd_key_file = Key("client");
  std::unique_ptr<client::Client> routed;
  ASSERT_TRUE(client::Client::Create(co, &routed).ok());
  ASSERT_TRUE(routed->Put("k1", "v1").ok());
  std::string v;
  bool found = false;
  ASSERT_TRUE(routed->Get("k1", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "v1");

  // Without them it cannot read the map, and says so; nothing is written.
  client::ClientOptions plain = co;
  plain.etcd_ca_file = plain.etcd_cert_file = plain.etcd_key_file = "";
  plain.timeout = std::chrono::milliseconds(1000);
  std::unique_ptr<client::Client> unrouted;
  ASSERT_TRUE(client::Client::Create(plain, &unrouted).ok());
  grpc::Status s = unrouted->Put("k2", "v2");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  // A certificate without the CA is a bad option, named as such.
  plain.etcd_cert_file = Pem("client");
  plain.etcd_key_file = Key("client");
  s = client::Client::Create(plain, &unrouted);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("etcd TLS"), std::string::npos) << s.error_message();

  // grovectl: the same flags serve etcd:// addresses and the cluster commands.
  std::vector<std::string> get = {"--addr", co.address};
  for (const std::string& f : EtcdTlsFlags()) get.push_back(f);
  get.insert(get.end(), {"get", "k1"});
  ASSERT_EQ(Grovectl(get, &out), 0) << out;
  EXPECT_EQ(out, "v1\n");
  std::vector<std::string> status = {"cluster", "--etcd", etcd_->endpoint(), "--cluster", "tls"};
  for (const std::string& f : EtcdTlsFlags()) status.push_back(f);
  status.push_back("status");
  ASSERT_EQ(Grovectl(status, &out), 0) << out;
  EXPECT_NE(out.find("1 nodes, 1 up"), std::string::npos) << out;
  ASSERT_NE(Grovectl({"cluster", "--etcd", etcd_->endpoint(), "--cluster", "tls", "--timeout", "1",
                      "status"},
                     &out),
            0)
      << out;
}

}  // namespace
}  // namespace grove::testing
