#include "page/extent_allocator.h"

#include <bit>

#include <fmt/format.h>

#include "util/coding.h"

namespace grove {
namespace {

int OrderFor(uint32_t n) { return std::bit_width(n - 1); }  // ceil(log2(n)), 0 for n == 1

// The largest order whose aligned block starts at `start` and fits in `n` pages.
int LargestFittingOrder(PageId start, uint64_t n) {
  int order = 0;
  while (order + 1 < ExtentAllocator::kOrders && (start & ((2ull << order) - 1)) == 0 &&
         (2ull << order) <= n) {
    ++order;
  }
  return order;
}

}  // namespace

StatusOr<PageId> ExtentAllocator::Allocate(uint32_t n) {
  MutexLock lock(&mu_);
  return AllocateLocked(n, false);
}

StatusOr<PageId> ExtentAllocator::AllocateUnreferenced(uint32_t n) {
  MutexLock lock(&mu_);
  return AllocateLocked(n, true);
}

StatusOr<PageId> ExtentAllocator::AllocateLocked(uint32_t n, bool unreferenced) {
  if (n == 0 || n > kMaxExtentPages) {
    return Status::InvalidArgument(
        fmt::format("extent of {} pages: must be 1..{}", n, kMaxExtentPages));
  }
  // Candidates looked at per order before growing the file instead, for unreferenced extents.
  constexpr int kMaxProbes = 1024;
  const int want = OrderFor(n);
  for (;;) {
    for (int have = want; have < kOrders; ++have) {
      int probes = 0;
      for (PageId start : free_[have]) {
        if (unreferenced && RecentlyFreedLocked(start, n)) {
          if (++probes == kMaxProbes) break;
          continue;
        }
        return TakeBlockLocked(start, have, n);
      }
    }
    // New pages were never written, so no checkpoint names them: take the new chunk's block at
    // once (a scan could stop before it). Chunk 0 lacks a 256-page block, so this may run twice.
    const PageId base = chunks_ * kChunkPages;
    AddChunkLocked();
    if (unreferenced && base != 0 && free_[kOrders - 1].count(base) > 0) {
      return TakeBlockLocked(base, kOrders - 1, n);
    }
  }
}

PageId ExtentAllocator::TakeBlockLocked(PageId start, int have, uint32_t n) {
  const int want = OrderFor(n);
  free_[have].erase(start);
  // Split down to the wanted order, returning the upper halves.
  while (have > want) {
    --have;
    free_[have].insert(start + (1ull << have));
  }
  free_pages_ -= 1ull << want;
  // Give back the unused tail of the block.
  const uint64_t block = 1ull << want;
  if (n < block) FreeRangeLocked(start + n, block - n);
  return start;
}

bool ExtentAllocator::RecentlyFreedLocked(PageId first, uint64_t n) const {
  auto it = recently_freed_.lower_bound(first);
  return it != recently_freed_.end() && it->first < first + n;
}

void ExtentAllocator::Free(PageId first, uint32_t n) {
  MutexLock lock(&mu_);
  for (PageId p = first; p < first + n; ++p) recently_freed_[p] = kUntagged;
  FreeRangeLocked(first, n);
}

void ExtentAllocator::FreeUnreferenced(PageId first, uint32_t n) {
  MutexLock lock(&mu_);
  FreeRangeLocked(first, n);
}

void ExtentAllocator::NoteCheckpoint(uint64_t epoch) {
  MutexLock lock(&mu_);
  for (auto& [page, tag] : recently_freed_) {
    if (tag == kUntagged) tag = epoch;
  }
}

void ExtentAllocator::NoteDurable(uint64_t epoch) {
  MutexLock lock(&mu_);
  std::erase_if(recently_freed_, [&](const auto& e) { return e.second <= epoch; });
}

uint64_t ExtentAllocator::recently_freed_pages() const {
  MutexLock lock(&mu_);
  uint64_t n = 0;
  for (const auto& [page, tag] : recently_freed_) {
    for (int order = 0; order < kOrders; ++order) {
      if (free_[order].count(page & ~((1ull << order) - 1))) {
        ++n;
        break;
      }
    }
  }
  return n;
}

void ExtentAllocator::FreeRangeLocked(PageId first, uint64_t n) {
  while (n > 0) {
    const int order = LargestFittingOrder(first, n);
    FreeBlockLocked(first, order);
    first += 1ull << order;
    n -= 1ull << order;
  }
}

void ExtentAllocator::FreeBlockLocked(PageId start, int order) {
  free_pages_ += 1ull << order;
  while (order + 1 < kOrders) {
    const PageId buddy = start ^ (1ull << order);
    auto it = free_[order].find(buddy);
    if (it == free_[order].end()) break;
    free_[order].erase(it);
    start &= ~(1ull << order);
    ++order;
  }
  free_[order].insert(start);
}

void ExtentAllocator::AddChunkLocked() {
  const PageId base = chunks_ * kChunkPages;
  ++chunks_;
  if (base == 0) {
    FreeRangeLocked(kFirstDataPage, kChunkPages - kFirstDataPage);
  } else {
    FreeBlockLocked(base, kOrders - 1);
  }
}

uint64_t ExtentAllocator::high_water_pages() const {
  MutexLock lock(&mu_);
  return chunks_ * kChunkPages;
}

uint64_t ExtentAllocator::free_pages() const {
  MutexLock lock(&mu_);
  return free_pages_;
}

uint64_t ExtentAllocator::MemoryBytes() const {
  constexpr auto kNode = [](uint64_t value_bytes) { return (32 + value_bytes + 8 + 15) / 16 * 16; };
  MutexLock lock(&mu_);
  uint64_t blocks = 0;
  for (const auto& order : free_) blocks += order.size();
  return blocks * kNode(sizeof(PageId)) +
         recently_freed_.size() * kNode(sizeof(PageId) + sizeof(uint64_t));
}

bool ExtentAllocator::IsFree(PageId id) const {
  MutexLock lock(&mu_);
  for (int order = 0; order < kOrders; ++order) {
    const PageId start = id & ~((1ull << order) - 1);
    if (free_[order].count(start)) return true;
  }
  return false;
}

void ExtentAllocator::Serialize(std::string* out) const {
  MutexLock lock(&mu_);
  PutVarint64(out, chunks_);
  for (int order = 0; order < kOrders; ++order) {
    PutVarint64(out, free_[order].size());
    PageId prev = 0;
    for (PageId start : free_[order]) {  // ascending: delta-encode
      PutVarint64(out, start - prev);
      prev = start;
    }
  }
}

Status ExtentAllocator::Deserialize(Slice in) {
  uint64_t chunks;
  std::array<std::set<PageId>, kOrders> sets;
  uint64_t free_pages = 0;
  if (!GetVarint64(&in, &chunks)) return Status::DataLoss("allocator state: truncated");
  for (int order = 0; order < kOrders; ++order) {
    uint64_t count;
    if (!GetVarint64(&in, &count) || count > chunks * kChunkPages) {
      return Status::DataLoss("allocator state: bad block count");
    }
    PageId prev = 0;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t delta;
      if (!GetVarint64(&in, &delta)) return Status::DataLoss("allocator state: truncated");
      const PageId start = prev + delta;
      if (i > 0 && delta == 0) return Status::DataLoss("allocator state: duplicate block");
      sets[order].insert(start);
      free_pages += 1ull << order;
      prev = start;
    }
  }
  if (!in.empty()) return Status::DataLoss("allocator state: trailing bytes");
  MutexLock lock(&mu_);
  free_ = std::move(sets);
  recently_freed_.clear();  // the state restored is the durable one
  chunks_ = chunks;
  free_pages_ = free_pages;
  return Status::Ok();
}

std::string ExtentAllocator::CheckInvariants() const {
  MutexLock lock(&mu_);
  const uint64_t end = chunks_ * kChunkPages;
  std::set<std::pair<PageId, PageId>> ranges;
  uint64_t total = 0;
  for (int order = 0; order < kOrders; ++order) {
    const uint64_t size = 1ull << order;
    for (PageId start : free_[order]) {
      if (start % size != 0)
        return fmt::format("free block {} of {} pages misaligned", start, size);
      if (start < kFirstDataPage || start + size > end) {
        return fmt::format("free block {} of {} pages outside the file", start, size);
      }
      if (order + 1 < kOrders && free_[order].count(start ^ size)) {
        return fmt::format("free buddies {} and {} not merged", start, start ^ size);
      }
      ranges.insert({start, start + size});
      total += size;
    }
  }
  PageId prev_end = 0;
  for (const auto& [b, e] : ranges) {
    if (b < prev_end) return fmt::format("free blocks overlap at page {}", b);
    prev_end = e;
  }
  if (total != free_pages_) return "free page count out of sync";
  return "";
}

}  // namespace grove
