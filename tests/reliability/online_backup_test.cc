// Online backup through groved (grove.v1.Admin/Backup) under concurrent writers:
//   * the restored backup holds exactly the acknowledged writes up to its backup point: for each
//     key, the acknowledged write with the highest version <= last_lsn, and nothing newer;
//   * a kill -9 of groved in the middle of a backup loses no acknowledged write, leaves a
//     directory that is recognisably unfinished, and the next backup restores exactly again.

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "grove/client/client.h"
#include "grove/db.h"
#include "grove/logger.h"

#include "reliability/report.h"
#include "service/groved_process.h"
#include "testutil/temp_dir.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

struct Ack {
  uint64_t version = 0;  // 0 when the outcome is unknown
  bool deleted = false;
  bool unknown = false;  // sent, and the connection broke: it may or may not have applied
  std::string value;
};

// Writers through groved, each on its own keys' share of a key space, recording every
// acknowledged write with its version.
class Writers {
 public:
  Writers(const std::string& address, int n) {
    for (int t = 0; t < n; ++t) {
      threads_.emplace_back([this, address, t, n] { Run(address, t, n); });
    }
  }
  ~Writers() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  uint64_t acked() const { return acked_.load(); }
  // key -> every acknowledged write of it.
  std::map<std::string, std::vector<Ack>> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  void Run(const std::string& address, int t, int n) {
    client::ClientOptions o;
    o.address = address;
    o.timeout = 5s;
    o.max_attempts = 2;
    std::unique_ptr<client::Client> c;
    if (!client::Client::Create(o, &c).ok()) return;
    for (uint64_t i = 0; !stop_.load(); ++i) {
      const uint64_t k = (i * 7919 + static_cast<uint64_t>(t)) % 4000;
      if (static_cast<int>(k % n) != t) continue;  // keys of one writer only: versions order them
      const std::string key = "ob/" + std::to_string(k);
      Ack a;
      client::WriteOutcome out;
      grpc::Status s;
      if (i % 11 == 3) {
        a.deleted = true;
        s = c->Delete(key, client::WriteOptions(), &out);
      } else {
        a.value = std::to_string(i) + std::string(20 + i % 200, 'v');
        s = c->Put(key, a.value, client::WriteOptions(), &out);
      }
      if (!s.ok()) {
        // Refused unsent or before applying: nothing happened. Otherwise it may have applied.
        if (s.error_message().find("may or may not") != std::string::npos ||
            s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
          a.unknown = true;
          std::lock_guard<std::mutex> lock(mu_);
          log_[key].push_back(std::move(a));
        }
        std::this_thread::sleep_for(20ms);
        continue;
      }
      a.version = out.version;
      std::lock_guard<std::mutex> lock(mu_);
      log_[key].push_back(std::move(a));
      acked_.fetch_add(1);
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> acked_{0};
  std::mutex mu_;
  std::map<std::string, std::vector<Ack>> log_;
  std::vector<std::thread> threads_;
};

std::map<std::string, std::string> Expected(const std::map<std::string, std::vector<Ack>>& log,
                                            uint64_t last_lsn) {
  std::map<std::string, std::string> out;
  for (const auto& [key, acks] : log) {
    const Ack* best = nullptr;
    for (const Ack& a : acks) {
      if (a.unknown) continue;
      if (a.version <= last_lsn && (best == nullptr || a.version > best->version)) best = &a;
    }
    if (best != nullptr && !best->deleted) out[key] = best->value;
  }
  return out;
}

std::map<std::string, std::string> Contents(const std::string& data_dir) {
  Options o;
  o.data_dir = data_dir;
  o.create_if_missing = false;
  o.cache_bytes = 32 << 20;
  o.direct_io = false;
  o.logger = NewNullLogger();
  std::map<std::string, std::string> out;
  auto db = Db::Open(o);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) return out;
  auto it = (*db)->NewIterator(ScanOptions());
  for (; (*it)->Valid(); (*it)->Next())
    out[std::string((*it)->key())] = std::string((*it)->value());
  EXPECT_TRUE((*db)->Close().ok());
  return out;
}

RestoreReport Restore(const std::string& backup, const std::string& data_dir) {
  Options o;
  o.data_dir = data_dir;
  o.cache_bytes = 32 << 20;
  o.direct_io = false;
  o.logger = NewNullLogger();
  RestoreReport r;
  Status s = RestoreBackup(backup, o, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

void ExpectSame(const std::map<std::string, std::string>& got,
                const std::map<std::string, std::string>& want, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  int shown = 0;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end() || it->second != v) {
      if (shown++ < 5) {
        ADD_FAILURE() << what << ": " << k << " is "
                      << (it == got.end() ? "absent" : "'" + it->second.substr(0, 20) + "...'")
                      << ", expected '" << v.substr(0, 20) << "...'";
      }
    }
  }
  for (const auto& [k, v] : got) {
    if (!want.contains(k) && shown++ < 5) ADD_FAILURE() << what << ": unexpected key " << k;
  }
}

// After a crash: each key holds its last acknowledged write, or a later write whose outcome its
// writer could not learn (one writer per key, so the writes of a key are in log order).
void ExpectNoAcknowledgedWriteLost(const std::map<std::string, std::string>& got,
                                   const std::map<std::string, std::vector<Ack>>& log) {
  int shown = 0;
  for (const auto& [key, acks] : log) {
    size_t last_acked = acks.size();
    for (size_t i = 0; i < acks.size(); ++i) {
      if (!acks[i].unknown) last_acked = i;
    }
    auto it = got.find(key);
    auto matches = [&](const Ack& a) {
      return a.deleted ? it == got.end() : it != got.end() && it->second == a.value;
    };
    bool ok = last_acked == acks.size() ? it == got.end() : matches(acks[last_acked]);
    const size_t from = last_acked == acks.size() ? 0 : last_acked + 1;
    for (size_t i = from; i < acks.size() && !ok; ++i) ok = acks[i].unknown && matches(acks[i]);
    if (!ok && shown++ < 5) {
      ADD_FAILURE() << key << " lost its acknowledged write: it is "
                    << (it == got.end() ? "absent" : "'" + it->second.substr(0, 20) + "...'");
    }
  }
}

TEST(OnlineBackupTest, RestoresExactlyTheAcknowledgedWritesUpToItsPoint) {
  TempDir dir;
  GrovedConfig cfg;
  cfg.data_dir = dir.Sub("data");
  // A small cache: checkpoints run while the copy does, overwriting pages it has not reached.
  cfg.yaml =
      "checkpoint:\n  dirty_fraction: 0.05\n"
      "backup:\n  dir: " +
      dir.Sub("backups") + "\nlogging:\n  level: warn\n";
  auto groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  client::ClientOptions co;
  co.address = groved->address();
  std::unique_ptr<client::Client> admin;
  ASSERT_TRUE(client::Client::Create(co, &admin).ok());

  Writers writers(groved->address(), 4);
  while (writers.acked() < 3000) std::this_thread::sleep_for(10ms);
  v1::BackupResponse r;
  grpc::Status s = admin->Backup("under-load", 4 << 20, 600s, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const uint64_t acked_at_end = writers.acked();
  std::this_thread::sleep_for(300ms);  // writes after the backup point
  writers.Stop();
  EXPECT_EQ(r.path(), dir.Sub("backups") + "/under-load");
  EXPECT_GT(writers.acked(), acked_at_end) << "writers kept going during and after the backup";

  Restore(r.path(), dir.Sub("restored"));
  const auto log = writers.Log();
  ExpectSame(Contents(dir.Sub("restored")), Expected(log, r.last_lsn()),
             "restored at LSN " + std::to_string(r.last_lsn()));
  EmitReport({{"test", "online_backup"},
              {"last_lsn", r.last_lsn()},
              {"acknowledged_writes", writers.acked()},
              {"pages_preserved", r.pages_preserved()},
              {"seconds", r.seconds()}});
}

TEST(OnlineBackupTest, KillNineDuringABackupLosesNothing) {
  TempDir dir;
  GrovedConfig cfg;
  cfg.data_dir = dir.Sub("data");
  cfg.yaml = "backup:\n  dir: " + dir.Sub("backups") + "\nlogging:\n  level: warn\n";
  auto groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  cfg.grpc_port = groved->grpc_port();
  cfg.metrics_port = groved->metrics_port();
  client::ClientOptions co;
  co.address = groved->address();
  co.max_attempts = 1;
  std::unique_ptr<client::Client> admin;
  ASSERT_TRUE(client::Client::Create(co, &admin).ok());

  auto writers = std::make_unique<Writers>(groved->address(), 3);
  while (writers->acked() < 4000) std::this_thread::sleep_for(10ms);
  grpc::Status killed_backup;
  std::thread backup([&] {
    v1::BackupResponse r;
    killed_backup = admin->Backup("killed", 1 << 20, 600s, &r);  // slow: the kill lands in it
  });
  std::this_thread::sleep_for(500ms);
  groved->Signal(SIGKILL);
  groved->Wait(60s);
  backup.join();
  EXPECT_FALSE(killed_backup.ok());
  writers->Stop();
  const auto log_before = writers->Log();

  // Nothing acknowledged is lost.
  groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  groved->Signal(SIGTERM);
  groved->Wait(60s);
  const auto after_kill = Contents(dir.Sub("data"));
  ExpectNoAcknowledgedWriteLost(after_kill, log_before);
  // The interrupted backup is recognisably unfinished.
  EXPECT_EQ(CheckBackup(dir.Sub("backups") + "/killed").status().code(), StatusCode::kNotFound);

  // And the next backup, under writes again, restores exactly.
  groved = GrovedProcess::Start(dir.path(), cfg);
  ASSERT_NE(groved, nullptr);
  writers = std::make_unique<Writers>(groved->address(), 3);
  while (writers->acked() < 2000) std::this_thread::sleep_for(10ms);
  v1::BackupResponse r;
  ASSERT_TRUE(admin->Backup("after", 0, 600s, &r).ok());
  writers->Stop();
  Restore(r.path(), dir.Sub("restored"));
  // What the database held after the kill, with the writes since then up to the backup point.
  auto expected = after_kill;
  for (const auto& [k, v] : Expected(writers->Log(), r.last_lsn())) expected[k] = v;
  for (const auto& [k, acks] : writers->Log()) {
    const Ack* best = nullptr;
    for (const Ack& a : acks) {
      if (!a.unknown && a.version <= r.last_lsn() && (!best || a.version > best->version))
        best = &a;
    }
    if (best != nullptr && best->deleted) expected.erase(k);
  }
  ExpectSame(Contents(dir.Sub("restored")), expected, "the next backup");
}

}  // namespace
}  // namespace grove::testing
