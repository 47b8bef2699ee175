#include "buffer/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <sys/mman.h>

namespace grove {

using buffer_internal::Frame;
using buffer_internal::FrameState;

// --- Guards ---------------------------------------------------------------------------------

PageReadGuard& PageReadGuard::operator=(PageReadGuard&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    frame_ = std::exchange(other.frame_, nullptr);
    id_ = std::exchange(other.id_, kInvalidPageId);
  }
  return *this;
}

void PageReadGuard::Release() {
  if (frame_ == nullptr) return;
  frame_->latch.UnlockShared();
  pool_->Unpin(frame_);
  frame_ = nullptr;
}

PageWriteGuard& PageWriteGuard::operator=(PageWriteGuard&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    frame_ = std::exchange(other.frame_, nullptr);
    id_ = std::exchange(other.id_, kInvalidPageId);
  }
  return *this;
}

char* PageWriteGuard::mutable_data() {
  pool_->CopyOutCaptured(frame_);
  pool_->MarkDirty(frame_);
  return frame_->data;
}

void PageWriteGuard::Release() {
  if (frame_ == nullptr) return;
  frame_->latch.Unlock();
  pool_->Unpin(frame_);
  frame_ = nullptr;
}

void PageWriteGuard::Discard() {
  if (frame_ == nullptr) return;
  pool_->CopyOutCaptured(frame_);  // the checkpoint still writes the page as it was captured
  Frame* f = std::exchange(frame_, nullptr);
  {
    BufferPool::Shard& shard = pool_->ShardOf(id_);
    MutexLock lock(&shard.mu);
    auto it = shard.table.find(id_);
    if (it != shard.table.end() && &pool_->frames_[it->second] == f) shard.table.erase(it);
    if (f->state.load() == FrameState::kResident) pool_->resident_.fetch_sub(1);
    f->state.store(FrameState::kInvalid);
    pool_->ForgetHigh(f);
    if (f->dirty.exchange(false)) pool_->dirty_count_.fetch_sub(1);
  }
  f->latch.Unlock();
  pool_->Unpin(f);
}

// --- Pool -----------------------------------------------------------------------------------

