// grovectl cluster move against two groved nodes and a real etcd: a range moves while clients
// read and write it through etcd:// routing, and nothing acknowledged is lost or changed, with
// the expiry of keys carried over; a move interrupted by a kill -9 of the source or of the mover
// leaves the range with its owner and completes when run again; --abort ends a move and drops
// the target's partial copy; a node that is neither owner nor target refuses the copy's writes.

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grove/client/client.h"
#include "grove/v1/metadata.h"

#include "cluster/etcd_process.h"
#include "cluster/grovectl_runner.h"
#include "cluster/shard_map.h"
#include "service/integration.h"
#include "testutil/status_macros.h"

namespace grove::testing {
namespace {

constexpr int kKeys = 4000;

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%05d", i);
  return buf;
}

class MoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdProcess::Start(dir_.Sub(""));
    ASSERT_NE(etcd_, nullptr);
    cluster::EtcdOptions o;
    o.endpoints = {etcd_->endpoint()};
    auto c = cluster::EtcdClient::Create(o);
    ASSERT_OK(c.status());
    etcd_client_ = std::move(*c);
    // alpha owns [-inf, k02000) and [k02000, +inf); the second range moves to beta.
    ASSERT_OK(cluster::CreateShardMap(etcd_client_.get(), "mv", "alpha").status());
    ASSERT_OK(cluster::UpdateShardMap(etcd_client_.get(), "mv", 0, [](cluster::ShardMap* m) {
                return m->Split(Key(2000));
              }).status());
    for (const std::string name : {"alpha", "beta"}) {
      configs_[name] = Config(name);
      nodes_[name] = GrovedProcess::Start(dir_.path(), configs_[name]);
      ASSERT_NE(nodes_[name], nullptr);
    }
    client::ClientOptions co;
    co.address = "etcd://" + etcd_->endpoint() + "/mv";
    co.max_attempts = 8;
    ASSERT_TRUE(client::Client::Create(co, &client_).ok());
    // The keys, a tenth of them with an expiry an hour away.
    for (int begin = 0; begin < kKeys; begin += 500) {
      std::vector<client::Mutation> batch;
      for (int i = begin; i < begin + 500; ++i) {
        client::Mutation m(client::Mutation::Type::kPut, Key(i), "v0-" + Key(i));
        if (i % 10 == 0) m.ttl = std::chrono::hours(1);
        batch.push_back(std::move(m));
      }
      // One batch per range: 2000 is a multiple of 500.
      ASSERT_TRUE(client_->BatchInsert(batch).ok());
    }
    for (int i = 0; i < kKeys; ++i) ledger_[Key(i)] = {"v0-" + Key(i)};
  }

  GrovedConfig Config(const std::string& name) {
    GrovedConfig c;
    c.data_dir = dir_.Sub("data-" + name);
    c.grpc_port = PickFreePort();
    c.metrics_port = PickFreePort();
    c.yaml = "cluster:\n  etcd_endpoints: [\"" + etcd_->endpoint() +
             "\"]\n  name: mv\n  node_name: " + name +
             "\n  advertise_address: 127.0.0.1:" + std::to_string(c.grpc_port) +
             "\n  lease_ttl_seconds: 2\n";
    return c;
  }

  int Grovectl(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {"cluster", "--etcd", etcd_->endpoint(), "--cluster", "mv"});
    return RunGrovectlInProcess(args, out);
  }

  cluster::ShardRange MovedRange() {
    auto stored = cluster::ReadShardMap(etcd_client_.get(), "mv");
    EXPECT_OK(stored.status());
    return (*stored)->map.Find(Key(2000));
  }

  // Writers on disjoint keys (key i belongs to writer i % n), each recording in the ledger the
  // values a key may hold: the last acknowledged write, plus any whose outcome is unknown.
  void StartWriters(int n) {
    for (int w = 0; w < n; ++w) {
      writers_.emplace_back([this, w, n] {
        std::mt19937 rng(w);
        for (int seq = 1; !stop_.load(); ++seq) {
          const int i = static_cast<int>(rng() % (kKeys / n)) * n + w;
          const std::string key = Key(i);
          const bool del = rng() % 10 == 0;
          const std::string value = del ? "" : "w" + std::to_string(w) + "-" + std::to_string(seq);
          grpc::Status s = del ? client_->Delete(key) : client_->Put(key, value);
          std::lock_guard<std::mutex> lock(ledger_mu_);
          if (s.ok()) {
            ledger_[key] = {value};
            ++acked_;
          } else if (s.error_message().find("may or may not") != std::string::npos ||
                     s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
            ledger_[key].insert(value);  // unknown outcome: either is right
          } else {
            ++refused_;  // refused before applying: nothing changes
          }
        }
      });
    }
  }
  void StopWriters() {
    stop_ = true;
    for (auto& t : writers_) t.join();
    writers_.clear();
  }

  // Every key reads as one of the values the ledger allows ("" = absent).
  void ExpectLedger() {
    std::lock_guard<std::mutex> lock(ledger_mu_);
    int wrong = 0;
    for (const auto& [key, allowed] : ledger_) {
      std::string v;
      bool found = false;
      ASSERT_TRUE(client_->Get(key, &v, &found).ok()) << key;
      if (!found) v.clear();
      if (allowed.count(v) == 0 && ++wrong <= 5) {
        ADD_FAILURE() << key << " reads '" << v << "', not one of " << allowed.size()
                      << " allowed values (first: '" << *allowed.begin() << "')";
      }
    }
    EXPECT_EQ(wrong, 0);
  }

  void ExpectMovedToBeta() {
    cluster::ShardRange r = MovedRange();
    EXPECT_EQ(r.owner, "beta");
    EXPECT_FALSE(r.moving());
    EXPECT_EQ(r.cleanup_node, "") << "the old owner's copy was dropped";
    // The old owner holds none of the range any more, the new one serves it.
    auto alpha = v1::KV::NewStub(Plaintext(nodes_["alpha"]->address()));
    v1::StatsRequest sreq;
    v1::StatsResponse stats;
    ASSERT_TRUE(alpha->Stats(Ctx().get(), sreq, &stats).ok());
    EXPECT_LE(stats.index().entries(), 2000u) << "alpha keeps only [-inf, k02000)";
  }

  TempDir dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<cluster::EtcdClient> etcd_client_;
  std::map<std::string, GrovedConfig> configs_;
  std::map<std::string, std::unique_ptr<GrovedProcess>> nodes_;
  std::unique_ptr<client::Client> client_;
  std::mutex ledger_mu_;
  std::map<std::string, std::set<std::string>> ledger_;
  uint64_t acked_ = 0, refused_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> writers_;
};

