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
  int32_t n = f->snap_slot.load(std::memory_order_acquire);
  if (n < 0) return;  // the common case
  MutexLock lock(&StripeOf(n));
  // End may have closed the slot since (then the frame is the checkpoint's no longer).
  n = f->snap_slot.load(std::memory_order_acquire);
  if (n < 0) return;
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
    const size_t n = first + i;
    const Slot& slot = slots_[n];
    const Frame& f = (*frames_)[slot.frame];
    char* dst = out + i * kPageSize;
    // The slot's stripe, not the frame's latch: a writer may hold the latch exclusively while it
    // waits for a frame that only this checkpoint's end frees. Until a CopyOut (which takes the
    // stripe before the writer changes a byte) the frame holds the image; after it, the copy.
    {
      MutexLock lock(&StripeOf(static_cast<int32_t>(n)));
      std::memcpy(dst, slot.copy != nullptr ? slot.copy : f.data, kPageSize);
    }
    page::Seal(dst, epoch_);
  }
}

void CheckpointSnapshot::End(bool success) {
  MutexLock lock(&mu_);
  for (size_t n = 0; n < slots_.size(); ++n) {
    Slot& slot = slots_[n];
    Frame& f = (*frames_)[slot.frame];
    {
      // Closes the slot: no writer copies it out after this. A slot copied out is dirty again
      // or freed; one still open makes its page dirty again if the frame still holds it.
      MutexLock stripe(&StripeOf(static_cast<int32_t>(n)));
      if (f.snap_slot.load() == static_cast<int32_t>(n)) {
        f.snap_slot.store(-1, std::memory_order_release);
        if (!success && f.page_id.load() == slot.id && f.state.load() == FrameState::kResident) {
          MarkDirty(&f);
        }
      }
    }
    if (slot.copy_frame != kNoFrame) copy_frames_.give_back(slot.copy_frame);
    f.flushing.store(false);
  }
  flushing_count_.store(0);
  slots_.clear();
  slots_.shrink_to_fit();
}

}  // namespace grove::buffer_internal
