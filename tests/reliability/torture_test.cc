// Kill -9 torture (docs/reliability.md, "kill -9 torture"). groved runs as a child process and is
// SIGKILLed at random moments while writer threads drive it through grove_client and keep a ledger
// (ledger.h) of every write they invoked and every answer they got. After each restart the whole
// keyspace is read back (BatchGet of every key, then a full Scan that must agree with it) and
// checked against the ledger: no acknowledged write lost, no value that was never written, every
// value intact, every batch whose call failed all-or-nothing. Writers also check their own reads
// while they run.
//
// Parameterised by wal.sync: `always` syncs before acknowledging; `batch` and `none` acknowledge
// after write(2) and must lose nothing across kill -9 too, because the page cache survives the
// process. Every other cycle runs groved on the psync backend instead of io_uring; about one
// restart in five is itself killed as soon as the metrics port answers, while the engine recovers.
//
// GROVE_TORTURE_CYCLES sets the cycles of every sync mode (default: 20 for always, 8 for batch
// and none); `make torture CYCLES=N` runs N. One JSON summary line per mode (report.h).

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "grove/client/client.h"

#include "metrics/http_get.h"
#include "reliability/report.h"
#include "reliability/tagged_value.h"
#include "reliability/torture_writer.h"
#include "service/groved_process.h"
#include "testutil/temp_dir.h"
#include "util/coding.h"

namespace grove::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kWriters = 4;
constexpr uint64_t kKeysPerWriter = 2000;

// Small segments, a low dirty fraction and a one-second timer: checkpoints, WAL rolls and segment
// deletion all happen many times per cycle, so kills land in every phase of the write path.
std::string TortureYaml(const std::string& sync, const std::string& backend) {
  return "io:\n  backend: " + backend + "\nwal:\n  sync: " + sync +
         "\n  segment_bytes: 1MiB\n  max_unsynced_bytes: 512KiB\n  batch_interval_us: 2000\n"
         "checkpoint:\n  dirty_fraction: 0.05\n  wal_bytes: 2MiB\n  interval_seconds: 1\n"
         "limits:\n  max_batch_bytes: 128KiB\nlogging:\n  level: warn\n";
}

double MillisSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// groved on fixed ports across restarts (clients reconnect to the same address); new ports only
// when the old ones were taken meanwhile.
class Server {
 public:
  Server(const std::string& dir, std::string sync) : dir_(dir), sync_(std::move(sync)) {}
  ~Server() { Kill(); }

  // Starts groved and waits for /readyz. *ready_ms: from spawn to ready.
  bool Start(const std::string& backend, double* ready_ms) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!Launch(backend)) return false;
      if (proc_->WaitReadyz(200, 120s)) {
        *ready_ms = MillisSince(t0);
        return true;
      }
      const std::string log = proc_->Log();
      if (proc_->running() || log.find("cannot listen") == std::string::npos) {
        ADD_FAILURE() << "groved did not become ready; log:\n" << log;
        return false;
      }
      grpc_port_ = metrics_port_ = 0;  // a port was taken: pick new ones
    }
    return false;
  }

  // Starts groved and kills it as soon as its metrics port answers, while the engine opens.
  bool StartAndKillDuringRecovery() {
    if (!Launch("auto")) return false;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (proc_->running() && std::chrono::steady_clock::now() < deadline && !HttpLive()) {
      std::this_thread::sleep_for(2ms);  // polling interval
    }
    Kill();
    return true;
  }

  void Kill() {
    if (!proc_) return;
    proc_->Signal(SIGKILL);
    proc_->Wait(60s);
    SaveLog();
    proc_.reset();
  }

  // SIGTERM; true when groved drained, closed the engine and exited 0.
  bool Stop() {
    proc_->Signal(SIGTERM);
    const std::optional<int> status = proc_->Wait(120s);
    SaveLog();
    const bool clean = status.has_value() && *status == 0;
    if (!clean) ADD_FAILURE() << "groved did not stop cleanly; log:\n" << proc_->Log();
    proc_.reset();
    return clean;
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }

 private:
  bool Launch(const std::string& backend) {
    GrovedConfig c;
    c.data_dir = dir_ + "/data";
    c.yaml = TortureYaml(sync_, backend);
    c.grpc_port = grpc_port_;
    c.metrics_port = metrics_port_;
    c.wait_ready = false;
    proc_ = GrovedProcess::Start(dir_, c);
    if (!proc_) return false;
    grpc_port_ = proc_->grpc_port();
    metrics_port_ = proc_->metrics_port();
    return true;
  }

  bool HttpLive() { return HttpGet(metrics_port_, "/livez").status == 200; }

  // The harness names logs by port, so a restart would overwrite the last one: keep them all.
  void SaveLog() {
    if (proc_) std::ofstream(dir_ + "/run-" + std::to_string(runs_++) + ".log") << proc_->Log();
  }

  const std::string dir_;
  const std::string sync_;
  std::unique_ptr<GrovedProcess> proc_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int runs_ = 0;
};

