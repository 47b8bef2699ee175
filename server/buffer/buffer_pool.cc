#include "buffer/buffer_pool.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "buffer/clock_replacer.h"

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
  pool_->snapshot_.CopyOut(frame_);
  pool_->snapshot_.MarkDirty(frame_);
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
  pool_->snapshot_.CopyOut(frame_);  // the checkpoint still writes the page as it was captured
  Frame* f = std::exchange(frame_, nullptr);
  pool_->Drop(id_, f);
  f->latch.Unlock();
  pool_->Unpin(f);
}

// --- Pool -----------------------------------------------------------------------------------

namespace {

uint32_t FrameCount(const BufferPoolOptions& options) {
  return static_cast<uint32_t>(std::max<uint64_t>(
      16, std::max(options.capacity_bytes, options.max_capacity_bytes) / kPageSize));
}

}  // namespace

BufferPool::BufferPool(const BufferPoolOptions& options, IoBackend* io, File* data_file,
                       const EpochTable* epochs)
    : io_(io),
      file_(data_file),
      epochs_(epochs),
      frames_(FrameCount(options)),
      table_(&frames_),
      evictor_(&frames_,
               std::make_unique<buffer_internal::ClockReplacer>(&frames_, &table_,
                                                                options.high_retention_fraction),
               options.capacity_bytes / kPageSize, options.ghost_pages),
      // A copy-on-write copy takes a frame the way a miss does, but without waiting: the writer
      // asking holds a latch the checkpoint may need (and the heap takes the copy instead).
      snapshot_(&frames_, buffer_internal::CopyFrames{
                              .take = [this] { return evictor_.Reserve(); },
                              .give_back = [this](uint32_t i) { evictor_.Return(i); }}),
      side_(options.side_pool_pages) {}

Frame* BufferPool::PinIfPresent(PageId id, Retention retention, bool touch) {
  Frame* f = table_.PinIfPresent(id);
  if (f != nullptr && touch) Touch(f, retention);
  return f;
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

StatusOr<uint32_t> BufferPool::ReserveFrame() {
  // Frames a checkpoint is writing cannot be evicted until it ends (a failed checkpoint dirties
  // them again), but they are clean: when they are all that stands in the way, wait for the
  // checkpoint rather than fail the read or write that needs a frame. The checkpoint never waits
  // for a frame latch the caller may hold (checkpoint_snapshot.h), so it ends; the bound is for a
  // device that stops answering.
  StatusOr<uint32_t> idx = evictor_.Reserve();
  const auto give_up = std::chrono::steady_clock::now() + kCheckpointWait;
  while (!idx.ok() && idx.status().code() == StatusCode::kResourceExhausted &&
         snapshot_.flushing_pages() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    idx = evictor_.Reserve();
  }
  return idx;
}

bool BufferPool::Install(PageId id, uint32_t index, FrameState state) {
  Frame& f = frames_[index];
  evictor_.replacer().Admit(index);
  f.dirty.store(false);
  f.flushing.store(false);
  return table_.Install(id, index, state);
}

void BufferPool::Drop(PageId id, Frame* frame) {
  table_.Invalidate(id, frame);
  evictor_.replacer().Forget(frames_.IndexOf(frame));
  snapshot_.ClearDirty(frame);
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
    table_.Publish(frame);
    return s;
  }
  if (s.IsDataLoss()) checksum_failures_.fetch_add(1);
  frame->latch.Unlock();
  Drop(id, frame);
  Unpin(frame);
  return s;
}

bool BufferPool::AdmitPrefetched(Frame* frame, PageId id, PrefetchBatch* prefetched) {
  PrefetchBatch::Entry* e = prefetched->Take(id);
  if (e == nullptr) return false;
  // A failed or outdated speculative image (the page may have been rewritten since the read was
  // issued) is never used.
  if (!e->op.status.ok() || e->op.bytes != kPageSize || !VerifyImage(e->buf, id).ok()) {
    return false;
  }
  std::memcpy(frame->data, e->buf, kPageSize);
  e->used = true;
  side_.CountUsed();
  table_.Publish(frame);
  return true;
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
    f->latch.Lock();                                // uncontended: the frame is in no map yet
    if (!Install(id, idx, FrameState::kLoading)) {  // another thread is loading it; use theirs
      f->latch.Unlock();
      evictor_.Return(idx);
      continue;
    }
    Touch(f, retention);
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (!for_write) evictor_.CountGhostHit(id);
    // Otherwise one page: a plain read on the calling thread. Leasing an IO queue (a mutex, an
    // allocation) buys nothing for a single op; batches (LoadMany, PrefetchBatch) use queues.
    if (prefetched == nullptr || !AdmitPrefetched(f, id, prefetched)) {
      size_t bytes = 0;
      Status read = file_->Read(id * kPageSize, kPageSize, f->data, &bytes);
      GROVE_RETURN_IF_ERROR(
          FinishLoad(f, id, std::move(read), static_cast<uint32_t>(bytes), cause));
    }
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
  // A copy of the page may still be resident although the allocator just handed its id out
  // again: a reader faulted it in after it was freed (a blob read racing an overwrite). Whatever
  // it holds is dead; drop it.
  while (!Install(id, idx, FrameState::kResident)) Discard(id);
  Touch(f, retention);
  page::Init(f->data, type, id);
  snapshot_.MarkDirty(f);
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
    if (!Install(id, *idx, FrameState::kLoading)) {
      f->latch.Unlock();
      evictor_.Return(*idx);
      continue;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (cause != IoCause::kPrefetch) evictor_.CountGhostHit(id);
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

std::vector<PageId> BufferPool::SnapshotDirty(uint32_t epoch) { return snapshot_.Capture(epoch); }

void BufferPool::EndCheckpoint(bool success) { snapshot_.End(success); }

void BufferPool::RecordWrites(IoCause cause, uint64_t pages) {
  writes_[static_cast<int>(cause)].fetch_add(pages, std::memory_order_relaxed);
}

void BufferPool::RecordReads(IoCause cause, uint64_t pages) {
  reads_[static_cast<int>(cause)].fetch_add(pages, std::memory_order_relaxed);
}

BufferPoolStats BufferPool::GetStats() const {
  BufferPoolStats s;
  s.capacity_pages = capacity_pages();
  s.resident_pages = table_.resident();
  s.dirty_pages = snapshot_.dirty_pages();
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.evictions = evictor_.evictions();
  for (int i = 0; i < kNumIoCauses; ++i) {
    s.page_reads[i] = reads_[i].load();
    s.page_writes[i] = writes_[i].load();
  }
  s.prefetch_issued = side_.issued();
  s.prefetch_used = side_.used();
  s.prefetch_wasted = side_.wasted();
  s.checksum_failures = checksum_failures_.load();
  s.checkpoint_copies = snapshot_.copies_in_pool();
  s.checkpoint_heap_copies = snapshot_.copies_on_heap();
  return s;
}

}  // namespace grove
