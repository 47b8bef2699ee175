// Linearizability (docs/reliability.md, "Linearizability"): concurrent clients hammer a few hot
// keys with puts, deletes, batches, point reads, batch reads and scans, recording when each call
// was invoked and when its answer came back; every key's history must then be linearizable as a
// register (linearizability.h). First against the engine in process (with checkpoints running
// underneath), then against groved over gRPC with a kill -9 and restart in the middle, where the
// calls cut off by the kill have unknown outcomes.
//
// The checker itself is tested first, on histories with known answers.

#include "reliability/linearizability.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "grove/client/client.h"

#include "engine/db_test_util.h"
#include "reliability/report.h"
#include "service/integration.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;
using Kind = RegisterOp::Kind;

RegisterOp W(std::optional<std::string> v, int64_t a, int64_t b, bool known = true) {
  return RegisterOp{Kind::kWrite, std::move(v), a, b, known};
}
RegisterOp R(std::optional<std::string> v, int64_t a, int64_t b) {
  return RegisterOp{Kind::kRead, std::move(v), a, b, true};
}

TEST(WglCheckerTest, AcceptsLinearizableHistories) {
  // Sequential.
  EXPECT_TRUE(
      CheckRegisterHistory(
          {W("a", 0, 1), R("a", 2, 3), W(std::nullopt, 4, 5), R(std::nullopt, 6, 7)}, std::nullopt)
          .ok);
  // A read overlapping a write may see either value.
  EXPECT_TRUE(
      CheckRegisterHistory({W("a", 0, 1), W("b", 2, 10), R("a", 3, 4), R("b", 5, 6)}, std::nullopt)
          .ok);
  // Concurrent writes, then reads agreeing on the last one.
  EXPECT_TRUE(CheckRegisterHistory({W("a", 0, 10), W("b", 1, 9), R("a", 11, 12), R("a", 13, 14)},
                                   std::nullopt)
                  .ok);
  // A write of unknown outcome may apply late, or never.
  EXPECT_TRUE(CheckRegisterHistory({W("a", 0, 1), W("b", 2, 0, false), R("a", 5, 6), R("b", 7, 8)},
                                   std::nullopt)
                  .ok);
  EXPECT_TRUE(
      CheckRegisterHistory({W("a", 0, 1), W("b", 2, 0, false), R("a", 5, 6)}, std::nullopt).ok);
  EXPECT_TRUE(CheckRegisterHistory({R("x", 0, 1)}, std::string("x")).ok);
}

RegisterOp Cas(std::optional<std::string> expected, std::string v, int64_t a, int64_t b,
               bool known = true) {
  RegisterOp op{Kind::kCas, std::move(v), a, b, known};
  op.expected = std::move(expected);
  return op;
}

TEST(WglCheckerTest, CompareAndSetAppliesOnlyOnWhatItExpects) {
  EXPECT_TRUE(
      CheckRegisterHistory({W("a", 0, 1), Cas("a", "b", 2, 3), R("b", 4, 5)}, std::nullopt).ok);
  EXPECT_TRUE(CheckRegisterHistory({Cas(std::nullopt, "a", 0, 1), R("a", 2, 3)}, std::nullopt).ok);
  // Two sets expecting the same value cannot both apply.
  EXPECT_FALSE(
      CheckRegisterHistory({W("a", 0, 1), Cas("a", "b", 2, 3), Cas("a", "c", 4, 5)}, std::nullopt)
          .ok);
  // A set that expected an old value after a newer write was acknowledged.
  EXPECT_FALSE(
      CheckRegisterHistory({W("a", 0, 1), W("x", 2, 3), Cas("a", "b", 4, 5)}, std::nullopt).ok);
  // Concurrent with the write it expects, it may follow it; of unknown outcome, it may never apply.
  EXPECT_TRUE(
      CheckRegisterHistory({W("a", 0, 5), Cas("a", "b", 1, 6), R("b", 7, 8)}, std::nullopt).ok);
  EXPECT_TRUE(
      CheckRegisterHistory({W("a", 0, 1), Cas("a", "b", 2, 0, false), R("a", 5, 6)}, std::nullopt)
          .ok);
}

