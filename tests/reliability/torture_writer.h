#pragma once

// The client side of the kill -9 torture test (torture_test.cc): writer threads that drive groved
// through grove_client, each over its own slice of the keyspace, recording every write in a
// Ledger and checking every read against it; and the Gate that parks them while the server is
// killed, restarted and verified.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "grove/client/client.h"

#include "reliability/ledger.h"

namespace grove::testing {

// Keys of writer w: 8-byte big-endian integers (w + 1) << 32 | i, i < keys_per_writer.
std::string TortureKey(uint32_t writer, uint64_t i);

// Violations seen anywhere (during the run or by a verification), counted by verdict; the first
// few are kept with their description.
class Violations {
 public:
  void Add(Verdict v, const std::string& what);
  uint64_t count(Verdict v) const;
  uint64_t total() const;
  std::vector<std::string> examples() const;

 private:
  mutable std::mutex mu_;
  std::map<Verdict, uint64_t> counts_;
  std::vector<std::string> examples_;
};

// Parks writers while the server is down. Writers call Park() before every operation.
class Gate {
 public:
  explicit Gate(int writers) : writers_(writers) {}

  // Writer side: returns at once while running; blocks while paused; false once stopped.
  bool Park();
  // Controller side.
  void Pause();
  bool WaitAllParked(std::chrono::seconds timeout);
  void Resume();  // also resets the acknowledgement count
  void Stop();
  void CountAck();
  bool WaitAcks(uint64_t n, std::chrono::seconds timeout);

 private:
  enum class State { kPaused, kRunning, kStopped };
  const int writers_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kPaused;
  int parked_ = 0;
  uint64_t acks_ = 0;
};

struct WriterStats {
  std::atomic<uint64_t> invoked{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> reads_checked{0};
  std::atomic<uint64_t> read_errors{0};
  std::mutex mu;
  std::map<std::string, uint64_t> failure_codes;  // guarded by mu
};

class TortureWriter {
 public:
  TortureWriter(uint32_t id, uint64_t keys, uint64_t seed, Gate* gate, Violations* violations,
                WriterStats* stats);

  // Thread body: operations until the gate stops.
  void Run();
  // REQUIRES: the writer is parked.
  void SetClient(std::unique_ptr<client::Client> c) { client_ = std::move(c); }
  Ledger& ledger() { return ledger_; }
  uint32_t id() const { return id_; }
  uint64_t keys() const { return keys_; }

 private:
  using Writes = std::vector<std::pair<std::string, KeyWrite>>;

  void Step();
  void Finish(const Writes& writes, const grpc::Status& s);
  void CheckRead(const std::string& key, const std::optional<std::string>& value);
  uint64_t RandomIndex();
  size_t RandomValueLength();

  void Put();
  void Delete();
  void Batch();
  void Get();
  void BatchGet();
  void Scan();

  const uint32_t id_;
  const uint64_t keys_;
  Gate* const gate_;
  Violations* const violations_;
  WriterStats* const stats_;
  std::mt19937_64 rng_;
  uint64_t seq_ = 0;
  Ledger ledger_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace grove::testing
