#pragma once

// ClockReplacer: CLOCK (second chance) with a budget for inner nodes. One of the buffer pool's
// parts (see buffer_pool.h and replacer.h).
//
// Each frame has a usage count (Frame::usage) raised by every access up to its retention's cap
// (1 for kNormal, 5 for kHigh) and lowered by each pass of the hand; a resident, evictable frame
// whose count has run down is the victim. A sweep is at most seven turns, enough for any count.
//
// Frames accessed with Retention::kHigh are "high". Up to high_fraction of the pool's limit they
// are protected: the hand passes them. Beyond it they are the first to go, oldest first (a queue in
// the order frames became high), so the fraction is a cap as much as a protection: with a budget of
// 0 an inner node stays only until the next miss. On a miss that finds nothing else to evict (the
// write room and the share together may cover the whole pool), a protected frame goes rather than
// the read or write failing.
//
// Thread safety: Touch, Admit and Forget are safe for concurrent use with everything; Evict calls
// are serialised by the caller. Lock order: the evictor's mutex or a page-table shard mutex, then
// hand_mu_ or high_mu_; a page-table shard mutex is taken under hand_mu_ (TryEvict); nothing is
// taken while holding high_mu_.

#include <atomic>
#include <cstdint>
#include <deque>

#include "buffer/frame.h"
#include "buffer/page_table.h"
#include "buffer/replacer.h"
#include "util/mutex.h"

namespace grove::buffer_internal {

class ClockReplacer final : public Replacer {
 public:
  ClockReplacer(FrameArray* frames, PageTable* table, double high_fraction);

  void Admit(uint32_t index) override;
  void Touch(uint32_t index, Retention retention) override;
  void Forget(uint32_t index) override;
  Victim Evict(uint64_t capacity_pages, Purpose purpose) override;
  uint64_t high_pages() const override { return high_count_.load(std::memory_order_relaxed); }

 private:
  // kHigh frames protected from eviction up to this many: a share of the limit.
  uint64_t HighLimit(uint64_t capacity_pages) const {
    return static_cast<uint64_t>(high_fraction_ * static_cast<double>(capacity_pages));
  }
  uint32_t Advance() GROVE_REQUIRES(hand_mu_);
  // One CLOCK pass of up to seven sweeps. *passed_high is set when a high frame within its share
  // was passed over.
  Victim ClockLocked(uint64_t capacity_pages, bool* passed_high) GROVE_REQUIRES(hand_mu_);
  // Any clean, unpinned high frame, in one more sweep at most.
  Victim ProtectedLocked() GROVE_REQUIRES(hand_mu_);
  // An over-budget high frame, oldest first.
  Victim OverBudgetHigh();
  Victim Evicted(uint32_t index, PageId page);

  FrameArray* const frames_;
  PageTable* const table_;
  const double high_fraction_;
  Mutex hand_mu_;
  uint32_t hand_ GROVE_GUARDED_BY(hand_mu_) = 0;
  std::atomic<uint64_t> high_count_{0};
  // Frames in the order they became high (may hold stale entries: a frame is checked when it is
  // taken).
  Mutex high_mu_;
  std::deque<uint32_t> high_queue_ GROVE_GUARDED_BY(high_mu_);
};

}  // namespace grove::buffer_internal