BufferPool::BufferPool(const BufferPoolOptions& options, IoBackend* io, File* data_file,
                       const EpochTable* epochs)
    : io_(io),
      file_(data_file),
      epochs_(epochs),
      num_frames_(static_cast<uint32_t>(std::max<uint64_t>(
          16, std::max(options.capacity_bytes, options.max_capacity_bytes) / kPageSize))),
      high_fraction_(options.high_retention_fraction),
      limit_(std::clamp<uint64_t>(options.capacity_bytes / kPageSize, 16, num_frames_)),
      ghost_(options.ghost_pages == 0 ? 0 : 2ull * options.ghost_pages),
      ghost_window_(std::min<uint64_t>(options.ghost_pages, GhostSet::kMaxWindow)),
      frames_(new Frame[num_frames_]),
      // About one bucket (four ways) per frame: few resident pages lose their hint.
      hint_bits_(std::max<int>(kShardBits, std::bit_width(num_frames_ - 1))),
      hints_(new HintBucket[size_t{1} << hint_bits_]),
      side_arena_(static_cast<size_t>(options.side_pool_pages) * kPageSize) {
  const size_t bytes = static_cast<size_t>(num_frames_) * kPageSize;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Without the arena the pool cannot work at all; fall back to the heap so that the failure (if
  // the heap fails too) is an allocation failure at startup rather than a crash later.
  if (mem == MAP_FAILED) {
    mem = std::aligned_alloc(kPageSize, bytes);
    mmapped_ = false;
  }
  arena_ = static_cast<char*>(mem);
  for (size_t b = 0; b < (size_t{1} << hint_bits_); ++b) {
    for (auto& w : hints_[b].frame) w.store(kNoFrame, std::memory_order_relaxed);
  }
  MutexLock lock(&evict_mu_);
  free_frames_.reserve(num_frames_);
  for (uint32_t i = 0; i < num_frames_; ++i) {
    frames_[i].data = arena_ + static_cast<size_t>(i) * kPageSize;
    free_frames_.push_back(num_frames_ - 1 - i);  // pop_back hands out low frames first
  }
  MutexLock side_lock(&side_mu_);
  for (uint32_t i = 0; i < options.side_pool_pages; ++i) {
    side_free_.push_back(side_arena_.data() + static_cast<size_t>(i) * kPageSize);
  }
}

BufferPool::~BufferPool() {
  const size_t bytes = static_cast<size_t>(num_frames_) * kPageSize;
  if (mmapped_) {
    munmap(arena_, bytes);
  } else {
    std::free(arena_);
  }
}

Frame* BufferPool::PinHinted(PageId id) {
  HintBucket& bucket = BucketOf(id);
  for (auto& way : bucket.frame) {
    const uint32_t index = way.load(std::memory_order_acquire);
    if (index == kNoFrame) continue;
    Frame* f = &frames_[index];
    if (f->page_id.load() != id || f->state.load() != FrameState::kResident) continue;
    f->pins.fetch_add(1);
    // Pinned before looking again: an evictor that claimed the frame first marked it free first.
    if (f->state.load() == FrameState::kResident && f->page_id.load() == id) return f;
    Unpin(f);
    return nullptr;
  }
  return nullptr;
}

void BufferPool::HintLocked(PageId id, uint32_t index) {
  HintBucket& bucket = BucketOf(id);
  const uint64_t b = &bucket - hints_.get();
  int victim = static_cast<int>(id % kHintWays);
  for (int w = 0; w < kHintWays; ++w) {
    const uint32_t held = bucket.frame[w].load(std::memory_order_relaxed);
    if (held == index) return;
    // A way is free when empty or when its frame no longer holds a page of this bucket.
    bool live = false;
    if (held != kNoFrame) {
      const Frame& f = frames_[held];
      const FrameState st = f.state.load();
      live = (st == FrameState::kResident || st == FrameState::kLoading) &&
             (Hash(f.page_id.load()) >> (64 - hint_bits_)) == b;
    }
    if (!live) victim = w;
  }
  bucket.frame[victim].store(index, std::memory_order_release);
}

Frame* BufferPool::PinIfPresent(PageId id, Retention retention, bool touch) {
  if (Frame* f = PinHinted(id)) {
    if (touch) Touch(f, retention);
    return f;
  }
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  auto it = shard.table.find(id);
  if (it == shard.table.end()) return nullptr;
  Frame* f = &frames_[it->second];
  f->pins.fetch_add(1, std::memory_order_acq_rel);
  if (touch) Touch(f, retention);
  return f;
}

void BufferPool::Touch(Frame* frame, Retention retention) {
  const auto cap = static_cast<uint8_t>(retention);
  const uint8_t usage = frame->usage.load(std::memory_order_relaxed);
  if (usage < cap) frame->usage.store(usage + 1, std::memory_order_relaxed);
  if (retention == Retention::kHigh && !frame->high.load(std::memory_order_relaxed) &&
      !frame->high.exchange(true)) {
    high_count_.fetch_add(1, std::memory_order_relaxed);
    const auto index = static_cast<uint32_t>(frame - frames_.get());
    MutexLock lock(&high_mu_);
    if (high_queue_.size() >= 2ull * num_frames_) {
      // Mostly stale entries: keep the frames that are still high, in order, once each.
      std::vector<bool> seen(num_frames_);
      std::deque<uint32_t> live;
      for (uint32_t i : high_queue_) {
        if (!seen[i] && frames_[i].high.load(std::memory_order_relaxed)) live.push_back(i);
        seen[i] = true;
      }
      high_queue_.swap(live);
    }
    high_queue_.push_back(index);
  }
}

void BufferPool::ForgetHigh(Frame* frame) {
  if (frame->high.exchange(false)) high_count_.fetch_sub(1, std::memory_order_relaxed);
}

void BufferPool::Unpin(Frame* frame) { frame->pins.fetch_sub(1, std::memory_order_acq_rel); }

bool BufferPool::IsResident(PageId id) {
  Shard& shard = ShardOf(id);
  MutexLock lock(&shard.mu);
  return shard.table.count(id) > 0;
}

Status BufferPool::ReadCopy(PageId id, char* out, IoCause cause) {
  if (Frame* f = PinIfPresent(id, Retention::kNormal, /*touch=*/false)) {
    f->latch.LockShared();
    const bool ok = f->state.load() == FrameState::kResident && f->page_id.load() == id;
    if (ok) std::memcpy(out, f->data, kPageSize);
    f->latch.UnlockShared();
    Unpin(f);
    if (ok) return Status::Ok();
  }
  size_t bytes = 0;
  GROVE_RETURN_IF_ERROR(file_->Read(id * kPageSize, kPageSize, out, &bytes));
  if (bytes != kPageSize) {
    return Status::DataLoss(fmt::format("page {}: short read ({} bytes)", id, bytes));
  }
  reads_[static_cast<int>(cause)].fetch_add(1, std::memory_order_relaxed);
  Status s = VerifyImage(out, id);
  if (s.IsDataLoss()) checksum_failures_.fetch_add(1);
  return s;
}

void BufferPool::MarkDirty(Frame* frame) {
  if (!frame->dirty.exchange(true, std::memory_order_acq_rel)) dirty_count_.fetch_add(1);
}

StatusOr<uint32_t> BufferPool::ReserveFrame() {
  // Frames a checkpoint is writing cannot be evicted until it ends (a failed checkpoint dirties
  // them again), but they are clean: when they are all that stands in the way, wait for the
  // checkpoint (bounded) rather than fail the read or write that needs a frame.
  StatusOr<uint32_t> idx = ReserveFrameOnce();
  for (int i = 0; i < 1000 && !idx.ok() && idx.status().code() == StatusCode::kResourceExhausted &&
                  flushing_count_.load() > 0;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    idx = ReserveFrameOnce();
  }
  return idx;
}

uint32_t BufferPool::ClockVictimLocked(bool* passed_high) {
  // CLOCK: a resident, clean, unpinned frame whose usage count has run down is the victim.
  // Enough sweeps for any usage count. High-retention frames are protected within their share.
  for (uint64_t step = 0; step < 7ull * num_frames_; ++step) {
    const uint32_t idx = clock_hand_;
    clock_hand_ = clock_hand_ + 1 == num_frames_ ? 0 : clock_hand_ + 1;
    Frame& f = frames_[idx];
    const FrameState state = f.state.load();
    if (state == FrameState::kInvalid) {
      // Out of the table: once unpinned nobody can reach it again.
      uint32_t expected = 0;
      if (f.pins.compare_exchange_strong(expected, 1)) {
        f.state.store(FrameState::kFree);
        f.flushing.store(false);
        return idx;
      }
      continue;
    }
    if (state != FrameState::kResident) continue;
    if (f.pins.load() > 0 || f.dirty.load() || f.flushing.load()) continue;
    // High-retention frames are protected within their share and the first to go beyond it, so
    // the share is a budget (the papers' "cache holding x% of the inner nodes").
    const bool high = f.high.load(std::memory_order_relaxed);
    const bool over_budget = high_count_.load(std::memory_order_relaxed) > HighLimit();
    if (high && !over_budget) {
      *passed_high = true;
      continue;
    }
    const uint8_t usage = f.usage.load(std::memory_order_relaxed);
    if (usage > 0 && !(high && over_budget)) {
      f.usage.store(usage - 1, std::memory_order_relaxed);
      continue;
    }
    if (TryEvictLocked(idx)) return idx;
  }
  return kNoFrame;
}

StatusOr<uint32_t> BufferPool::ReserveFrameOnce() {
  MutexLock lock(&evict_mu_);
  // A free frame while under the limit; at the limit a victim's frame is reused, so a pool whose
  // limit was lowered shrinks as misses evict what SetCapacityPages could not.
  auto take_free = [&]() -> uint32_t {
    evict_mu_.AssertHeld();  // called only under the lock above
    const uint32_t idx = free_frames_.back();
    free_frames_.pop_back();
    frames_[idx].pins.fetch_add(1);  // a reader's tentative pin may be on it (see the header)
    return idx;
  };
  if (!free_frames_.empty() && InUseLocked() < capacity_pages()) return take_free();
  if (high_count_.load(std::memory_order_relaxed) > HighLimit()) {
    const uint32_t idx = EvictOverBudgetHighLocked();
    if (idx != kNoFrame) return idx;
  }
  // A high-retention frame within its share is passed over, but noted: when every other frame
  // is pinned or dirty (the write room and the share together may cover the whole pool), it
  // goes rather than the read or write failing.
  bool have_high = false;
  if (const uint32_t idx = ClockVictimLocked(&have_high); idx != kNoFrame) return idx;
  if (have_high) {
    // The first such frame seen may be pinned by now (hot inner pages are: the root is on every
    // path), so any clean, unpinned one of them will do; one more sweep at most.
    for (uint32_t step = 0; step < num_frames_; ++step) {
      const uint32_t idx = clock_hand_;
      clock_hand_ = clock_hand_ + 1 == num_frames_ ? 0 : clock_hand_ + 1;
      Frame& f = frames_[idx];
      if (f.state.load() == FrameState::kResident && f.pins.load() == 0 && !f.dirty.load() &&
          !f.flushing.load() && TryEvictLocked(idx)) {
        return idx;
      }
    }
  }
  // The limit is soft: a frame above it rather than a failed read or write.
  if (!free_frames_.empty()) return take_free();
  // Rare, so the census that tells an operator (and us) what holds the frames is affordable.
  uint32_t pinned = 0, dirty = 0, flushing = 0, high = 0, other = 0;
  for (uint32_t i = 0; i < num_frames_; ++i) {
    const Frame& f = frames_[i];
    if (f.pins.load() > 0) {
      ++pinned;
    } else if (f.dirty.load()) {
      ++dirty;
    } else if (f.flushing.load()) {
      ++flushing;
    } else if (f.high.load(std::memory_order_relaxed)) {
      ++high;
    } else {
      ++other;
    }
  }
  return Status::ResourceExhausted(fmt::format(
      "buffer pool: all {} frames are pinned or dirty ({} pinned, {} dirty, {} being written, "
      "{} inner); raise cache_bytes or lower checkpoint.dirty_fraction",
      num_frames_, pinned, dirty, flushing, high));
}

bool BufferPool::TryEvictLocked(uint32_t idx) {
  Frame& f = frames_[idx];
  if (f.state.load() != FrameState::kResident) return false;
  const PageId pid = f.page_id.load();
  Shard& shard = ShardOf(pid);
  MutexLock shard_lock(&shard.mu);
  if (f.pins.load() != 0 || f.dirty.load() || f.flushing.load() ||
      f.state.load() != FrameState::kResident || f.page_id.load() != pid) {
    return false;
  }
  // Readers without the lock (PinHinted) pin, then check the state: mark the frame free, then
  // claim it only if nobody holds a pin (see the header).
  f.state.store(FrameState::kFree);
  uint32_t unpinned = 0;
  if (!f.pins.compare_exchange_strong(unpinned, 1)) {
    f.state.store(FrameState::kResident);
    return false;
  }
  shard.table.erase(pid);
  ForgetHigh(&f);
  resident_.fetch_sub(1);
  evictions_.fetch_add(1);
  ghost_.Add(Hash(pid));
  return true;
}

void BufferPool::ReleaseFrameLocked(uint32_t index) {
  Frame& f = frames_[index];
  f.state.store(FrameState::kFree);
  f.page_id.store(kInvalidPageId);
  f.pins.fetch_sub(1);
  free_frames_.push_back(index);
  // The memory goes back to the system; the next use of the frame faults in a zeroed page.
  if (mmapped_) madvise(f.data, kPageSize, MADV_DONTNEED);
}

void BufferPool::CountGhostHit(PageId id) {
  if (ghost_.Contains(Hash(id), ghost_window_)) ghost_hits_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t BufferPool::frames_in_use() const {
  MutexLock lock(&evict_mu_);
  return InUseLocked();
}

uint64_t BufferPool::SetCapacityPages(uint64_t pages) {
  pages = std::clamp<uint64_t>(pages, 16, num_frames_);
  limit_.store(pages, std::memory_order_relaxed);
  MutexLock lock(&evict_mu_);
  // Victims as a miss's eviction picks them, until the pool is within its limit or none is left.
  bool passed_high = false;
  while (InUseLocked() > pages) {
    const uint32_t idx = ClockVictimLocked(&passed_high);
    if (idx == kNoFrame) break;
    ReleaseFrameLocked(idx);
  }
  return InUseLocked();
}

uint32_t BufferPool::EvictOverBudgetHighLocked() {
  // Bounded: frames that cannot go now (pinned, dirty) are put back at the end.
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint32_t idx;
    {
      MutexLock lock(&high_mu_);
      if (high_queue_.empty()) return kNoFrame;
      idx = high_queue_.front();
      high_queue_.pop_front();
    }
    Frame& f = frames_[idx];
    if (!f.high.load(std::memory_order_relaxed)) continue;  // stale entry
    if (TryEvictLocked(idx)) return idx;
    MutexLock lock(&high_mu_);
    high_queue_.push_back(idx);
  }
  return kNoFrame;
}

void BufferPool::ReturnFrame(uint32_t index) {
  MutexLock lock(&evict_mu_);
  ReleaseFrameLocked(index);
}

bool BufferPool::InstallLocked(Shard& shard, PageId id, uint32_t index, FrameState state) {
  if (shard.table.count(id)) return false;
  Frame& f = frames_[index];
  f.page_id.store(id);
  f.state.store(state);
  f.usage.store(1);
  ForgetHigh(&f);
  f.dirty.store(false);
  f.flushing.store(false);
  shard.table.emplace(id, index);
  HintLocked(id, index);
  return true;
}

Status BufferPool::VerifyImage(const char* image, PageId id) {
  GROVE_RETURN_IF_ERROR(page::Verify(image, id));
  const uint32_t expected = epochs_->Get(id);
  if (page::Epoch(image) != expected) {
    return Status::DataLoss(
        fmt::format("page {}: stale page (epoch {} on disk, {} expected): a write to it was lost",
                    id, page::Epoch(image), expected));
  }
  return Status::Ok();
}

void BufferPool::InvalidateAndUnpin(Frame* frame, PageId id) {
  {
    Shard& shard = ShardOf(id);
    MutexLock lock(&shard.mu);
    auto it = shard.table.find(id);
    if (it != shard.table.end() && &frames_[it->second] == frame) shard.table.erase(it);
    frame->state.store(FrameState::kInvalid);
    ForgetHigh(frame);
    if (frame->dirty.exchange(false)) dirty_count_.fetch_sub(1);
  }
  Unpin(frame);
}

Status BufferPool::FinishLoad(Frame* frame, PageId id, const IoOp& op, IoCause cause) {
  return FinishLoad(frame, id, op.status, op.bytes, cause);
}

Status BufferPool::FinishLoad(Frame* frame, PageId id, Status io_status, uint32_t bytes,
                              IoCause cause) {
  Status s = std::move(io_status);
  if (s.ok() && bytes != kPageSize) {
    s = Status::DataLoss(
        fmt::format("page {}: short read ({} bytes): beyond the end of the data file", id, bytes));
  }
  if (s.ok()) s = VerifyImage(frame->data, id);
  if (s.ok()) {
    reads_[static_cast<int>(cause)].fetch_add(1, std::memory_order_relaxed);
    resident_.fetch_add(1);
    frame->state.store(FrameState::kResident);
    return s;
  }
  if (s.IsDataLoss()) checksum_failures_.fetch_add(1);
  frame->latch.Unlock();
  InvalidateAndUnpin(frame, id);
  return s;
}

Status BufferPool::LoadPinned(Frame** out, PageId id, IoCause cause, Retention retention,
                              PrefetchBatch* prefetched, bool for_write) {
  for (;;) {
    if (Frame* f = PinIfPresent(id, retention)) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      *out = f;
      return Status::Ok();
    }
    GROVE_ASSIGN_OR_RETURN(const uint32_t idx, ReserveFrame());
    Frame* f = &frames_[idx];
    f->latch.Lock();  // uncontended: the frame is in no table yet
    bool installed;
    {
      Shard& shard = ShardOf(id);
      MutexLock lock(&shard.mu);
      installed = InstallLocked(shard, id, idx, FrameState::kLoading);
    }
    if (!installed) {  // another thread is loading it; use theirs
      f->latch.Unlock();
      ReturnFrame(idx);
      continue;
    }
    Touch(f, retention);
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (!for_write) CountGhostHit(id);

    // A confirmed prefetch: the traversal asks for exactly the page that was read ahead.
    if (prefetched != nullptr) {
      if (PrefetchBatch::Entry* e = prefetched->Take(id)) {
        if (e->op.status.ok() && e->op.bytes == kPageSize && VerifyImage(e->buf, id).ok()) {
          std::memcpy(f->data, e->buf, kPageSize);
          e->used = true;
          prefetch_used_.fetch_add(1, std::memory_order_relaxed);
          resident_.fetch_add(1);
          f->state.store(FrameState::kResident);
          f->latch.Unlock();
          *out = f;
          return Status::Ok();
        }
        // A failed or outdated speculative image (the page may have been rewritten since the
        // read was issued) is never used: fall through to a normal read.
      }
    }
    // One page: a plain read on the calling thread. Leasing an IO queue (a mutex, an allocation)
    // buys nothing for a single op; batches (LoadMany, PrefetchBatch) use queues.
    size_t bytes = 0;
    Status read = file_->Read(id * kPageSize, kPageSize, f->data, &bytes);
    GROVE_RETURN_IF_ERROR(FinishLoad(f, id, std::move(read), static_cast<uint32_t>(bytes), cause));
    f->latch.Unlock();
    *out = f;
    return Status::Ok();
  }
}

