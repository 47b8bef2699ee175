#pragma once

// A linearizability checker for single-key register histories, after Wing & Gong with Lowe's
// state cache ("WGL", as in Jepsen's Knossos and Porcupine). Each key is checked on its own:
// linearizability is compositional, so a multi-key history is linearizable only if every
// per-key projection is (a batch write or a scan contributes one operation to each key it
// touches).
//
// Operations on a key: write(value), delete (write of "absent"), read (returns a value or
// absent), and compare-and-set (writes `value` if the key holds `expected`; one that failed is
// recorded as the read of what the key held). Each carries the time it was invoked and the time its
// answer arrived. A write whose call failed has an unknown outcome: it may take effect at any point
// after its invocation, or never (Knossos's "info" operations). Failed reads are dropped by the
// caller.
//
// Check() searches for a total order that respects real time (an operation that completed before
// another was invoked comes first) and the register's semantics. Every written value must be
// unique per key, so that a read names the write it saw.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace grove::testing {

struct RegisterOp {
  enum class Kind { kWrite, kRead, kCas };
  Kind kind = Kind::kRead;
  std::optional<std::string> value;     // written or read; nullopt = absent (a delete, a miss)
  int64_t invoke = 0;                   // any monotonic clock, e.g. steady_clock nanoseconds
  int64_t complete = 0;                 // ignored when !known
  bool known = true;                    // false: a write whose outcome is unknown
  int client = 0;                       // for messages only
  std::optional<std::string> expected;  // kCas: what the key must hold (nullopt: absent)
};

struct LinearizabilityResult {
  bool ok = true;
  uint64_t states_explored = 0;
  bool gave_up = false;     // the search hit its budget; no verdict (counts as not ok)
  std::string explanation;  // when !ok: the operation no order could place, and its neighbours
};

// The initial value of the register is `initial` (nullopt: the key is absent).
LinearizabilityResult CheckRegisterHistory(const std::vector<RegisterOp>& ops,
                                           const std::optional<std::string>& initial,
                                           uint64_t max_states = 50'000'000);

}  // namespace grove::testing