std::unique_ptr<client::Client> NewClient(const std::string& address, int attempts) {
  client::ClientOptions o;
  o.address = address;
  o.timeout = 20s;
  o.max_attempts = attempts;
  std::unique_ptr<client::Client> c;
  EXPECT_TRUE(client::Client::Create(o, &c).ok());
  return c;
}

struct VerifyTotals {
  uint64_t verifications = 0;
  uint64_t keys_read = 0;
  uint64_t keys_present = 0;
  ResolveCounts resolved;
};

// Reads every key of every writer and checks it against the ledger; a full Scan must return
// exactly the present keys with the same values. Then the observations become the baseline.
void VerifyKeyspace(client::Client* c, std::vector<std::unique_ptr<TortureWriter>>& writers,
                    Violations* violations, VerifyTotals* totals) {
  std::map<std::string, std::optional<std::string>> all;
  for (auto& w : writers) {
    std::map<std::string, std::optional<std::string>> observed;
    for (uint64_t begin = 0; begin < w->keys(); begin += 250) {
      std::vector<std::string> keys;
      for (uint64_t i = begin; i < std::min(w->keys(), begin + 250); ++i) {
        keys.push_back(TortureKey(w->id(), i));
      }
      std::vector<std::optional<std::string>> values;
      const grpc::Status s = c->BatchGet(keys, &values);
      ASSERT_TRUE(s.ok()) << "verification BatchGet: " << s.error_message();
      for (size_t j = 0; j < keys.size(); ++j) {
        std::string why;
        const Verdict v = w->ledger().Check(keys[j], values[j], &why);
        if (v != Verdict::kOk) {
          violations->Add(v, "writer " + std::to_string(w->id()) + " key " +
                                 std::to_string(DecodeBigEndian64(keys[j].data()) & 0xffffffffu) +
                                 " (after restart): " + why);
        }
        totals->keys_present += values[j].has_value();
        observed[keys[j]] = std::move(values[j]);
      }
      totals->keys_read += keys.size();
    }
    const ResolveCounts r = w->ledger().Resolve(observed);
    totals->resolved.keys_uncertain += r.keys_uncertain;
    totals->resolved.resolved_new += r.resolved_new;
    totals->resolved.resolved_old += r.resolved_old;
    totals->resolved.batches_uncertain += r.batches_uncertain;
    totals->resolved.batches_applied += r.batches_applied;
    totals->resolved.batches_dropped += r.batches_dropped;
    totals->resolved.batches_torn += r.batches_torn;
    if (r.batches_torn > 0) {
      violations->Add(Verdict::kCorrupt, std::to_string(r.batches_torn) + " batch(es) of writer " +
                                             std::to_string(w->id()) + " partly applied");
    }
    all.merge(observed);
  }

  // The scan path must agree with the point reads: same keys, same values, in order, nothing else.
  client::ScanRange range;
  range.page_size = 2000;
  std::string prev;
  uint64_t scanned = 0, present = 0;
  for (const auto& [k, v] : all) present += v.has_value();
  const grpc::Status s = c->Scan(range, [&](std::string_view k, std::string_view v) {
    const std::string key(k);
    if (scanned > 0 && !(prev < key)) violations->Add(Verdict::kCorrupt, "full scan out of order");
    prev = key;
    ++scanned;
    auto it = all.find(key);
    if (it == all.end()) {
      violations->Add(Verdict::kPhantom, "full scan returned a key no writer owns");
    } else if (!it->second || *it->second != v) {
      violations->Add(Verdict::kCorrupt, "full scan and BatchGet disagree on a key");
    }
    return true;
  });
  ASSERT_TRUE(s.ok()) << "verification Scan: " << s.error_message();
  if (scanned != present) {
    violations->Add(Verdict::kLostAck, "full scan returned " + std::to_string(scanned) +
                                           " keys, BatchGet found " + std::to_string(present));
  }
  ++totals->verifications;
}

class TortureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TortureTest, KillNineLosesNoAcknowledgedWrite) {
  const std::string sync = GetParam();
  const uint64_t cycles = EnvU64("GROVE_TORTURE_CYCLES", sync == "always" ? 20 : 8);
  const uint64_t seed = ReliabilitySeed() + std::hash<std::string>()(sync);
  std::mt19937_64 rng(seed);
  const auto started = std::chrono::steady_clock::now();