StatusOr<PageReadGuard> BufferPool::FetchRead(PageId id, IoCause cause, Retention retention,
                                              PrefetchBatch* prefetched) {
  for (;;) {
    Frame* f;
    GROVE_RETURN_IF_ERROR(LoadPinned(&f, id, cause, retention, prefetched));
    f->latch.LockShared();
    if (f->state.load() == FrameState::kResident && f->page_id.load() == id) {
      return PageReadGuard(this, f, id);
    }
    f->latch.UnlockShared();  // its load failed or it was discarded: look again
    Unpin(f);
  }
}

StatusOr<PageWriteGuard> BufferPool::FetchWrite(PageId id, IoCause cause, Retention retention) {
  for (;;) {
    Frame* f;
    GROVE_RETURN_IF_ERROR(LoadPinned(&f, id, cause, retention, nullptr, /*for_write=*/true));
    f->latch.Lock();
    if (f->state.load() == FrameState::kResident && f->page_id.load() == id) {
      return PageWriteGuard(this, f, id);
    }
    f->latch.Unlock();
    Unpin(f);
  }
}

StatusOr<PageReadGuard> BufferPool::TryFetchRead(PageId id, IoCause cause) {
  Frame* f;
  GROVE_RETURN_IF_ERROR(LoadPinned(&f, id, cause, Retention::kNormal, nullptr));
  if (!f->latch.TryLockShared()) {
    Unpin(f);
    return PageReadGuard();
  }
  if (f->state.load() == FrameState::kResident && f->page_id.load() == id) {
    return PageReadGuard(this, f, id);
  }
  f->latch.UnlockShared();
  Unpin(f);
  return PageReadGuard();
}

