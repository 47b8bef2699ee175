// groved in cluster mode against a real etcd: it registers as it starts, is shown down at once
// after SIGTERM and a lease's life after kill -9, serves as before, and a bad cluster: section
// is refused naming the field.

#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/membership.h"
#include "config/config_loader.h"
#include "config/validate.h"
#include "service/groved_process.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

class GrovedClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
  }

  // groved as node `name` of cluster "itest", with a lease of `ttl` seconds.
  std::unique_ptr<GrovedProcess> StartNode(const std::string& name, int ttl = 2) {
    GrovedConfig c;
    c.data_dir = dir_.Sub("data-" + name);
    c.grpc_port = PickFreePort();
    c.metrics_port = PickFreePort();
    c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
             "\"]\n  name: itest\n  node_name: " + name +
             "\n  advertise_address: 127.0.0.1:" + std::to_string(c.grpc_port) +
             "\n  lease_ttl_seconds: " + std::to_string(ttl) + "\n";
    return GrovedProcess::Start(dir_.path(), c);
  }

  // grovectl cluster status; returns its exit code, output in *out.
  int Status(std::string* out, const std::string& output = "text") {
    return RunGrovectlInProcess(
        {"cluster", "--etcd", etcd_->endpoint(), "--cluster", "itest", "-o", output, "status"},
        out);
  }

  bool WaitFor(const std::string& needle, std::chrono::seconds timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    std::string out;
    while (std::chrono::steady_clock::now() < give_up) {
      Status(&out);
      if (out.find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "never saw '" << needle << "'; last status:\n" << out;
    return false;
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
};

TEST_F(GrovedClusterTest, RegistersAtStartAndIsDownAtOnceAfterSigterm) {
  auto a = StartNode("alpha");
  ASSERT_NE(a, nullptr);
  auto b = StartNode("beta");
  ASSERT_NE(b, nullptr);
  std::string out;
  ASSERT_EQ(Status(&out), 0) << out;
  EXPECT_NE(out.find("cluster itest: 2 nodes, 2 up"), std::string::npos) << out;
  EXPECT_NE(out.find(a->address()), std::string::npos) << out;
  EXPECT_NE(a->Log().find("registered in cluster 'itest'"), std::string::npos) << a->Log();

  ASSERT_EQ(Status(&out, "json"), 0);
  EXPECT_NE(out.find("\"node\":\"alpha\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"state\":\"up\""), std::string::npos) << out;

  a->Signal(SIGTERM);
  std::optional<int> exit = a->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(*exit, 0) << a->Log();
  ASSERT_EQ(Status(&out), 0);
  EXPECT_NE(out.find("cluster itest: 2 nodes, 1 up"), std::string::npos)
      << "a stopped node revokes its lease:\n"
      << out;
}

TEST_F(GrovedClusterTest, KillNineIsDownAfterTheLeaseAndTheNodeComesBack) {
  auto a = StartNode("alpha");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor("1 up", std::chrono::seconds(5)));
  a->Signal(SIGKILL);
  a->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(WaitFor("1 nodes, 0 up", std::chrono::seconds(10)));
  // Restarted under the same name, it registers again.
  a = StartNode("alpha");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WaitFor("1 nodes, 1 up", std::chrono::seconds(10)));
}

TEST_F(GrovedClusterTest, ANameInUseIsRefusedAtStart) {
  auto a = StartNode("alpha", 2);
  ASSERT_NE(a, nullptr);
  GrovedConfig c;
  c.data_dir = dir_.Sub("data-dup");
  c.wait_ready = false;
  c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
           "\"]\n  name: itest\n  node_name: alpha\n  advertise_address: 127.0.0.1:1\n"
           "  lease_ttl_seconds: 2\n";
  auto dup = GrovedProcess::Start(dir_.path(), c);
  ASSERT_NE(dup, nullptr);
  std::optional<int> exit = dup->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(exit.has_value()) << "a second 'alpha' must not start";
  EXPECT_NE(*exit, 0);
  EXPECT_NE(dup->Log().find("cluster.node_name"), std::string::npos) << dup->Log();
}