  TempDir dir;
  Server server(dir.path(), sync);
  Gate gate(kWriters);
  Violations violations;
  WriterStats stats;
  std::vector<std::unique_ptr<TortureWriter>> writers;
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < kWriters; ++w) {
    writers.push_back(
        std::make_unique<TortureWriter>(w, kKeysPerWriter, seed + w, &gate, &violations, &stats));
  }
  for (auto& w : writers) threads.emplace_back([&w] { w->Run(); });
  ASSERT_TRUE(gate.WaitAllParked(60s));

  std::vector<double> ready_ms, recovery_ms;
  uint64_t replayed = 0, kills = 0, kills_in_recovery = 0;
  VerifyTotals totals;
  auto start_and_verify = [&](int cycle) {
    double ms = 0;
    ASSERT_TRUE(server.Start(cycle % 2 == 0 ? "auto" : "psync", &ms));
    ready_ms.push_back(ms);
    auto verifier = NewClient(server.address(), 5);
    v1::StatsResponse st;
    ASSERT_TRUE(verifier->Stats(&st).ok());
    recovery_ms.push_back(st.storage().recovery_seconds() * 1e3);
    replayed += st.storage().recovery_replayed_records();
    VerifyKeyspace(verifier.get(), writers, &violations, &totals);
  };

  for (uint64_t cycle = 0; cycle < cycles && violations.total() == 0; ++cycle) {
    if (cycle > 0 && rng() % 5 == 0) {
      ASSERT_TRUE(server.StartAndKillDuringRecovery());
      ++kills_in_recovery;
    }
    start_and_verify(static_cast<int>(cycle));
    if (HasFatalFailure()) break;
    for (auto& w : writers) w->SetClient(NewClient(server.address(), 1));
    const uint64_t target = 50 + rng() % 2500;
    gate.Resume();
    const bool reached = gate.WaitAcks(target, 300s);
    // Pause first, then kill at once: writers in the middle of a call see it fail.
    gate.Pause();
    server.Kill();
    ++kills;
    ASSERT_TRUE(reached) << "cycle " << cycle << ": " << target
                         << " acknowledged writes not reached within 300 s";
    ASSERT_TRUE(gate.WaitAllParked(120s));
  }

  // After the last kill: recover and verify, write a little more, then a clean shutdown (final
  // checkpoint) and one more verified restart.
  if (!HasFatalFailure()) {
    start_and_verify(0);
    for (auto& w : writers) w->SetClient(NewClient(server.address(), 1));
    gate.Resume();
    EXPECT_TRUE(gate.WaitAcks(200, 300s));
    gate.Pause();
    EXPECT_TRUE(gate.WaitAllParked(120s));
    EXPECT_TRUE(server.Stop());
    start_and_verify(1);
    server.Kill();
  }
  gate.Stop();
  for (auto& t : threads) t.join();

  nlohmann::json failures;
  {
    std::lock_guard<std::mutex> lock(stats.mu);
    for (const auto& [code, n] : stats.failure_codes) failures[code] = n;
  }
  EmitReport({{"test", "torture"},
              {"sync", sync},
              {"seed", seed},
              {"cycles", kills},
              {"kills_during_recovery", kills_in_recovery},
              {"writers", kWriters},
              {"keys", kWriters * kKeysPerWriter},
              {"ops_invoked", stats.invoked.load()},
              {"ops_acked", stats.acked.load()},
              {"ops_failed", stats.failed.load()},
              {"failure_codes", failures},
              {"reads_checked", stats.reads_checked.load()},
              {"verifications", totals.verifications},
              {"keys_verified", totals.keys_read},
              {"inflight_keys", totals.resolved.keys_uncertain},
              {"inflight_resolved_new", totals.resolved.resolved_new},
              {"inflight_resolved_old", totals.resolved.resolved_old},
              {"inflight_batches", totals.resolved.batches_uncertain},
              {"inflight_batches_applied", totals.resolved.batches_applied},
              {"inflight_batches_dropped", totals.resolved.batches_dropped},
              {"acked_lost", violations.count(Verdict::kLostAck)},
              {"phantoms", violations.count(Verdict::kPhantom)},
              {"corrupt", violations.count(Verdict::kCorrupt)},
              {"torn_batches", totals.resolved.batches_torn},
              {"wal_records_replayed", replayed},
              {"recovery_ms_p50", Percentile(recovery_ms, 50)},
              {"recovery_ms_p99", Percentile(recovery_ms, 99)},
              {"recovery_ms_max", Percentile(recovery_ms, 100)},
              {"ready_ms_p50", Percentile(ready_ms, 50)},
              {"ready_ms_p99", Percentile(ready_ms, 99)},
              {"duration_s", MillisSince(started) / 1e3}});
  for (const std::string& e : violations.examples()) ADD_FAILURE() << e;
  EXPECT_EQ(violations.total(), 0u) << "seed " << seed << "; data kept with GROVE_KEEP_TEST_DIRS=1";
  EXPECT_GT(stats.acked.load(), cycles * 50);
}

INSTANTIATE_TEST_SUITE_P(SyncModes, TortureTest, ::testing::Values("always", "batch", "none"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace grove::testing
