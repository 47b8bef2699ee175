#include "page/epoch_table.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "util/coding.h"

namespace grove {

Status EpochTable::Stage(const std::vector<PageId>& pages, uint32_t epoch,
                         ExtentAllocator* allocator) {
  staged_new_pages_ = 0;
  staged_dirty_.clear();
  staged_old_epochs_.clear();
  staged_epoch_ = epoch;
  // Cover the whole file. Allocating a map page can add a chunk, which may need another map page.
  while (map_pages_.size() * kEntriesPerPage < allocator->high_water_pages() ||
         map_pages_.empty()) {
    auto id = allocator->Allocate(1);
    if (!id.ok()) {
      Unstage(allocator);
      return id.status();
    }
    map_pages_.push_back(*id);
    map_epochs_.push_back(0);
    ++staged_new_pages_;
  }
  // Writers wait while this runs: one mark per map page instead of sorting the pages, so the
  // cost is the dirty pages plus the map pages, not a sort of every dirty page.
  std::vector<bool> dirty(map_pages_.size(), false);
  for (PageId p : pages) {
    const size_t k = p / kEntriesPerPage;
    if (k >= dirty.size()) {
      Unstage(allocator);
      return Status::Internal(fmt::format("epoch table: page {} beyond the file", p));
    }
    dirty[k] = true;
  }
  {
    MutexLock lock(&mu_);
    for (size_t k : pending_) {
      if (k < dirty.size()) dirty[k] = true;
    }
    staging_ = true;
    late_.clear();
  }
  for (size_t k = map_pages_.size() - staged_new_pages_; k < map_pages_.size(); ++k) {
    dirty[k] = true;
  }
  for (size_t k = 0; k < dirty.size(); ++k) {
    if (!dirty[k]) continue;
    staged_old_epochs_.push_back({k, map_epochs_[k]});
    map_epochs_[k] = epoch;
    staged_dirty_.push_back(k);
  }
  return Status::Ok();
}

std::vector<EpochTable::MapPageImage> EpochTable::StagedImages(
    const std::vector<PageId>& pages) const {
  std::vector<PageId> sorted_pages = pages;
  std::sort(sorted_pages.begin(), sorted_pages.end());
  std::vector<MapPageImage> images;
  images.reserve(staged_dirty_.size());
  // The entries change only in Commit and RecordDirect, both under mu_; a direct write recorded
  // since Stage is in late_ and stays pending for the next checkpoint, whichever image has it.
  MutexLock lock(&mu_);
  for (size_t k : staged_dirty_) {
    MapPageImage img{map_pages_[k], AlignedBuffer(kPageSize)};
    char* p = img.image.data();
    page::Init(p, PageType::kEpochMap, map_pages_[k]);
    page::SetAux(p, static_cast<uint32_t>(k));
    auto* slots = reinterpret_cast<uint32_t*>(p + kPageHeaderSize);
    const PageId first = k * kEntriesPerPage;
    for (size_t i = 0; i < kEntriesPerPage && first + i < entries_.size(); ++i) {
      slots[i] = entries_.Get(first + i);
    }
    auto it = std::lower_bound(sorted_pages.begin(), sorted_pages.end(), first);
    for (; it != sorted_pages.end() && *it < first + kEntriesPerPage; ++it) {
      slots[*it - first] = staged_epoch_;
    }
    page::Seal(p, staged_epoch_);
    images.push_back(std::move(img));
  }
  return images;
}

void EpochTable::Commit(const std::vector<PageId>& pages, uint32_t epoch) {
  MutexLock lock(&mu_);
  const size_t covered = map_pages_.size() * kEntriesPerPage;
  entries_.Grow(covered);
  for (PageId p : pages) {
    if (p < entries_.size()) entries_.Set(p, epoch);
  }
  std::vector<size_t> still_pending;
  for (size_t k : pending_) {
    const bool staged =
        std::find(staged_dirty_.begin(), staged_dirty_.end(), k) != staged_dirty_.end();
    const bool late = std::find(late_.begin(), late_.end(), k) != late_.end();
    if (!staged || late) still_pending.push_back(k);
  }
  pending_ = std::move(still_pending);
  staging_ = false;
  late_.clear();
  staged_new_pages_ = 0;
  staged_dirty_.clear();
  staged_old_epochs_.clear();
}

void EpochTable::Abort(ExtentAllocator* allocator) {
  {
    MutexLock lock(&mu_);
    staging_ = false;
    late_.clear();  // still in pending_
  }
  Unstage(allocator);
}

void EpochTable::Unstage(ExtentAllocator* allocator) {
  for (auto it = staged_old_epochs_.rbegin(); it != staged_old_epochs_.rend(); ++it) {
    map_epochs_[it->first] = it->second;
  }
  for (; staged_new_pages_ > 0; --staged_new_pages_) {
    allocator->Free(map_pages_.back(), 1);
    map_pages_.pop_back();
    map_epochs_.pop_back();
  }
  staged_dirty_.clear();
  staged_old_epochs_.clear();
}

void EpochTable::RecordDirect(PageId first, size_t count, uint32_t epoch) {
  MutexLock lock(&mu_);
  entries_.Grow(first + count);
  for (size_t i = 0; i < count; ++i) entries_.Set(first + i, epoch);
  for (size_t k = first / kEntriesPerPage; k <= (first + count - 1) / kEntriesPerPage; ++k) {
    if (std::find(pending_.begin(), pending_.end(), k) == pending_.end()) pending_.push_back(k);
    if (staging_ && std::find(late_.begin(), late_.end(), k) == late_.end()) late_.push_back(k);
  }
}

void EpochTable::Serialize(std::string* out) const {
  PutVarint64(out, map_pages_.size());
  for (size_t k = 0; k < map_pages_.size(); ++k) {
    PutVarint64(out, map_pages_[k]);
    PutVarint32(out, map_epochs_[k]);
  }
}

Status EpochTable::Deserialize(Slice* in) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > (1ull << 40))
    return Status::DataLoss("epoch map list: truncated");
  std::vector<PageId> ids;
  std::vector<uint32_t> epochs;
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t id;
    uint32_t e;
    if (!GetVarint64(in, &id) || !GetVarint32(in, &e)) {
      return Status::DataLoss("epoch map list: truncated");
    }
    ids.push_back(id);
    epochs.push_back(e);
  }
  map_pages_ = std::move(ids);
  map_epochs_ = std::move(epochs);
  MutexLock lock(&mu_);
  entries_.Reset(map_pages_.size() * kEntriesPerPage);
  return Status::Ok();
}

Status EpochTable::LoadMapPage(size_t k, const char* image) {
  if (k >= map_pages_.size()) return Status::Internal("epoch map page index out of range");
  if (page::Type(image) != static_cast<uint16_t>(PageType::kEpochMap) || page::Aux(image) != k) {
    return Status::DataLoss(fmt::format("page {}: expected epoch-map page {}, found type {} aux {}",
                                        map_pages_[k], k, page::Type(image), page::Aux(image)));
  }
  if (page::Epoch(image) != map_epochs_[k]) {
    return Status::DataLoss(
        fmt::format("page {}: stale epoch-map page (epoch {}, manifest says {})", map_pages_[k],
                    page::Epoch(image), map_epochs_[k]));
  }
  const auto* slots = reinterpret_cast<const uint32_t*>(image + kPageHeaderSize);
  MutexLock lock(&mu_);
  for (size_t i = 0; i < kEntriesPerPage; ++i) entries_.Set(k * kEntriesPerPage + i, slots[i]);
  return Status::Ok();
}

}  // namespace grove
