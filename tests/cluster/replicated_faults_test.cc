// Replicated ranges under faults (docs/reliability.md, "Replicated ranges under faults"): three
// groved nodes replicate two ranges by Raft while four routing clients read, write and
// compare-and-set a few hot keys; meanwhile, in turn,
//
//   1. a range's leader is killed with kill -9, and restarted a moment later;
//   2. a leader is paused (SIGSTOP) past the election timeout, then resumed: it must not serve
//      as leader once deposed;
//   3. a follower is killed, its data directory deleted, and it rejoins by snapshot;
//   4. etcd is killed, a leader killed and restarted while etcd stays down, then etcd returns.
//
// The run is cut into epochs, one per fault: the clients stop, every node is back and names the
// same leader, and a read of each key at the leader ends the epoch (its barrier commits whatever
// the old leaders left in flight). Each key's history in each epoch must be linearizable as a
// register starting from the value the previous epoch ended with: no acknowledged write is lost,
// no read is stale, no compare-and-set applies on a value the key no longer held.
//
// GROVE_REPLICATED_FAULTS sets the number of faults (default 4, one of each; `make
// test-replicated-faults` runs 100).

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "grove/client/client.h"
#include "grove/v1/kv.grpc.pb.h"
#include "grove/v1/metadata.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/node_calls.h"
#include "reliability/linearizability.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = RegisterOp::Kind;

constexpr char kCluster[] = "faults";
constexpr int kClients = 4;
constexpr int kElectionMs = 500;
const std::vector<std::string> kNodes = {"a", "b", "c"};
// Two ranges, split at "m": two hot keys in each.
const std::vector<std::string> kKeys = {"hot-a", "hot-b", "x-hot-c", "x-hot-d"};
const std::vector<std::string> kRangeProbes = {"hot-a", "x-hot-c"};

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