StatusOr<PageWriteGuard> BufferPool::NewPage(PageId id, PageType type, Retention retention) {
  GROVE_ASSIGN_OR_RETURN(const uint32_t idx, ReserveFrame());
  Frame* f = &frames_[idx];
  f->latch.Lock();
  for (;;) {
    bool installed;
    {
      Shard& shard = ShardOf(id);
      MutexLock lock(&shard.mu);
      installed = InstallLocked(shard, id, idx, FrameState::kResident);
    }
    if (installed) break;
    // A copy of the page is still resident although the allocator just handed its id out again:
    // a reader faulted it in after it was freed (a blob read racing an overwrite). Whatever it
    // holds is dead; drop it.
    Discard(id);
  }
  Touch(f, retention);
  resident_.fetch_add(1);
  page::Init(f->data, type, id);
  MarkDirty(f);
  return PageWriteGuard(this, f, id);
}

void BufferPool::Discard(PageId id) {
  Frame* f = PinIfPresent(id, Retention::kNormal);
  if (f == nullptr) return;
  f->latch.Lock();
  if (f->page_id.load() == id && f->state.load() == FrameState::kResident) {
    PageWriteGuard guard(this, f, id);
    guard.Discard();
    return;
  }
  f->latch.Unlock();
  Unpin(f);
}