TEST(ClusterConfigTest, EveryProblemNamesItsField) {
  auto check = [](const std::string& yaml) {
    auto c = config::ParseConfig(yaml, "test");
    if (!c.ok()) return c.status().ToString();
    return config::ValidateConfig(*c).ToString();
  };
  EXPECT_NE(check("cluster:\n  node_name: a\n").find("cluster.etcd_endpoints"), std::string::npos);
  const std::string base = "cluster:\n  etcd_endpoints: [\"127.0.0.1:2379\"]\n";
  EXPECT_NE(check(base).find("cluster.node_name"), std::string::npos);
  EXPECT_NE(check(base).find("cluster.advertise_address"), std::string::npos);
  EXPECT_NE(check(base + "  node_name: A/B\n").find("cluster.node_name"), std::string::npos);
  EXPECT_NE(check(base + "  lease_ttl_seconds: 1\n").find("cluster.lease_ttl_seconds"),
            std::string::npos);
  EXPECT_NE(check("cluster:\n  etcd_endpoints: [\"nohost\"]\n").find("cluster.etcd_endpoints[0]"),
            std::string::npos);
  EXPECT_NE(check(base + "  etcd_cert_file: /x\n").find("cluster.etcd_key_file"),
            std::string::npos);
  EXPECT_NE(check("cluster:\n  etcd_endpoints: \"127.0.0.1:2379\"\n").find("expected a list"),
            std::string::npos);
  EXPECT_EQ(check(base + "  node_name: n1\n  advertise_address: 127.0.0.1:7400\n"), "OK");
}

TEST(ClusterConfigTest, EveryRaftProblemNamesItsField) {
  auto check = [](const std::string& yaml) {
    auto c = config::ParseConfig(yaml, "test");
    if (!c.ok()) return c.status().ToString();
    return config::ValidateConfig(*c).ToString();
  };
  const std::string base =
      "cluster:\n  etcd_endpoints: [\"127.0.0.1:2379\"]\n  node_name: n1\n"
      "  advertise_address: 127.0.0.1:7400\n  raft:\n";
  EXPECT_EQ(check(base + "    listen: 127.0.0.1:7402\n"), "OK");
  EXPECT_NE(check(base + "    listen: nohost\n").find("cluster.raft.listen"), std::string::npos);
  EXPECT_NE(check(base + "    listen: 0.0.0.0:7402\n").find("cluster.raft.advertise_address"),
            std::string::npos);
  EXPECT_EQ(check(base + "    listen: 0.0.0.0:7402\n    advertise_address: node-1:7402\n"), "OK");
  EXPECT_NE(check(base + "    listen: 127.0.0.1:0\n").find("cluster.raft.listen"),
            std::string::npos);
  EXPECT_NE(check(base + "    advertise_address: node-1:7402\n").find("cluster.raft.listen"),
            std::string::npos);
  EXPECT_NE(check(base + "    listen: 127.0.0.1:7402\n    heartbeat_ms: 600\n")
                .find("cluster.raft.heartbeat_ms"),
            std::string::npos);
  EXPECT_NE(check(base + "    listen: 127.0.0.1:7402\n    election_timeout_ms: 10\n")
                .find("cluster.raft.election_timeout_ms"),
            std::string::npos);
  EXPECT_NE(check(base + "    listen: 127.0.0.1:7402\n    snapshot_threshold: 1\n")
                .find("cluster.raft.snapshot_threshold"),
            std::string::npos);
  EXPECT_NE(check(base + "    listen: 127.0.0.1:7402\n    bogus: 1\n").find("bogus"),
            std::string::npos);
  // Replicas copy ranges from each other without credentials: not beside token auth.
  EXPECT_NE(check(base + "    listen: 127.0.0.1:7402\nauth:\n  tokens_file: /dev/null\n")
                .find("server.auth"),
            std::string::npos);
}

}  // namespace
}  // namespace grove::testing
