#include "buffer/checkpoint_snapshot.h"

#include <algorithm>
#include <cstring>

#include "page/page.h"

namespace grove::buffer_internal {

std::vector<PageId> CheckpointSnapshot::Capture(uint32_t epoch) {
  std::vector<std::pair<PageId, uint32_t>> dirty;
  for (uint32_t i = 0; i < frames_->size(); ++i) {
    Frame& f = (*frames_)[i];
    if (f.state.load() == FrameState::kResident && f.dirty.load()) {
      dirty.push_back({f.page_id.load(), i});
    }
  }
  std::sort(dirty.begin(), dirty.end());
  std::vector<PageId> ids;
  ids.reserve(dirty.size());
  MutexLock lock(&mu_);
  slots_.clear();
  slots_.resize(dirty.size());
  epoch_ = epoch;
  for (size_t n = 0; n < dirty.size(); ++n) {
    const auto [pid, idx] = dirty[n];
    slots_[n].frame = idx;
    slots_[n].id = pid;
    Frame& f = (*frames_)[idx];
    f.latch.LockShared();
    flushing_count_.fetch_add(1);
    f.flushing.store(true);
    ClearDirty(&f);
    // Released: a writer that finds the slot sees it filled in.
    f.snap_slot.store(static_cast<int32_t>(n), std::memory_order_release);
    f.latch.UnlockShared();
    ids.push_back(pid);
  }
  return ids;
}

void CheckpointSnapshot::CopyOut(Frame* f) {
  const int32_t n = f->snap_slot.load(std::memory_order_acquire);
  if (n < 0) return;  // the common case
  Slot& slot = slots_[static_cast<size_t>(n)];
  char* copy = nullptr;
  if (StatusOr<uint32_t> spare = copy_frames_.take(); spare.ok()) {
    slot.copy_frame = *spare;
    copy = (*frames_)[*spare].data;
    copies_in_pool_.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Every frame is pinned, dirty or being written: the copy cannot come out of the budget.
    slot.on_heap = std::make_unique<char[]>(kPageSize);
    copy = slot.on_heap.get();
    flushing_count_.fetch_sub(1);  // the captured frame is dirty again or freed; no frame holds
    copies_on_heap_.fetch_add(1, std::memory_order_relaxed);
  }
  std::memcpy(copy, f->data, kPageSize);
  slot.copy = copy;
  // Whichever frame now holds the copy, the captured frame counts as dirty or is gone: with a
  // spare frame, the copy takes its place among the flushing frames and the count stays.
  f->snap_slot.store(-1, std::memory_order_release);
}

void CheckpointSnapshot::CopyImages(size_t first, size_t count, char* out) {
  for (size_t i = 0; i < count; ++i) {
    const Slot& slot = slots_[first + i];
    Frame& f = (*frames_)[slot.frame];
    char* dst = out + i * kPageSize;
    // Shared: a writer copying this slot out holds the latch exclusively, so the image is whole
    // either way, in the frame (not copied out yet) or in its copy.
    f.latch.LockShared();
    std::memcpy(dst, slot.copy != nullptr ? slot.copy : f.data, kPageSize);
    f.latch.UnlockShared();
    page::Seal(dst, epoch_);
  }
}

void CheckpointSnapshot::End(bool success) {
  MutexLock lock(&mu_);
  for (size_t n = 0; n < slots_.size(); ++n) {
    Slot& slot = slots_[n];
    Frame& f = (*frames_)[slot.frame];
    // Closes the slot: no writer copies it out after this (a frame reused for another page since
    // holds -1 already).
    f.latch.LockShared();
    if (f.snap_slot.load() == static_cast<int32_t>(n)) f.snap_slot.store(-1);
    f.latch.UnlockShared();
    if (slot.copy_frame != kNoFrame) copy_frames_.give_back(slot.copy_frame);
    if (!success && f.page_id.load() == slot.id && f.state.load() == FrameState::kResident) {
      MarkDirty(&f);
    }
    f.flushing.store(false);
  }
  flushing_count_.store(0);
  slots_.clear();
  slots_.shrink_to_fit();
}

}  // namespace grove::buffer_internal