Status BufferPool::LoadMany(const std::vector<PageId>& ids, IoCause cause) {
  struct Load {
    Frame* frame;
    PageId id;
  };
  std::vector<Load> loads;
  loads.reserve(ids.size());
  Status first_error;
  for (PageId id : ids) {
    if (Frame* f = PinIfPresent(id, Retention::kNormal)) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      Unpin(f);
      continue;
    }
    auto idx = ReserveFrame();
    if (!idx.ok()) {
      first_error = idx.status();
      break;
    }
    Frame* f = &frames_[*idx];
    f->latch.Lock();
    bool installed;
    {
      Shard& shard = ShardOf(id);
      MutexLock lock(&shard.mu);
      installed = InstallLocked(shard, id, *idx, FrameState::kLoading);
    }
    if (!installed) {
      f->latch.Unlock();
      ReturnFrame(*idx);
      continue;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (cause != IoCause::kPrefetch) CountGhostHit(id);
    loads.push_back({f, id});
  }
  // Pages that follow each other in `ids` and on disk are read with one IO into a staging buffer
  // (a segment of a page group, a huge leaf); a lone page goes straight into its frame.
  struct Run {
    size_t first, count;  // loads[first, first + count)
    AlignedBuffer staging;
    IoOp op;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < loads.size();) {
    size_t n = 1;
    while (i + n < loads.size() && loads[i + n].id == loads[i].id + n && n < kMaxRunPages) {
      ++n;
    }
    runs.push_back({i, n, AlignedBuffer(n > 1 ? n * kPageSize : 0), IoOp()});
    i += n;
  }
  if (!runs.empty()) {
    auto queue = io_->AcquireQueue();
    for (Run& r : runs) {
      char* dst = r.count > 1 ? r.staging.data() : loads[r.first].frame->data;
      r.op = IoOp::Read(file_, loads[r.first].id * kPageSize, dst,
                        static_cast<uint32_t>(r.count * kPageSize));
      queue->Push(&r.op);
    }
    queue->Submit();
    queue->WaitAll();
  }
  for (const Run& r : runs) {
    for (size_t j = 0; j < r.count; ++j) {
      const Load& l = loads[r.first + j];
      const uint64_t offset = j * kPageSize;
      const uint32_t bytes =
          r.op.bytes > offset
              ? static_cast<uint32_t>(std::min<uint64_t>(kPageSize, r.op.bytes - offset))
              : 0;
      if (r.count > 1 && bytes > 0) std::memcpy(l.frame->data, r.staging.data() + offset, bytes);
      Status s = FinishLoad(l.frame, l.id, r.op.status, bytes, cause);
      if (s.ok()) {
        l.frame->latch.Unlock();
        Unpin(l.frame);
      } else if (first_error.ok()) {
        first_error = s;
      }
    }
  }
  return first_error;
}