TEST(WglCheckerTest, RejectsViolations) {
  // A stale read: "b" was written and acknowledged before the read began.
  auto r = CheckRegisterHistory({W("a", 0, 1), W("b", 2, 3), R("a", 4, 5)}, std::nullopt);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.explanation.find("read"), std::string::npos) << r.explanation;
  // A lost write: absent after an acknowledged put.
  EXPECT_FALSE(CheckRegisterHistory({W("a", 0, 1), R(std::nullopt, 2, 3)}, std::nullopt).ok);
  // A value nobody wrote.
  EXPECT_FALSE(CheckRegisterHistory({W("a", 0, 1), R("zzz", 2, 3)}, std::nullopt).ok);
  // Two reads see the writes in opposite orders.
  EXPECT_FALSE(
      CheckRegisterHistory({W("a", 0, 10), W("b", 0, 10), R("a", 1, 2), R("b", 3, 4), R("a", 5, 6)},
                           std::nullopt)
          .ok);
  // An unknown write cannot apply before it was invoked.
  EXPECT_FALSE(CheckRegisterHistory({R("b", 0, 1), W("b", 2, 0, false)}, std::nullopt).ok);
  // A read returning a value before its write was invoked.
  EXPECT_FALSE(CheckRegisterHistory({R("a", 0, 1), W("a", 2, 3)}, std::nullopt).ok);
}

// The history of a run: every client appends to its own list; merged by key afterwards.
struct Recorded {
  std::string key;
  RegisterOp op;
};

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A client's mix of operations over `keys`, against some store.
struct Store {
  virtual ~Store() = default;
  virtual bool Put(const std::string& k, const std::string& v) = 0;
  virtual bool Delete(const std::string& k) = 0;
  virtual bool Batch(const std::vector<std::pair<std::string, std::optional<std::string>>>& m) = 0;
  virtual bool Get(const std::string& k, std::optional<std::string>* v) = 0;
  virtual bool BatchGet(const std::vector<std::string>& k,
                        std::vector<std::optional<std::string>>* v) = 0;
  // Keys in [lo, hi) with their values.
  virtual bool Scan(const std::string& lo, const std::string& hi,
                    std::map<std::string, std::string>* out) = 0;
};

