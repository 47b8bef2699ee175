#pragma once

// GhostSet: remembers what a cache evicted lately, by hash alone, so that a miss can tell whether
// a cache larger by `window` entries would have hit (the "ghost" lists of ARC, Megiddo and Modha,
// FAST 2003, kept as counts only). Used to weigh two caches that share one memory budget.
//
// Layout: a power-of-two array of 64-bit slots, indexed by the hash's low bits. A slot holds
//
//   63                         24 23                0
//   +-----------------------------+------------------+
//   | tag: hash bits 63..24       | sequence (mod 2^24)
//   +-----------------------------+------------------+
//
// where the sequence numbers Add calls. Contains(hash, window) is true when the slot holds the
// hash's tag and was written within the last `window` Adds. It is an estimate, which is all a
// weighing needs: a later Add to the same slot overwrites an earlier one (a missed ghost hit),
// two hashes may share a tag (a false one, 1 in 2^40), and a sequence number wraps after 2^24
// Adds (an entry that old is reported only if its slot was never reused).
//
// Thread safety: Add and Contains are safe for concurrent use (relaxed atomics; a racing Add may
// be lost, which only makes the estimate a little lower).

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

namespace grove {

class GhostSet {
 public:
  static constexpr uint64_t kMaxWindow = (uint64_t{1} << 24) - 1;

  // `slots` is rounded up to a power of two; 0: a set that remembers nothing.
  explicit GhostSet(uint64_t slots)
      : mask_(slots == 0 ? 0 : std::bit_ceil(slots) - 1),
        slots_(slots == 0 ? nullptr : new std::atomic<uint64_t>[mask_ + 1]()) {}

  void Add(uint64_t hash) {
    if (!slots_) return;
    const uint64_t seq = seq_.fetch_add(1, std::memory_order_relaxed) & kMaxWindow;
    slots_[hash & mask_].store((hash & ~kMaxWindow) | seq, std::memory_order_relaxed);
  }

  bool Contains(uint64_t hash, uint64_t window) const {
    if (!slots_ || window == 0) return false;
    const uint64_t v = slots_[hash & mask_].load(std::memory_order_relaxed);
    if (v == 0 || (v & ~kMaxWindow) != (hash & ~kMaxWindow)) return false;
    const uint64_t now = seq_.load(std::memory_order_relaxed);
    const uint64_t age = (now - 1 - (v & kMaxWindow)) & kMaxWindow;
    return age < window;
  }

  uint64_t slots() const { return slots_ ? mask_ + 1 : 0; }

 private:
  const uint64_t mask_;
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace grove
