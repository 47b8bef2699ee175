#pragma once

// The client-side ledger of the kill -9 torture test: what one writer did to the keys it owns, and
// therefore what each key may hold after any crash.
//
// Every write is recorded before it is sent (invoked) and again when its answer arrives:
// acknowledged, or failed. A failed call's outcome is unknown (the server may have logged it just
// before it died), so it stays *pending*. For each key the ledger keeps
//   * the baseline: the last acknowledged write, or what the last verification saw, and
//   * the pending writes since then.
// What a key may hold is the baseline or any pending write (RocksDB's db_stress keeps "pending"
// expected values for the same reason). Anything else is a verdict:
//   * lost ack: an older version, or absence, where an acknowledged write must be visible;
//   * phantom:  a version this writer never invoked for this key (or another writer's);
//   * corrupt:  bytes that are not an intact tagged value for this key (tagged_value.h).
//
// After a restart, every server that received a pending write is dead, so nothing pending can still
// land: Resolve() then turns the observed state into the new baseline and drops the pending set,
// counting whether each uncertain key turned out old or new. Batches whose outcome was unknown are
// checked for atomicity at that point (all their puts visible, or none).
//
// Thread safety: none. One writer thread owns a ledger; the verifier reads it only while the
// writer is parked (the hand-over goes through a mutex, which orders the accesses).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grove::testing {

// One write to one key: the operation's sequence number, and whether it leaves the key present.
struct KeyWrite {
  uint64_t seq = 0;  // 0: the initial state (absent)
  bool present = false;
};

enum class Verdict { kOk, kLostAck, kPhantom, kCorrupt };
const char* VerdictName(Verdict v);

struct ResolveCounts {
  uint64_t keys_uncertain = 0;     // keys with pending writes at resolution
  uint64_t resolved_new = 0;       // ... that showed a pending write (it had been applied)
  uint64_t resolved_old = 0;       // ... that showed the baseline (no pending write applied)
  uint64_t batches_uncertain = 0;  // batches whose call failed
  uint64_t batches_applied = 0;    // ... whose puts are all visible
  uint64_t batches_dropped = 0;    // ... none of whose puts is visible
  uint64_t batches_torn = 0;       // ... partly visible: atomicity broken (must stay 0)
};

class Ledger {
 public:
  explicit Ledger(uint32_t writer) : writer_(writer) {}

  uint32_t writer() const { return writer_; }

  // A multi-key operation: every key of a batch carries the batch's seq.
  void Invoke(const std::vector<std::pair<std::string, KeyWrite>>& writes);
  void Acknowledge(const std::vector<std::pair<std::string, KeyWrite>>& writes);
  // The call failed: each write may or may not have been applied.
  void Fail(const std::vector<std::pair<std::string, KeyWrite>>& writes);

  // Checks what a read returned for `key` (nullopt: absent) against what it may hold now. On a
  // verdict other than kOk, *why says what was expected and what was seen.
  Verdict Check(const std::string& key, const std::optional<std::string>& observed,
                std::string* why) const;

  // REQUIRES: no server that received a pending write is still running, and `observed` holds a
  // checked (kOk) observation of every key this ledger knows. Makes them the baseline.
  ResolveCounts Resolve(const std::map<std::string, std::optional<std::string>>& observed);

  // Every key this writer has ever written (the keys a verification must read).
  std::vector<std::string> Keys() const;
  bool Knows(const std::string& key) const { return keys_.count(key) > 0; }

 private:
  struct KeyState {
    KeyWrite baseline;
    std::vector<KeyWrite> pending;
    std::vector<uint64_t> invoked;  // ascending
  };
  struct PendingBatch {
    uint64_t seq;
    std::vector<std::string> put_keys;
  };

  const uint32_t writer_;
  std::map<std::string, KeyState> keys_;
  std::vector<PendingBatch> pending_batches_;
};

}  // namespace grove::testing
