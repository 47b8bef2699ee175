#include "buffer/clock_replacer.h"

#include <vector>

namespace grove::buffer_internal {

ClockReplacer::ClockReplacer(FrameArray* frames, PageTable* table, double high_fraction)
    : frames_(frames), table_(table), high_fraction_(high_fraction) {}

void ClockReplacer::Admit(uint32_t index) {
  (*frames_)[index].usage.store(1);
  Forget(index);
}

void ClockReplacer::Touch(uint32_t index, Retention retention) {
  Frame& frame = (*frames_)[index];
  const auto cap = static_cast<uint8_t>(retention);
  const uint8_t usage = frame.usage.load(std::memory_order_relaxed);
  if (usage < cap) frame.usage.store(usage + 1, std::memory_order_relaxed);
  if (retention != Retention::kHigh || frame.high.load(std::memory_order_relaxed) ||
      frame.high.exchange(true)) {
    return;
  }
  high_count_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&high_mu_);
  const uint32_t n = frames_->size();
  if (high_queue_.size() >= 2ull * n) {
    // Mostly stale entries: keep the frames that are still high, in order, once each.
    std::vector<bool> seen(n);
    std::deque<uint32_t> live;
    for (uint32_t i : high_queue_) {
      if (!seen[i] && (*frames_)[i].high.load(std::memory_order_relaxed)) live.push_back(i);
      seen[i] = true;
    }
    high_queue_.swap(live);
  }
  high_queue_.push_back(index);
}

void ClockReplacer::Forget(uint32_t index) {
  if ((*frames_)[index].high.exchange(false)) high_count_.fetch_sub(1, std::memory_order_relaxed);
}

Victim ClockReplacer::Evicted(uint32_t index, PageId page) {
  Forget(index);
  return {index, page};
}

uint32_t ClockReplacer::Advance() {
  const uint32_t idx = hand_;
  hand_ = hand_ + 1 == frames_->size() ? 0 : hand_ + 1;
  return idx;
}

Victim ClockReplacer::Evict(uint64_t capacity_pages, Purpose purpose) {
  if (purpose == Purpose::kMiss &&
      high_count_.load(std::memory_order_relaxed) > HighLimit(capacity_pages)) {
    if (Victim v = OverBudgetHigh(); v.index != kNoFrame) return v;
  }
  MutexLock lock(&hand_mu_);
  bool passed_high = false;
  if (Victim v = ClockLocked(capacity_pages, &passed_high); v.index != kNoFrame) return v;
  if (purpose == Purpose::kMiss && passed_high) return ProtectedLocked();
  return {};
}

Victim ClockReplacer::ClockLocked(uint64_t capacity_pages, bool* passed_high) {
  const uint64_t n = frames_->size();
  for (uint64_t step = 0; step < 7 * n; ++step) {
    const uint32_t idx = Advance();
    Frame& f = (*frames_)[idx];
    if (f.state.load() == FrameState::kInvalid) {
      if (table_->TryReclaim(idx)) return Evicted(idx, kInvalidPageId);
      continue;
    }
    if (!f.Evictable()) continue;
    const bool high = f.high.load(std::memory_order_relaxed);
    const bool over_budget =
        high_count_.load(std::memory_order_relaxed) > HighLimit(capacity_pages);
    if (high && !over_budget) {
      *passed_high = true;
      continue;
    }
    const uint8_t usage = f.usage.load(std::memory_order_relaxed);
    if (usage > 0 && !(high && over_budget)) {
      f.usage.store(usage - 1, std::memory_order_relaxed);
      continue;
    }
    if (const PageId pid = table_->TryEvict(idx); pid != kInvalidPageId) return Evicted(idx, pid);
  }
  return {};
}

Victim ClockReplacer::ProtectedLocked() {
  // The first protected frame seen may be pinned by now (hot inner pages are: the root is on
  // every path), so any clean, unpinned one will do.
  for (uint32_t step = 0; step < frames_->size(); ++step) {
    const uint32_t idx = Advance();
    if (!(*frames_)[idx].Evictable()) continue;
    if (const PageId pid = table_->TryEvict(idx); pid != kInvalidPageId) return Evicted(idx, pid);
  }
  return {};
}

Victim ClockReplacer::OverBudgetHigh() {
  // Bounded: frames that cannot go now (pinned, dirty) are put back at the end.
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint32_t idx;
    {
      MutexLock lock(&high_mu_);
      if (high_queue_.empty()) return {};
      idx = high_queue_.front();
      high_queue_.pop_front();
    }
    if (!(*frames_)[idx].high.load(std::memory_order_relaxed)) continue;  // stale entry
    if (const PageId pid = table_->TryEvict(idx); pid != kInvalidPageId) return Evicted(idx, pid);
    MutexLock lock(&high_mu_);
    high_queue_.push_back(idx);
  }
  return {};
}

}  // namespace grove::buffer_internal