StatusOr<std::vector<PageId>> BufferPool::SnapshotDirty(uint32_t epoch, AlignedBuffer* arena) {
  std::vector<std::pair<PageId, uint32_t>> dirty;
  for (uint32_t i = 0; i < num_frames_; ++i) {
    Frame& f = frames_[i];
    if (f.state.load() == FrameState::kResident && f.dirty.load()) {
      dirty.push_back({f.page_id.load(), i});
    }
  }
  std::sort(dirty.begin(), dirty.end());
  *arena = AlignedBuffer(std::max<size_t>(1, dirty.size()) * kPageSize);
  std::vector<PageId> ids;
  ids.reserve(dirty.size());
  MutexLock lock(&checkpoint_mu_);
  flushing_.clear();
  snap_arena_.store(arena->data());
  snap_epoch_.store(epoch);
  for (size_t n = 0; n < dirty.size(); ++n) {
    const auto [pid, idx] = dirty[n];
    Frame& f = frames_[idx];
    f.latch.LockShared();
    f.flushing.store(true);
    if (f.dirty.exchange(false)) dirty_count_.fetch_sub(1);
    f.snap_slot.store(static_cast<int32_t>(n));
    f.latch.UnlockShared();
    ids.push_back(pid);
    flushing_.push_back({idx, pid});
  }
  flushing_count_.store(ids.size());
  return ids;
}

