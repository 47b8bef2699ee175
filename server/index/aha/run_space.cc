#include "index/aha/run_space.h"

#include <fmt/format.h>

#include "util/coding.h"

namespace grove::aha {

StatusOr<PageId> RunSpace::Allocate(uint32_t pages) {
  MutexLock lock(&mu_);
  // Written straight to disk: only pages no durable checkpoint can name (extent_allocator.h).
  GROVE_ASSIGN_OR_RETURN(const PageId first, allocator_->AllocateUnreferenced(pages));
  in_flight_[first] = pages;
  return first;
}

void RunSpace::Abandon(PageId first, uint32_t pages) {
  MutexLock lock(&mu_);
  in_flight_.erase(first);
  for (uint32_t i = 0; i < pages; ++i) pool_->Discard(first + i);
  allocator_->FreeUnreferenced(first, pages);  // never installed: no checkpoint names it
}

void RunSpace::Installed(PageId first) {
  MutexLock lock(&mu_);
  in_flight_.erase(first);
}

void RunSpace::Retire(std::shared_ptr<const Run> run) {
  const PageId first = run->meta().first;
  const uint32_t pages = run->meta().pages;
  Retire(std::shared_ptr<const void>(std::move(run)), first, pages);
}

void RunSpace::Retire(std::shared_ptr<const void> ref, PageId first, uint32_t pages) {
  MutexLock lock(&mu_);
  pending_.push_back(Extent{std::move(ref), first, pages});
}

void RunSpace::PrepareCheckpoint(uint64_t epoch) {
  MutexLock lock(&mu_);
  auto& list = by_epoch_[epoch];
  for (auto& r : pending_) list.push_back(std::move(r));
  pending_.clear();
}

void RunSpace::OnCheckpointDurable(uint64_t epoch) {
  MutexLock lock(&mu_);
  for (auto it = by_epoch_.begin(); it != by_epoch_.end() && it->first <= epoch;) {
    for (auto& r : it->second) held_.push_back(std::move(r));
    it = by_epoch_.erase(it);
  }
  FreeUnreferencedLocked(&held_);
}

void RunSpace::OnCheckpointAbandoned(uint64_t epoch) {
  MutexLock lock(&mu_);
  auto it = by_epoch_.find(epoch);
  if (it != by_epoch_.end()) {
    for (auto& r : it->second) pending_.push_back(std::move(r));
    by_epoch_.erase(it);
  }
  FreeUnreferencedLocked(&held_);
}

void RunSpace::FreeUnreferencedLocked(std::vector<Extent>* list) {
  std::vector<Extent> keep;
  for (auto& x : *list) {
    if (x.ref.use_count() > 1) {
      keep.push_back(std::move(x));
      continue;
    }
    for (uint32_t i = 0; i < x.pages; ++i) pool_->Discard(x.first + i);
    // Retired before a checkpoint that is durable now: no durable checkpoint names it.
    allocator_->FreeUnreferenced(x.first, x.pages);
  }
  *list = std::move(keep);
}

void RunSpace::Serialize(std::string* out) const {
  const auto extents = RetiredExtents();
  PutVarint64(out, extents.size());
  for (const auto& [first, pages] : extents) {
    PutVarint64(out, first);
    PutVarint32(out, pages);
  }
}

Status RunSpace::FreeRetiredAtOpen(Slice* in, ExtentAllocator* allocator) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > (1ull << 32))
    return Status::DataLoss("aha retired runs: truncated");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t first;
    uint32_t pages;
    if (!GetVarint64(in, &first) || !GetVarint32(in, &pages) || pages == 0 ||
        pages > ExtentAllocator::kMaxExtentPages || first < ExtentAllocator::kFirstDataPage ||
        first + pages > allocator->high_water_pages()) {
      return Status::DataLoss(fmt::format("aha retired run {}: malformed", i));
    }
    for (uint32_t p = 0; p < pages; ++p) {
      if (allocator->IsFree(first + p)) {
        return Status::DataLoss(fmt::format("aha retired run at page {}: already free", first));
      }
    }
    allocator->Free(first, pages);
  }
  return Status::Ok();
}

std::vector<std::pair<PageId, uint32_t>> RunSpace::RetiredExtents() const {
  MutexLock lock(&mu_);
  std::vector<std::pair<PageId, uint32_t>> out;
  auto add = [&](const std::vector<Extent>& list) {
    for (const auto& x : list) out.emplace_back(x.first, x.pages);
  };
  add(pending_);
  for (const auto& [e, list] : by_epoch_) add(list);
  add(held_);
  for (const auto& [first, pages] : in_flight_) out.emplace_back(first, pages);
  return out;
}

uint64_t RunSpace::retired_runs() const { return RetiredExtents().size(); }

}  // namespace grove::aha