// Operations done by all clients; the test waits on it to kill the server halfway.
class Progress {
 public:
  void Add() {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    cv_.notify_all();
  }
  bool WaitFor(int n, std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
};

void ClientLoop(Store* store, int client, const std::vector<std::string>& keys, int ops,
                uint64_t seed, std::vector<Recorded>* out, Progress* progress) {
  std::mt19937_64 rng(seed);
  for (int n = 0; n < ops; ++n, progress->Add()) {
    const size_t ki = rng() % keys.size();
    const std::string& k = keys[ki];
    auto value = [&] {
      std::string v = "c" + std::to_string(client) + "-" + std::to_string(n) + "-";
      v.resize(rng() % 8 == 0 ? 1500 : 24 + rng() % 40, 'v');  // some values out of line
      return v;
    };
    const int r = static_cast<int>(rng() % 100);
    const int64_t t0 = Now();
    if (r < 35) {
      const std::string v = value();
      const bool ok = store->Put(k, v);
      out->push_back({k, {Kind::kWrite, v, t0, Now(), ok, client}});
    } else if (r < 45) {
      const bool ok = store->Delete(k);
      out->push_back({k, {Kind::kWrite, std::nullopt, t0, Now(), ok, client}});
    } else if (r < 55) {
      std::vector<std::pair<std::string, std::optional<std::string>>> m;
      const std::string& k2 = keys[(ki + 1 + rng() % (keys.size() - 1)) % keys.size()];
      m.push_back({k, value()});
      m.push_back({k2, rng() % 3 == 0 ? std::nullopt : std::optional<std::string>(value() + "b")});
      const bool ok = store->Batch(m);
      const int64_t t1 = Now();
      for (auto& [key, v] : m) out->push_back({key, {Kind::kWrite, v, t0, t1, ok, client}});
    } else if (r < 85) {
      std::optional<std::string> v;
      if (store->Get(k, &v)) out->push_back({k, {Kind::kRead, v, t0, Now(), true, client}});
    } else if (r < 95) {
      std::vector<std::optional<std::string>> v;
      if (store->BatchGet(keys, &v)) {
        const int64_t t1 = Now();
        for (size_t i = 0; i < keys.size(); ++i) {
          out->push_back({keys[i], {Kind::kRead, v[i], t0, t1, true, client}});
        }
      }
    } else {
      std::map<std::string, std::string> got;
      if (store->Scan(keys.front(), keys.back() + '\xff', &got)) {
        const int64_t t1 = Now();
        for (const std::string& key : keys) {
          auto it = got.find(key);
          out->push_back({key,
                          {Kind::kRead,
                           it == got.end() ? std::nullopt : std::optional<std::string>(it->second),
                           t0, t1, true, client}});
        }
      }
    }
  }
}

// Checks every key's history; reports and returns the number of non-linearizable keys.
int CheckAll(const char* target, const std::vector<std::vector<Recorded>>& per_client, int clients,
             size_t keys) {
  std::map<std::string, std::vector<RegisterOp>> by_key;
  uint64_t unknown = 0, total = 0;
  for (const auto& list : per_client) {
    for (const Recorded& r : list) {
      by_key[r.key].push_back(r.op);
      unknown += !r.op.known;
      ++total;
    }
  }
  int bad = 0;
  uint64_t states = 0, max_ops = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [key, ops] : by_key) {
    const LinearizabilityResult r = CheckRegisterHistory(ops, std::nullopt);
    states += r.states_explored;
    max_ops = std::max<uint64_t>(max_ops, ops.size());
    if (!r.ok) {
      ++bad;
      ADD_FAILURE() << target
                    << ": the history of a hot key is not linearizable: " << r.explanation;
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EmitReport({{"test", "linearizability"},
              {"target", target},
              {"clients", clients},
              {"hot_keys", keys},
              {"ops", total},
              {"max_ops_per_key", max_ops},
              {"unknown_outcome_writes", unknown},
              {"states_explored", states},
              {"check_ms", ms},
              {"violations", bad}});
  return bad;
}

class EngineStore : public Store {
 public:
  explicit EngineStore(Db* db) : db_(db) {}
  bool Put(const std::string& k, const std::string& v) override { return db_->Put(k, v).ok(); }
  bool Delete(const std::string& k) override { return db_->Delete(k).ok(); }
  bool Batch(const std::vector<std::pair<std::string, std::optional<std::string>>>& m) override {
    WriteBatch b;
    for (const auto& [k, v] : m) v ? b.Put(k, *v) : b.Delete(k);
    return db_->Write(b).ok();
  }
  bool Get(const std::string& k, std::optional<std::string>* v) override {
    std::string s;
    auto found = db_->Get(k, &s);
    if (!found.ok()) return false;
    *v = *found ? std::optional<std::string>(s) : std::nullopt;
    return true;
  }
  bool BatchGet(const std::vector<std::string>& keys,
                std::vector<std::optional<std::string>>* v) override {
    std::vector<Slice> s(keys.begin(), keys.end());
    return db_->BatchGet(s, v).ok();
  }
  bool Scan(const std::string& lo, const std::string& hi,
            std::map<std::string, std::string>* out) override {
    ScanOptions o;
    o.lower = lo;
    o.upper = hi;
    o.has_upper = true;
    auto it = db_->NewIterator(o);
    if (!it.ok()) return false;
    for (; (*it)->Valid(); (*it)->Next())
      (*out)[std::string((*it)->key())] = std::string((*it)->value());
    return (*it)->status().ok();
  }

 private:
  Db* db_;
};

TEST(LinearizabilityTest, EngineHotKeys) {
  TempDir dir;
  Options o = SmallOptions(dir.path());
  o.cache_bytes = 1 << 20;  // checkpoints run underneath all the time
  o.checkpoint.dirty_fraction = 0.05;
  auto db = Db::Open(o);
  ASSERT_TRUE(db.ok());
  // Neighbours around the hot keys, so they share leaves with other traffic and leaves split.
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_OK((*db)->Put(Key(i * 2), Value(i, 0)));
  const std::vector<std::string> keys = {Key(1001), Key(1003), Key(1005), Key(4001)};
  constexpr int kClients = 6;
  const int ops = static_cast<int>(2500 * ReliabilityScale());
  EngineStore store(db->get());
  std::vector<std::vector<Recorded>> recorded(kClients);
  Progress progress;
  std::vector<std::thread> threads;
  const uint64_t seed = ReliabilitySeed();
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back(
        [&, c] { ClientLoop(&store, c, keys, ops, seed + c, &recorded[c], &progress); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(CheckAll("engine", recorded, kClients, keys.size()), 0) << "seed " << seed;
}

class GrpcStore : public Store {
 public:
  explicit GrpcStore(std::unique_ptr<client::Client> c) : c_(std::move(c)) {}
  bool Put(const std::string& k, const std::string& v) override { return c_->Put(k, v).ok(); }
  bool Delete(const std::string& k) override { return c_->Delete(k).ok(); }
  bool Batch(const std::vector<std::pair<std::string, std::optional<std::string>>>& m) override {
    std::vector<client::Mutation> muts;
    for (const auto& [k, v] : m) {
      muts.push_back(
          {v ? client::Mutation::Type::kPut : client::Mutation::Type::kDelete, k, v.value_or("")});
    }
    return c_->BatchInsert(muts).ok();
  }
  bool Get(const std::string& k, std::optional<std::string>* v) override {
    std::string s;
    bool found = false;
    if (!c_->Get(k, &s, &found).ok()) return false;
    *v = found ? std::optional<std::string>(s) : std::nullopt;
    return true;
  }
  bool BatchGet(const std::vector<std::string>& keys,
                std::vector<std::optional<std::string>>* v) override {
    return c_->BatchGet(keys, v).ok();
  }
  bool Scan(const std::string& lo, const std::string& hi,
            std::map<std::string, std::string>* out) override {
    client::ScanRange r;
    r.start = lo;
    r.end = hi;
    return c_
        ->Scan(r,
               [&](std::string_view k, std::string_view v) {
                 (*out)[std::string(k)] = std::string(v);
                 return true;
               })
        .ok();
  }

 private:
  std::unique_ptr<client::Client> c_;
};

// Through groved, with wal.sync = always, and a kill -9 and restart halfway through.
TEST(LinearizabilityTest, GrovedHotKeysAcrossKillNine) {
  TempDir dir;
  GrovedConfig cfg;
  cfg.data_dir = dir.Sub("data");
  cfg.yaml = "checkpoint:\n  dirty_fraction: 0.05\nlogging:\n  level: warn\n";
  auto groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  cfg.grpc_port = groved->grpc_port();
  cfg.metrics_port = groved->metrics_port();

  const std::vector<std::string> keys = {"hot/a", "hot/b", "hot/c"};
  constexpr int kClients = 6;
  const int ops = static_cast<int>(500 * ReliabilityScale());
  std::vector<std::unique_ptr<GrpcStore>> stores;
  for (int c = 0; c < kClients; ++c) {
    client::ClientOptions o;
    o.address = groved->address();
    o.max_attempts = 10;  // ride out the restart; a write that still fails is of unknown outcome
    o.timeout = 10s;
    std::unique_ptr<client::Client> cl;
    ASSERT_TRUE(client::Client::Create(o, &cl).ok());
    stores.push_back(std::make_unique<GrpcStore>(std::move(cl)));
  }
  std::vector<std::vector<Recorded>> recorded(kClients);
  Progress progress;
  std::vector<std::thread> threads;
  const uint64_t seed = ReliabilitySeed();
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back(
        [&, c] { ClientLoop(stores[c].get(), c, keys, ops, seed + c, &recorded[c], &progress); });
  }
  // Halfway: kill -9 and restart on the same port while the clients keep going.
  EXPECT_TRUE(progress.WaitFor(kClients * ops / 2, 300s));
  groved->Signal(SIGKILL);
  groved->Wait(60s);
  groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  for (auto& t : threads) t.join();
  EXPECT_EQ(CheckAll("groved", recorded, kClients, keys.size()), 0) << "seed " << seed;
}

// Compare-and-swap increments on two hot counters from several clients through groved
// (Get with its version, then Put with version_equals, retried on FAILED_PRECONDITION), with a
// kill -9 and restart halfway. No acknowledged increment may be lost and none applied twice:
// each counter ends between its acknowledged increments and those plus the increments whose
// outcome the client could not learn (sent when the connection broke).
TEST(LinearizabilityTest, GrovedCompareAndSwapIncrementsAcrossKillNine) {
  TempDir dir;
  GrovedConfig cfg;
  cfg.data_dir = dir.Sub("data");
  cfg.yaml = "checkpoint:\n  dirty_fraction: 0.05\nlogging:\n  level: warn\n";
  auto groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  cfg.grpc_port = groved->grpc_port();
  cfg.metrics_port = groved->metrics_port();

  const std::vector<std::string> keys = {"counter/a", "counter/b"};
  constexpr int kClients = 4;
  const int increments = static_cast<int>(150 * ReliabilityScale());
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int c = 0; c < kClients; ++c) {
    client::ClientOptions o;
    o.address = groved->address();
    o.max_attempts = 10;
    o.timeout = 10s;
    std::unique_ptr<client::Client> cl;
    ASSERT_TRUE(client::Client::Create(o, &cl).ok());
    clients.push_back(std::move(cl));
  }
  for (const std::string& k : keys) ASSERT_TRUE(clients[0]->Put(k, "0").ok());

  std::vector<std::atomic<int64_t>> acked(keys.size());
  std::vector<std::atomic<int64_t>> unknown(keys.size());
  std::atomic<int> failures{0};
  Progress progress;
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      client::Client* cl = clients[c].get();
      for (int n = 0; n < increments && failures.load() == 0; ++n) {
        const size_t k = static_cast<size_t>(n + c) % keys.size();
        for (int attempt = 0;; ++attempt) {
          if (attempt > 2000) {
            ADD_FAILURE() << "an increment of " << keys[k] << " never got through";
            failures.fetch_add(1);
            return;
          }
          std::string value;
          bool found = false;
          client::ValueInfo info;
          grpc::Status s = cl->Get(keys[k], &value, &found, &info);
          const uint64_t version = info.version;
          if (!s.ok() || !found) {
            if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE) {
              ADD_FAILURE() << keys[k] << ": " << (s.ok() ? "absent" : s.error_message());
              failures.fetch_add(1);
              return;
            }
            std::this_thread::sleep_for(50ms);  // groved restarting
            continue;
          }
          const std::string next = std::to_string(std::stoll(value) + 1);
          client::WriteOptions cas;
          cas.precondition = client::Precondition::VersionEquals(version);
          s = cl->Put(keys[k], next, cas);
          if (s.ok()) {
            acked[k].fetch_add(1);
            break;
          }
          if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) continue;  // lost a race
          if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
            unknown[k].fetch_add(1);  // sent, connection broke: it may have applied
            break;
          }
          ADD_FAILURE() << keys[k] << ": " << s.error_message();
          failures.fetch_add(1);
          return;
        }
        progress.Add();
      }
    });
  }
  EXPECT_TRUE(progress.WaitFor(kClients * increments / 2, 300s));
  groved->Signal(SIGKILL);
  groved->Wait(60s);
  groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    std::string value;
    bool found = false;
    ASSERT_TRUE(clients[0]->Get(keys[k], &value, &found).ok());
    ASSERT_TRUE(found);
    const int64_t final_value = std::stoll(value);
    EXPECT_GE(final_value, acked[k].load()) << keys[k] << ": an acknowledged increment was lost";
    EXPECT_LE(final_value, acked[k].load() + unknown[k].load())
        << keys[k] << ": more increments applied than were sent";
  }
}

}  // namespace
}  // namespace grove::testing
