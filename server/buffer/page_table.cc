#include "buffer/page_table.h"

#include <algorithm>
#include <bit>

namespace grove::buffer_internal {

PageTable::PageTable(FrameArray* frames)
    : frames_(frames),
      // About one bucket (four ways) per frame: few resident pages lose their hint.
      hint_bits_(std::max<int>(kShardBits, std::bit_width(frames->size() - 1))),
      hints_(new HintBucket[size_t{1} << hint_bits_]) {
  for (size_t b = 0; b < (size_t{1} << hint_bits_); ++b) {
    for (auto& w : hints_[b].frame) w.store(kNoFrame, std::memory_order_relaxed);
  }
}

Frame* PageTable::PinHinted(PageId id) {
  HintBucket& bucket = BucketOf(id);
  for (auto& way : bucket.frame) {
    const uint32_t index = way.load(std::memory_order_acquire);
    if (index == kNoFrame) continue;
    Frame* f = &(*frames_)[index];
    if (f->page_id.load() != id || f->state.load() != FrameState::kResident) continue;
    f->pins.fetch_add(1);
    // Pinned before looking again: an evictor that claimed the frame first marked it free first.
    if (f->state.load() == FrameState::kResident && f->page_id.load() == id) return f;
    f->pins.fetch_sub(1);
    return nullptr;
  }
  return nullptr;
}

void PageTable::HintLocked(PageId id, uint32_t index) {
  HintBucket& bucket = BucketOf(id);
  const uint64_t b = &bucket - hints_.get();
  int victim = static_cast<int>(id % kHintWays);
  for (int w = 0; w < kHintWays; ++w) {
    const uint32_t held = bucket.frame[w].load(std::memory_order_relaxed);
    if (held == index) return;
    // A way is free when empty or when its frame no longer holds a page of this bucket.
    bool live = false;
    if (held != kNoFrame) {
      const Frame& f = (*frames_)[held];
      const FrameState st = f.state.load();
      live = (st == FrameState::kResident || st == FrameState::kLoading) &&
             (Hash(f.page_id.load()) >> (64 - hint_bits_)) == b;
    }
    if (!live) victim = w;
  }
  bucket.frame[victim].store(index, std::memory_order_release);
}

Frame* PageTable::PinIfPresent(PageId id) {
  if (Frame* f = PinHinted(id)) return f;
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  auto it = shard.map.find(id);
  if (it == shard.map.end()) return nullptr;
  Frame* f = &(*frames_)[it->second];
  f->pins.fetch_add(1, std::memory_order_acq_rel);
  return f;
}

bool PageTable::Contains(PageId id) {
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  return shard.map.count(id) > 0;
}

bool PageTable::Install(PageId id, uint32_t index, FrameState state) {
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  if (shard.map.count(id)) return false;
  Frame& f = (*frames_)[index];
  f.page_id.store(id);
  f.state.store(state);
  shard.map.emplace(id, index);
  HintLocked(id, index);
  if (state == FrameState::kResident) resident_.fetch_add(1);
  return true;
}

void PageTable::Publish(Frame* frame) {
  resident_.fetch_add(1);
  frame->state.store(FrameState::kResident);
}

bool PageTable::Invalidate(PageId id, Frame* frame) {
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  auto it = shard.map.find(id);
  if (it != shard.map.end() && &(*frames_)[it->second] == frame) shard.map.erase(it);
  const bool was_resident = frame->state.load() == FrameState::kResident;
  if (was_resident) resident_.fetch_sub(1);
  frame->state.store(FrameState::kInvalid);
  return was_resident;
}

PageId PageTable::TryEvict(uint32_t index) {
  Frame& f = (*frames_)[index];
  if (f.state.load() != FrameState::kResident) return kInvalidPageId;
  const PageId pid = f.page_id.load();
  Shard& shard = ShardOf(pid);
  MutexLock lock(&shard.mu);
  if (!f.Evictable() || f.page_id.load() != pid) return kInvalidPageId;
  // Readers without the lock (PinHinted) pin, then check the state: mark the frame free, then
  // claim it only if nobody holds a pin (see the header).
  f.state.store(FrameState::kFree);
  uint32_t unpinned = 0;
  if (!f.pins.compare_exchange_strong(unpinned, 1)) {
    f.state.store(FrameState::kResident);
    return kInvalidPageId;
  }
  shard.map.erase(pid);
  resident_.fetch_sub(1);
  return pid;
}

bool PageTable::TryReclaim(uint32_t index) {
  Frame& f = (*frames_)[index];
  if (f.state.load() != FrameState::kInvalid) return false;
  // Out of the map: once unpinned nobody can reach it again.
  uint32_t expected = 0;
  if (!f.pins.compare_exchange_strong(expected, 1)) return false;
  f.state.store(FrameState::kFree);
  f.flushing.store(false);
  return true;
}

}  // namespace grove::buffer_internal
