#pragma once

// The fixture of the replicated-range tests: a real etcd, groved nodes with cluster.raft on
// loopback (500 ms election timeout), grovectl cluster in process, a routing client.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "grove/client/client.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/node_calls.h"
#include "service/integration.h"

namespace grove::testing {

inline constexpr char kCluster[] = "rep";

class ReplicatedClusterTest : public ::testing::Test {
 protected:
  using Clock = std::chrono::steady_clock;

  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
  }

  struct Node {
    std::string name;
    int grpc_port = 0, metrics_port = 0, raft_port = 0;
    std::unique_ptr<GrovedProcess> process;
  };

  void AddNode(const std::string& name) {
    Node n;
    n.name = name;
    n.grpc_port = PickFreePort();
    n.metrics_port = PickFreePort();
    n.raft_port = PickFreePort();
    nodes_[name] = std::move(n);
  }

  void StartNode(const std::string& name) {
    Node& n = nodes_[name];
    GrovedConfig c;
    c.data_dir = dir_.Sub("data-" + name);
    c.grpc_port = n.grpc_port;
    c.metrics_port = n.metrics_port;
    c.yaml =
        "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() + "\"]\n  name: " + kCluster +
        "\n  node_name: " + name +
        "\n  advertise_address: 127.0.0.1:" + std::to_string(n.grpc_port) +
        "\n  lease_ttl_seconds: 2\n  raft:\n    listen: 127.0.0.1:" + std::to_string(n.raft_port) +
        "\n    election_timeout_ms: 500\n    heartbeat_ms: 50\n" + raft_extra_;
    n.process = GrovedProcess::Start(dir_.path(), c);
    ASSERT_NE(n.process, nullptr);
  }

  int Grovectl(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {"cluster", "--etcd", etcd_->endpoint(), "--cluster", kCluster});
    return RunGrovectlInProcess(args, out);
  }

  std::unique_ptr<client::Client> Router() {
    client::ClientOptions o;
    o.address = "etcd://" + etcd_->endpoint() + "/" + kCluster;
    o.timeout = std::chrono::seconds(3);
    std::unique_ptr<client::Client> c;
    EXPECT_TRUE(client::Client::Create(o, &c).ok());
    return c;
  }

  // A Get of `key` straight at node `name`, with the refusal's leader (if any).
  grpc::Status DirectGet(const std::string& name, const std::string& key, std::string* value,
                         std::string* leader) {
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    grpc::Status s = Get(name, key, &ctx, &resp);
    *value = resp.value();
    *leader = Trailer(ctx, v1::kLeaderMetadata);
    if (!s.ok()) {
      EXPECT_EQ(Trailer(ctx, v1::kNotAppliedMetadata), "1") << s.error_message();
    }
    return s;
  }

  grpc::Status Get(const std::string& name, const std::string& key, grpc::ClientContext* ctx,
                   v1::GetResponse* resp) {
    return GetAt(nodes_[name].process->address(), key, ctx, resp);
  }

  // The node whose direct Get succeeds, once the others name it as the leader; "" when none
  // settles by the deadline.
  std::string FindLeader(const std::vector<std::string>& up, std::chrono::seconds within) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      std::string leader;
      int refusals_naming_it = 0;
      for (const std::string& name : up) {
        std::string value, named;
        grpc::Status s = DirectGet(name, "probe", &value, &named);
        if (s.ok()) {
          leader = name;
        } else if (s.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
          EXPECT_NE(s.error_message().find("not leader"), std::string::npos) << s.error_message();
          refusals_naming_it += named.empty() ? 0 : 1;
        }
      }
      if (!leader.empty() && refusals_naming_it == static_cast<int>(up.size()) - 1) return leader;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }

  // Puts through the router until one is acknowledged (an election may be under way).
  grpc::Status PutEventually(client::Client* c, const std::string& key, const std::string& value,
                             std::chrono::seconds within) {
    const auto deadline = Clock::now() + within;
    grpc::Status s;
    while (Clock::now() < deadline) {
      s = c->Put(key, value);
      if (s.ok()) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return s;
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::map<std::string, Node> nodes_;
  // More cluster.raft settings, each line "    key: value\n".
  std::string raft_extra_;
};

}  // namespace grove::testing