void BufferPool::CopyOutCaptured(Frame* f) {
  // Copiers exclude each other through the latch (a writer holds it exclusively, CompleteSnapshot
  // shared), so reading the slot and clearing it need not be one step.
  const int32_t slot = f->snap_slot.load(std::memory_order_acquire);
  if (slot < 0) return;  // the common case
  char* copy = snap_arena_.load() + static_cast<size_t>(slot) * kPageSize;
  std::memcpy(copy, f->data, kPageSize);
  page::Seal(copy, snap_epoch_.load());
  // Cleared only once the copy is whole: CompleteSnapshot passes a frame whose slot reads -1
  // without taking its latch, and the checkpoint then writes the arena.
  f->snap_slot.store(-1, std::memory_order_release);
}

void BufferPool::CompleteSnapshot() {
  MutexLock lock(&checkpoint_mu_);
  for (const auto& [idx, pid] : flushing_) {
    Frame& f = frames_[idx];
    if (f.snap_slot.load() < 0) continue;
    // Shared: a writer copying this frame out holds it exclusively, so after this no copy into
    // the arena is under way.
    f.latch.LockShared();
    CopyOutCaptured(&f);
    f.latch.UnlockShared();
  }
  snap_arena_.store(nullptr);
}

void BufferPool::EndCheckpoint(bool success) {
  MutexLock lock(&checkpoint_mu_);
  for (const auto& [idx, pid] : flushing_) {
    Frame& f = frames_[idx];
    if (f.snap_slot.load() >= 0) {  // abandoned before CompleteSnapshot: no copy is needed now
      f.latch.LockShared();
      f.snap_slot.store(-1);
      f.latch.UnlockShared();
    }
    if (!success && f.page_id.load() == pid && f.state.load() == FrameState::kResident) {
      MarkDirty(&f);
    }
    f.flushing.store(false);
  }
  flushing_.clear();
  flushing_count_.store(0);
  snap_arena_.store(nullptr);
}

