#include "buffer/prefetch_batch.h"

#include "buffer/buffer_pool.h"

namespace grove {

namespace buffer_internal {

SidePool::SidePool(uint32_t pages) : arena_(static_cast<size_t>(pages) * kPageSize) {
  MutexLock lock(&mu_);
  free_.reserve(pages);
  for (uint32_t i = 0; i < pages; ++i) {
    free_.push_back(arena_.data() + static_cast<size_t>(i) * kPageSize);
  }
}

char* SidePool::Take() {
  MutexLock lock(&mu_);
  if (free_.empty()) return nullptr;
  char* buf = free_.back();
  free_.pop_back();
  return buf;
}

void SidePool::Give(const std::vector<char*>& buffers) {
  MutexLock lock(&mu_);
  free_.insert(free_.end(), buffers.begin(), buffers.end());
}

}  // namespace buffer_internal

PrefetchBatch::PrefetchBatch(BufferPool* pool) : pool_(pool), side_(&pool->side_) {}

PrefetchBatch::~PrefetchBatch() {
  if (queue_) queue_->WaitAll();
  uint64_t wasted = 0;
  std::vector<char*> buffers;
  buffers.reserve(entries_.size());
  for (auto& e : entries_) {
    if (!e->used) ++wasted;
    buffers.push_back(e->buf);
  }
  side_->Give(buffers);
  side_->CountWasted(wasted);
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
    if (Has(id)) continue;
    char* buf = side_->Take();
    if (buf == nullptr) break;
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
    side_->CountIssued(issued);
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
  side_->CountWasted(wasted);
  side_->Give(freed);
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