TEST_F(MoveTest, ARangeMovesUnderLoadAndNothingAcknowledgedIsLost) {
  StartWriters(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string out;
  ASSERT_EQ(Grovectl({"move", Key(2000), "beta", "--batch", "200"}, &out), 0) << out;
  EXPECT_NE(out.find("switched: beta owns range [k02000, +inf)"), std::string::npos) << out;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // writes go on at beta
  StopWriters();
  EXPECT_GT(acked_, 100u);
  ExpectLedger();
  ExpectMovedToBeta();
  // Expiry came along: k02000 was written with an hour to live.
  std::string v;
  bool found = false;
  client::ValueInfo info;
  ASSERT_TRUE(client_->Get(Key(2010), &v, &found, &info).ok());
  if (found && v.rfind("v0-", 0) == 0) {
    const uint64_t now =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    EXPECT_GT(info.expires_ms, now + 3500 * 1000);
    EXPECT_LE(info.expires_ms, now + 3600 * 1000);
  }
  // Moving it back works the same way.
  ASSERT_EQ(Grovectl({"move", Key(2000), "alpha"}, &out), 0) << out;
  EXPECT_EQ(MovedRange().owner, "alpha");
  ExpectLedger();
}

TEST_F(MoveTest, AKilledSourceLeavesTheRangeWithItAndTheMoveCompletesWhenRunAgain) {
  std::atomic<int> code{-1};
  std::string out;
  std::thread mover([&] {
    code = Grovectl({"move", Key(2000), "beta", "--batch", "50", "--max-keys-per-second", "1000"},
                    &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // mid-copy: 2000 keys, 2 s
  nodes_["alpha"]->Signal(SIGKILL);
  ASSERT_TRUE(nodes_["alpha"]->Wait(std::chrono::seconds(10)).has_value());
  mover.join();
  EXPECT_EQ(code.load(), 1) << out;
  EXPECT_NE(out.find("run the same command again"), std::string::npos) << out;
  cluster::ShardRange r = MovedRange();
  EXPECT_EQ(r.owner, "alpha") << "the range stays with its owner";
  EXPECT_EQ(r.moving_to, "beta");
  nodes_["alpha"] = GrovedProcess::Start(dir_.path(), configs_["alpha"]);
  ASSERT_NE(nodes_["alpha"], nullptr);
  // Writes go on at the owner while the range is moving.
  ASSERT_TRUE(client_->Put(Key(3001), "during").ok());
  ledger_[Key(3001)] = {"during"};
  ASSERT_EQ(Grovectl({"move", Key(2000), "beta"}, &out), 0) << out;
  ExpectLedger();
  ExpectMovedToBeta();
}

TEST_F(MoveTest, AKilledMoverLeavesTheRangeWithItsOwnerAndAbortDropsTheCopy) {
  const std::vector<std::string> args = {
      GROVECTL_PATH, "cluster", "--etcd", etcd_->endpoint(), "--cluster", "mv",
      "move",        Key(2000), "beta",   "--batch",         "50",        "--max-keys-per-second",
      "500"};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // mid-copy: 2000 keys, 4 s
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  cluster::ShardRange r = MovedRange();
  EXPECT_EQ(r.owner, "alpha");
  ASSERT_EQ(r.moving_to, "beta");
  EXPECT_FALSE(r.fenced);
  {
    std::string status;
    ASSERT_EQ(Grovectl({"status"}, &status), 0) << status;
    EXPECT_NE(status.find("alpha  moving to beta (move " + std::to_string(r.move_id) + ")"),
              std::string::npos)
        << status;
  }
  // The owner serves reads and writes of the moving range; beta refuses clients' writes to it.
  ASSERT_TRUE(client_->Put(Key(2500), "mid-move").ok());
  ledger_[Key(2500)] = {"mid-move"};
  {
    auto beta = v1::KV::NewStub(Plaintext(nodes_["beta"]->address()));
    v1::PutRequest req;
    req.set_key(Key(2501));
    req.set_value("x");
    v1::PutResponse resp;
    auto ctx = Ctx();
    ctx->AddMetadata(v1::kMoveIngestMetadata, std::to_string(r.move_id + 1));
    EXPECT_EQ(beta->Put(ctx.get(), req, &resp).error_code(), grpc::StatusCode::OUT_OF_RANGE)
        << "a copy's write with another move's id is refused";
  }
  std::string out;
  ASSERT_EQ(Grovectl({"move", Key(2000), "--abort"}, &out), 0) << out;
  EXPECT_NE(out.find("aborted the move"), std::string::npos) << out;
  r = MovedRange();
  EXPECT_EQ(r.owner, "alpha");
  EXPECT_FALSE(r.moving());
  auto beta = v1::KV::NewStub(Plaintext(nodes_["beta"]->address()));
  v1::StatsRequest sreq;
  v1::StatsResponse stats;
  ASSERT_TRUE(beta->Stats(Ctx().get(), sreq, &stats).ok());
  EXPECT_EQ(stats.index().entries(), 0u) << "beta's partial copy was dropped";
  ExpectLedger();
  // And a new move completes.
  ASSERT_EQ(Grovectl({"move", Key(2000), "beta"}, &out), 0) << out;
  ExpectLedger();
  ExpectMovedToBeta();
}

TEST_F(MoveTest, AKilledTargetLeavesTheRangeWithItsOwnerAndTheMoveCompletesWhenRunAgain) {
  std::atomic<int> code{-1};
  std::string out;
  std::thread mover([&] {
    code = Grovectl({"move", Key(2000), "beta", "--batch", "50", "--max-keys-per-second", "1000"},
                    &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  nodes_["beta"]->Signal(SIGKILL);
  ASSERT_TRUE(nodes_["beta"]->Wait(std::chrono::seconds(10)).has_value());
  mover.join();
  EXPECT_EQ(code.load(), 1) << out;
  EXPECT_EQ(MovedRange().owner, "alpha");
  ASSERT_TRUE(client_->Put(Key(3002), "while-beta-down").ok()) << "the owner keeps serving";
  ledger_[Key(3002)] = {"while-beta-down"};
  nodes_["beta"] = GrovedProcess::Start(dir_.path(), configs_["beta"]);
  ASSERT_NE(nodes_["beta"], nullptr);
  ASSERT_EQ(Grovectl({"move", Key(2000), "beta"}, &out), 0) << out;
  ExpectLedger();
  ExpectMovedToBeta();
}

TEST_F(MoveTest, WhileEtcdIsDownTheNodesServeAndTheMoveCompletesWhenItIsBack) {
  std::atomic<int> code{-1};
  std::string out;
  std::thread mover([&] {
    code = Grovectl({"--timeout", "2", "move", Key(2000), "beta", "--batch", "50",
                     "--max-keys-per-second", "1000"},
                    &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  etcd_->Kill();
  // The routing client has the map: reads and writes of both ranges go on.
  ASSERT_TRUE(client_->Put(Key(10), "etcd-down").ok());
  ledger_[Key(10)] = {"etcd-down"};
  ASSERT_TRUE(client_->Put(Key(2600), "etcd-down").ok());
  ledger_[Key(2600)] = {"etcd-down"};
  mover.join();
  EXPECT_EQ(code.load(), 1) << out << " (the mover needs etcd to fence and switch)";
  ASSERT_TRUE(etcd_->Restart());
  cluster::ShardRange r;
  for (int i = 0; i < 50; ++i) {  // etcd answers again within a few seconds
    auto stored = cluster::ReadShardMap(etcd_client_.get(), "mv");
    if (stored.ok()) {
      r = (*stored)->map.Find(Key(2000));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(r.owner, "alpha");
  ASSERT_EQ(Grovectl({"move", Key(2000), "beta"}, &out), 0) << out;
  ExpectLedger();
  ExpectMovedToBeta();
}

}  // namespace
}  // namespace grove::testing