void BufferPool::RecordWrites(IoCause cause, uint64_t pages) {
  writes_[static_cast<int>(cause)].fetch_add(pages, std::memory_order_relaxed);
}

void BufferPool::RecordReads(IoCause cause, uint64_t pages) {
  reads_[static_cast<int>(cause)].fetch_add(pages, std::memory_order_relaxed);
}

BufferPoolStats BufferPool::GetStats() const {
  BufferPoolStats s;
  s.capacity_pages = capacity_pages();
  s.resident_pages = resident_.load();
  s.dirty_pages = dirty_count_.load();
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.evictions = evictions_.load();
  for (int i = 0; i < kNumIoCauses; ++i) {
    s.page_reads[i] = reads_[i].load();
    s.page_writes[i] = writes_[i].load();
  }
  s.prefetch_issued = prefetch_issued_.load();
  s.prefetch_used = prefetch_used_.load();
  s.prefetch_wasted = prefetch_wasted_.load();
  s.checksum_failures = checksum_failures_.load();
  return s;
}

// --- PrefetchBatch --------------------------------------------------------------------------

PrefetchBatch::PrefetchBatch(BufferPool* pool) : pool_(pool) {}

PrefetchBatch::~PrefetchBatch() {
  if (queue_) queue_->WaitAll();
  uint64_t wasted = 0;
  MutexLock lock(&pool_->side_mu_);
  for (auto& e : entries_) {
    if (!e->used) ++wasted;
    pool_->side_free_.push_back(e->buf);
  }
  pool_->prefetch_wasted_.fetch_add(wasted, std::memory_order_relaxed);
}

size_t PrefetchBatch::Issue(const std::vector<PageId>& ids) {
  size_t considered;
  return Issue(ids.data(), ids.size(), &considered);
}

size_t PrefetchBatch::Issue(const PageId* ids, size_t n, size_t* considered) {
  size_t issued = 0;
  *considered = 0;
  for (; *considered < n; ++*considered) {
    const PageId id = ids[*considered];
    if (id == kInvalidPageId || pool_->IsResident(id)) continue;
    bool dup = false;
    for (const auto& e : entries_) dup |= e->id == id;
    if (dup) continue;
    char* buf;
    {
      MutexLock lock(&pool_->side_mu_);
      if (pool_->side_free_.empty()) break;
      buf = pool_->side_free_.back();
      pool_->side_free_.pop_back();
    }
    if (!queue_) queue_ = pool_->io_->AcquireQueue();
    auto e = std::make_unique<Entry>();
    e->id = id;
    e->buf = buf;
    e->op = IoOp::Read(pool_->file_, id * kPageSize, buf, kPageSize);
    queue_->Push(&e->op);
    entries_.push_back(std::move(e));
    ++issued;
  }
  if (issued > 0) {
    queue_->Submit();
    pool_->prefetch_issued_.fetch_add(issued, std::memory_order_relaxed);
    pool_->RecordReads(IoCause::kPrefetch, issued);
  }
  return issued;
}

bool PrefetchBatch::Has(PageId id) const {
  for (const auto& e : entries_) {
    if (e->id == id) return true;
  }
  return false;
}

size_t PrefetchBatch::pending() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e->taken ? 0 : 1;
  return n;
}

void PrefetchBatch::Retain(const std::function<bool(PageId)>& keep) {
  std::vector<char*> freed;
  uint64_t wasted = 0;
  size_t kept = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    std::unique_ptr<Entry>& e = entries_[i];
    if (!e->taken && keep(e->id)) {
      entries_[kept++] = std::move(e);
      continue;
    }
    if (!e->taken) queue_->Wait(&e->op);  // the buffer is the kernel's until the read ends
    if (!e->used) ++wasted;
    freed.push_back(e->buf);
  }
  entries_.resize(kept);
  if (freed.empty()) return;
  pool_->prefetch_wasted_.fetch_add(wasted, std::memory_order_relaxed);
  MutexLock lock(&pool_->side_mu_);
  pool_->side_free_.insert(pool_->side_free_.end(), freed.begin(), freed.end());
}

PrefetchBatch::Entry* PrefetchBatch::Take(PageId id) {
  for (auto& e : entries_) {
    if (e->id == id && !e->taken) {
      queue_->Wait(&e->op);
      e->taken = true;
      return e.get();
    }
  }
  return nullptr;
}

}  // namespace grove
