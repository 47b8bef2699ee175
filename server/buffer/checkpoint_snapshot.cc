#include "buffer/checkpoint_snapshot.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "page/page.h"

namespace grove::buffer_internal {

StatusOr<std::vector<PageId>> CheckpointSnapshot::Capture(uint32_t epoch, AlignedBuffer* arena) {
  std::vector<std::pair<PageId, uint32_t>> dirty;
  for (uint32_t i = 0; i < frames_->size(); ++i) {
    Frame& f = (*frames_)[i];
    if (f.state.load() == FrameState::kResident && f.dirty.load()) {
      dirty.push_back({f.page_id.load(), i});
    }
  }
  std::sort(dirty.begin(), dirty.end());
  // Not cleared: writers are paused, and every slot is a whole page copied in before the arena
  // is read (CopyOut, Complete). Clearing half a gigabyte here stalled every writer.
  const size_t bytes = std::max<size_t>(1, dirty.size()) * kPageSize;
  *arena = AlignedBuffer::Uninitialized(bytes);
  if (arena->size() != bytes) {
    return Status::ResourceExhausted("checkpoint: no memory for a snapshot of " +
                                     std::to_string(dirty.size()) + " pages");
  }
  std::vector<PageId> ids;
  ids.reserve(dirty.size());
  MutexLock lock(&mu_);
  flushing_.clear();
  arena_.store(arena->data());
  epoch_.store(epoch);
  for (size_t n = 0; n < dirty.size(); ++n) {
    const auto [pid, idx] = dirty[n];
    Frame& f = (*frames_)[idx];
    f.latch.LockShared();
    flushing_count_.fetch_add(1);  // before the flag: a Recount never finds it uncounted
    f.flushing.store(true);
    ClearDirty(&f);
    f.snap_slot.store(static_cast<int32_t>(n));
    f.latch.UnlockShared();
    ids.push_back(pid);
    flushing_.push_back({idx, pid});
  }
  return ids;
}

void CheckpointSnapshot::Recount(Frame* frame) {
  MutexLock lock(&recount_mu_);
  if (frame->flushing.load() && !frame->recounted) {
    frame->recounted = true;
    flushing_count_.fetch_sub(1);
  }
}

void CheckpointSnapshot::CopyOut(Frame* f) {
  // Copiers exclude each other through the latch (a writer holds it exclusively, Complete
  // shared), so reading the slot and clearing it need not be one step.
  const int32_t slot = f->snap_slot.load(std::memory_order_acquire);
  if (slot < 0) return;  // the common case
  char* copy = arena_.load() + static_cast<size_t>(slot) * kPageSize;
  std::memcpy(copy, f->data, kPageSize);
  page::Seal(copy, epoch_.load());
  // Cleared only once the copy is whole: Complete passes a frame whose slot reads -1 without
  // taking its latch, and the checkpoint then writes the arena.
  f->snap_slot.store(-1, std::memory_order_release);
}

void CheckpointSnapshot::Complete() {
  MutexLock lock(&mu_);
  for (const auto& [idx, pid] : flushing_) {
    Frame& f = (*frames_)[idx];
    if (f.snap_slot.load() < 0) continue;
    // Shared: a writer copying this frame out holds it exclusively, so after this no copy into
    // the arena is under way.
    f.latch.LockShared();
    CopyOut(&f);
    f.latch.UnlockShared();
  }
  arena_.store(nullptr);
}

void CheckpointSnapshot::End(bool success) {
  MutexLock lock(&mu_);
  for (const auto& [idx, pid] : flushing_) {
    Frame& f = (*frames_)[idx];
    if (f.snap_slot.load() >= 0) {  // abandoned before Complete: no copy is needed now
      f.latch.LockShared();
      f.snap_slot.store(-1);
      f.latch.UnlockShared();
    }
    if (!success && f.page_id.load() == pid && f.state.load() == FrameState::kResident) {
      MarkDirty(&f);
    }
  }
  {
    MutexLock recount(&recount_mu_);
    for (const auto& [idx, pid] : flushing_) {
      Frame& f = (*frames_)[idx];
      f.flushing.store(false);
      f.recounted = false;
    }
    flushing_count_.store(0);
  }
  flushing_.clear();
  arena_.store(nullptr);
}

}  // namespace grove::buffer_internal