int FaultCount() {
  const char* env = std::getenv("GROVE_REPLICATED_FAULTS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 4;
}

class ReplicatedFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub("etcd"));
    ASSERT_NE(etcd_, nullptr);
    for (const std::string& name : kNodes) {
      Node& n = nodes_[name];
      n.grpc_port = PickFreePort();
      n.metrics_port = PickFreePort();
      n.raft_port = PickFreePort();
    }
  }

  struct Node {
    int grpc_port = 0, metrics_port = 0, raft_port = 0;
    std::unique_ptr<GrovedProcess> process;
    bool up = false;
  };

  std::string DataDir(const std::string& name) { return dir_.path() + "/data-" + name; }

  void StartNode(const std::string& name, bool wait_ready = true) {
    Node& n = nodes_[name];
    GrovedConfig c;
    c.data_dir = DataDir(name);
    c.grpc_port = n.grpc_port;
    c.metrics_port = n.metrics_port;
    c.wait_ready = wait_ready;
    // Small snapshots, so that a node whose data was deleted installs one.
    c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() + "\"]\n  name: " + kCluster +
             "\n  node_name: " + name +
             "\n  advertise_address: 127.0.0.1:" + std::to_string(n.grpc_port) +
             "\n  lease_ttl_seconds: 2\n  etcd_timeout_seconds: 1\n  raft:\n    listen: "
             "127.0.0.1:" +
             std::to_string(n.raft_port) +
             "\n    election_timeout_ms: " + std::to_string(kElectionMs) +
             "\n    heartbeat_ms: 50\n    snapshot_threshold: 64\n    snapshot_trailing: 16\n";
    n.process = GrovedProcess::Start(dir_.path(), c);
    ASSERT_NE(n.process, nullptr);
    n.up = true;
  }

  void Kill(const std::string& name) {
    Node& n = nodes_[name];
    n.process->Signal(SIGKILL);
    ASSERT_TRUE(n.process->Wait(std::chrono::seconds(10)).has_value());
    n.up = false;
  }

  // Straight at one node: OK at the leader; else the leader it names ("" when none).
  grpc::Status DirectGet(const std::string& name, const std::string& key, std::string* leader) {
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    grpc::Status s =
        GetAt(nodes_[name].process->address(), key, &ctx, &resp, std::chrono::seconds(2));
    *leader = Trailer(ctx, v1::kLeaderMetadata);
    return s;
  }

  grpc::Status DirectGetValue(const std::string& name, const std::string& key, std::string* value,
                              bool* found) {
    grpc::ClientContext ctx;
    v1::GetResponse resp;
    grpc::Status s = GetAt(nodes_[name].process->address(), key, &ctx, &resp);
    *value = resp.value();
    *found = resp.found();
    return s;
  }

  // The leader of the range holding `probe` once every node that is up agrees on it.
  std::string Leader(const std::string& probe, std::chrono::seconds within) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      std::string leader;
      int up = 0, naming = 0;
      for (const std::string& name : kNodes) {
        if (!nodes_[name].up) continue;
        ++up;
        std::string named;
        grpc::Status s = DirectGet(name, probe, &named);
        if (s.ok()) {
          leader = name;
        } else if (!named.empty()) {
          ++naming;
        }
      }
      if (!leader.empty() && naming == up - 1) return leader;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }

  std::string FollowerOf(const std::string& leader) {
    for (const std::string& name : kNodes) {
      if (name != leader && nodes_[name].up) return name;
    }
    return "";
  }

  std::unique_ptr<client::Client> Router() {
    client::ClientOptions o;
    o.address = "etcd://" + etcd_->endpoint() + "/" + kCluster;
    o.timeout = std::chrono::seconds(2);
    std::unique_ptr<client::Client> c;
    EXPECT_TRUE(client::Client::Create(o, &c).ok());
    return c;
  }

  // One client's loop until `stop`: reads, unique writes and compare-and-sets on the hot keys.
  void RunClient(client::Client* router, int id, uint64_t seed, const std::atomic<bool>& stop,
                 std::map<std::string, std::vector<RegisterOp>>* history) {
    std::mt19937_64 rng(seed);
    std::map<std::string, std::optional<std::string>> last_read;
    uint64_t n = 0;
    while (!stop.load()) {
      const std::string& key = kKeys[rng() % kKeys.size()];
      const int what = static_cast<int>(rng() % 10);
      RegisterOp op;
      op.client = id;
      op.invoke = Now();
      if (what < 4) {
        std::string value;
        bool found = false;
        grpc::Status s = router->Get(key, &value, &found);
        op.complete = Now();
        if (!s.ok()) continue;  // a failed read tells nothing
        op.kind = Kind::kRead;
        if (found) op.value = value;
        last_read[key] = op.value;
      } else {
        const std::string value = "c" + std::to_string(id) + "-" + std::to_string(n++);
        client::WriteOptions wo;
        const bool cas = what >= 7;
        if (cas) {
          op.expected = last_read[key];
          wo.precondition = op.expected ? client::Precondition::ValueEquals(*op.expected)
                                        : client::Precondition::Absent();
          wo.return_current = true;
        }
        client::WriteOutcome outcome;
        grpc::Status s = router->Put(key, value, wo, &outcome);
        op.complete = Now();
        if (cas && s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
          op.kind = Kind::kRead;  // refused: what the key held then
          if (outcome.failure.found) op.value = outcome.failure.value;
          op.expected.reset();
          last_read[key] = op.value;
        } else {
          if (client::NotApplied(s)) continue;  // refused before anything was applied
          op.kind = cas ? Kind::kCas : Kind::kWrite;
          op.value = value;
          op.known = s.ok();
          if (s.ok()) last_read[key] = value;
        }
      }
      (*history)[key].push_back(std::move(op));
    }
  }

  // One fault of kind `kind` on the range holding `probe`.
  void Inject(int kind, const std::string& probe) {
    const std::string leader = Leader(probe, std::chrono::seconds(30));
    ASSERT_FALSE(leader.empty()) << "no leader before fault " << kind;
    switch (kind) {
      case 0:
        ASSERT_NO_FATAL_FAILURE(Kill(leader));
        std::this_thread::sleep_for(std::chrono::seconds(1));
        ASSERT_NO_FATAL_FAILURE(StartNode(leader));
        break;
      case 1: {
        // Paused past the election timeout. Once the others have a new leader and it has
        // acknowledged a write, a read and a write are sent to the paused one; they wait in its
        // socket, and run when it resumes: deposed, it must neither serve the old value nor
        // acknowledge the write.
        nodes_[leader].process->Signal(SIGSTOP);
        nodes_[leader].up = false;
        const std::string next = Leader(probe, std::chrono::seconds(20));
        ASSERT_FALSE(next.empty()) << "no new leader while '" << leader << "' is paused";
        for (const auto until = Clock::now() + std::chrono::seconds(10); Clock::now() < until;) {
          RegisterOp write;
          write.kind = Kind::kWrite;
          write.client = 100;
          write.value = "probe-" + std::to_string(++probes_);
          write.invoke = Now();
          grpc::Status s = PutAt(nodes_[next].process->address(), probe, *write.value);
          write.complete = Now();
          write.known = s.ok();
          if (!client::NotApplied(s)) probe_history_[probe].push_back(write);
          if (s.ok()) break;
        }
        std::thread stale_read([&] {
          RegisterOp read;
          read.kind = Kind::kRead;
          read.client = 101;
          read.invoke = Now();
          std::string value;
          bool found = false;
          grpc::Status r = DirectGetValue(leader, probe, &value, &found);
          read.complete = Now();
          if (found) read.value = value;
          if (r.ok()) probe_history_[probe].push_back(read);
        });
        std::thread stale_write([&] {
          RegisterOp w;
          w.kind = Kind::kWrite;
          w.client = 102;
          w.value = "stale-" + std::to_string(probes_);
          w.invoke = Now();
          grpc::Status r = PutAt(nodes_[leader].process->address(), probe, *w.value);
          w.complete = Now();
          w.known = r.ok();
          std::lock_guard<std::mutex> lock(probe_mu_);
          if (!client::NotApplied(r)) stale_writes_.push_back({probe, w});
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        nodes_[leader].process->Signal(SIGCONT);
        nodes_[leader].up = true;
        stale_read.join();
        stale_write.join();
        break;
      }
      case 2: {
        const std::string follower = FollowerOf(leader);
        ASSERT_NO_FATAL_FAILURE(Kill(follower));
        std::filesystem::remove_all(DataDir(follower));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        ASSERT_NO_FATAL_FAILURE(StartNode(follower));
        wiped_.push_back(follower);
        break;
      }
      default:
        etcd_->Kill();
        ASSERT_NO_FATAL_FAILURE(Kill(leader));
        std::this_thread::sleep_for(std::chrono::seconds(2));
        // Back while etcd is still down: it knows no map, so it serves nothing yet.
        ASSERT_NO_FATAL_FAILURE(StartNode(leader, /*wait_ready=*/false));
        std::this_thread::sleep_for(std::chrono::seconds(1));
        ASSERT_TRUE(etcd_->Restart());
        ASSERT_TRUE(nodes_[leader].process->WaitReadyz(200, std::chrono::seconds(30)));
        break;
    }
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::map<std::string, Node> nodes_;
  std::vector<std::string> wiped_;  // followers whose data was deleted, this epoch
  // The pause fault's probes of the deposed leader, added to the epoch's history.
  int probes_ = 0;
  std::map<std::string, std::vector<RegisterOp>> probe_history_;
  std::mutex probe_mu_;
  std::vector<std::pair<std::string, RegisterOp>> stale_writes_;
  int stale_acknowledged_ = 0;
};

TEST_F(ReplicatedFaultsTest, HotKeysStayLinearizableAcrossLeaderKillsPausesWipesAndEtcdLoss) {
  std::string out;
  ASSERT_EQ(RunGrovectlInProcess({"cluster", "--etcd", etcd_->endpoint(), "--cluster", kCluster,
                                  "init", "--owner", "a", "--split", "m=b", "--replicas", "a,b,c"},
                                 &out),
            0)
      << out;
  for (const std::string& name : kNodes) ASSERT_NO_FATAL_FAILURE(StartNode(name));
  std::vector<std::unique_ptr<client::Client>> routers;
  for (int i = 0; i < kClients; ++i) routers.push_back(Router());

  const int faults = FaultCount();
  const uint64_t seed = std::random_device{}();
  std::map<std::string, std::optional<std::string>> initial;  // every key starts absent
  uint64_t ops = 0, unknown = 0, acknowledged_writes = 0, states = 0, installs = 0;
  int violations = 0;
  const auto started = Clock::now();
  for (int fault = 0; fault < faults; ++fault) {
    std::atomic<bool> stop{false};
    std::vector<std::map<std::string, std::vector<RegisterOp>>> histories(kClients);
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back([&, i] {
        RunClient(routers[i].get(), i, seed + fault * kClients + i, stop, &histories[i]);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Inject(fault % 4, kRangeProbes[(fault / 4) % kRangeProbes.size()]);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    for (std::thread& t : clients) t.join();
    ASSERT_FALSE(HasFatalFailure()) << "fault " << fault << " (seed " << seed << ")";

    // Every node back and agreeing on each range's leader; then each key read there ends the
    // epoch.
    for (const std::string& probe : kRangeProbes) {
      ASSERT_FALSE(Leader(probe, std::chrono::seconds(60)).empty())
          << "no leader after fault " << fault;
    }
    // A follower whose data was deleted came back by installing its ranges from a replica.
    for (const std::string& name : wiped_) {
      const std::string log = nodes_[name].process->Log();
      EXPECT_NE(log.find("is behind a snapshot: installing"), std::string::npos) << log;
      ++installs;
    }
    wiped_.clear();
    std::map<std::string, std::vector<RegisterOp>> by_key = std::move(probe_history_);
    probe_history_.clear();
    for (auto& [key, op] : stale_writes_) {
      stale_acknowledged_ += op.known;
      by_key[key].push_back(op);
    }
    stale_writes_.clear();
    for (auto& h : histories) {
      for (auto& [key, list] : h) {
        for (RegisterOp& op : list) {
          ++ops;
          unknown += !op.known;
          acknowledged_writes += op.known && op.kind != Kind::kRead;
          by_key[key].push_back(std::move(op));
        }
      }
    }
    for (const std::string& key : kKeys) {
      RegisterOp last;
      last.kind = Kind::kRead;
      last.client = -1;
      last.invoke = Now();
      std::string value;
      bool found = false;
      grpc::Status s = routers[0]->Get(key, &value, &found);
      ASSERT_TRUE(s.ok()) << key << ": " << s.error_message();
      last.complete = Now();
      if (found) last.value = value;
      by_key[key].push_back(last);
      const LinearizabilityResult r = CheckRegisterHistory(by_key[key], initial[key]);
      states += r.states_explored;
      if (!r.ok) {
        ++violations;
        ADD_FAILURE() << "fault " << fault << " (kind " << fault % 4 << ", seed " << seed
                      << "): the history of " << key << " is not linearizable: " << r.explanation;
      }
      initial[key] = last.value;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cout << "replicated faults: " << faults << " faults, " << ops << " operations ("
            << acknowledged_writes << " acknowledged writes, " << unknown
            << " of unknown outcome), " << installs << " wiped followers reinstalled, " << states
            << " states checked, " << violations << " violations, " << seconds << " s\n";
  EXPECT_EQ(violations, 0);
  // A deposed leader never acknowledges a write sent to it while it was paused.
  EXPECT_EQ(stale_acknowledged_, 0);
}

}  // namespace
}  // namespace grove::testing
