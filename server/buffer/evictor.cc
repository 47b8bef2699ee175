#include "buffer/evictor.h"

#include <algorithm>

#include <fmt/format.h>

#include "buffer/page_table.h"

namespace grove::buffer_internal {

Evictor::Evictor(FrameArray* frames, std::unique_ptr<Replacer> replacer, uint64_t limit_pages,
                 uint32_t ghost_pages)
    : frames_(frames),
      replacer_(std::move(replacer)),
      limit_(std::clamp<uint64_t>(limit_pages, kMinPages, frames->size())),
      ghost_(ghost_pages == 0 ? 0 : 2ull * ghost_pages),
      ghost_window_(std::min<uint64_t>(ghost_pages, GhostSet::kMaxWindow)) {
  MutexLock lock(&mu_);
  free_.reserve(frames->size());
  // pop_back hands out low frames first.
  for (uint32_t i = frames->size(); i > 0; --i) free_.push_back(i - 1);
}

uint32_t Evictor::TakeFreeLocked() {
  const uint32_t idx = free_.back();
  free_.pop_back();
  (*frames_)[idx].pins.fetch_add(1);  // a reader's tentative pin may be on it (page_table.h)
  return idx;
}

void Evictor::Note(const Victim& v) {
  if (v.evicted == kInvalidPageId) return;
  evictions_.fetch_add(1);
  ghost_.Add(PageTable::Hash(v.evicted));
}

StatusOr<uint32_t> Evictor::Reserve() {
  MutexLock lock(&mu_);
  if (!free_.empty() && InUseLocked() < capacity()) return TakeFreeLocked();
  const Victim v = replacer_->Evict(capacity(), Replacer::Purpose::kMiss);
  if (v.index != kNoFrame) {
    Note(v);
    return v.index;
  }
  if (!free_.empty()) return TakeFreeLocked();  // the limit is soft
  return Exhausted();
}

Status Evictor::Exhausted() const {
  // Rare, so the census that tells an operator (and us) what holds the frames is affordable.
  uint32_t pinned = 0, dirty = 0, flushing = 0, high = 0;
  for (uint32_t i = 0; i < frames_->size(); ++i) {
    const Frame& f = (*frames_)[i];
    if (f.pins.load() > 0) {
      ++pinned;
    } else if (f.dirty.load()) {
      ++dirty;
    } else if (f.flushing.load()) {
      ++flushing;
    } else if (f.high.load(std::memory_order_relaxed)) {
      ++high;
    }
  }
  return Status::ResourceExhausted(fmt::format(
      "buffer pool: all {} frames are pinned or dirty ({} pinned, {} dirty, {} being written, "
      "{} inner); raise cache_bytes or lower checkpoint.dirty_fraction",
      frames_->size(), pinned, dirty, flushing, high));
}

void Evictor::Return(uint32_t index) {
  MutexLock lock(&mu_);
  ReleaseLocked(index);
}

void Evictor::ReleaseLocked(uint32_t index) {
  Frame& f = (*frames_)[index];
  f.state.store(FrameState::kFree);
  f.page_id.store(kInvalidPageId);
  f.pins.fetch_sub(1);
  free_.push_back(index);
  // The next use of the frame faults in a zeroed page.
  frames_->ReleaseMemory(index);
}

uint64_t Evictor::SetCapacity(uint64_t pages) {
  pages = std::clamp<uint64_t>(pages, kMinPages, frames_->size());
  limit_.store(pages, std::memory_order_relaxed);
  MutexLock lock(&mu_);
  while (InUseLocked() > pages) {
    const Victim v = replacer_->Evict(pages, Replacer::Purpose::kShrink);
    if (v.index == kNoFrame) break;
    Note(v);
    ReleaseLocked(v.index);
  }
  return InUseLocked();
}

uint64_t Evictor::in_use() const {
  MutexLock lock(&mu_);
  return InUseLocked();
}

void Evictor::CountGhostHit(PageId id) {
  if (ghost_.Contains(PageTable::Hash(id), ghost_window_)) {
    ghost_hits_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace grove::buffer_internal
