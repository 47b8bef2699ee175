#include "index/aulid/node_space.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "util/coding.h"

namespace grove::aulid {

StatusOr<PageId> NodeSpace::AllocateMixed(uint64_t pages) {
  if (pages <= ExtentAllocator::kMaxExtentPages) {
    GROVE_ASSIGN_OR_RETURN(const PageId first, allocator_->Allocate(static_cast<uint32_t>(pages)));
    mixed_pages_ += pages;
    return first;
  }
  std::vector<PageId> ext;
  for (uint64_t done = 0; done < pages; done += ExtentAllocator::kMaxExtentPages) {
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>(pages - done, ExtentAllocator::kMaxExtentPages));
    StatusOr<PageId> e = allocator_->Allocate(n);
    if (!e.ok()) {
      for (size_t i = 0; i < ext.size(); ++i) {
        allocator_->Free(ext[i], ExtentAllocator::kMaxExtentPages);
      }
      return e.status();
    }
    ext.push_back(*e);
  }
  const PageId first = ext[0];
  extents_[first] = std::move(ext);
  mixed_pages_ += pages;
  return first;
}

void NodeSpace::FreeMixed(PageId first, uint64_t pages) {
  ForEachExtent(first, pages, [&](PageId e, uint32_t n) { allocator_->Free(e, n); });
  extents_.erase(first);
  mixed_pages_ -= pages;
}

PageId NodeSpace::PageOf(PageId first, uint64_t index) const {
  if (index < ExtentAllocator::kMaxExtentPages) return first + index;
  const std::vector<PageId>& ext = extents_.at(first);
  return ext[index / ExtentAllocator::kMaxExtentPages] + index % ExtentAllocator::kMaxExtentPages;
}

StatusOr<NodeSpace::Object> NodeSpace::AllocatePacked(int cls, PageId* open) {
  Object o;
  const bool reuse = open != nullptr ? partial_[cls].contains(*open) : !partial_[cls].empty();
  if (!reuse) {
    GROVE_ASSIGN_OR_RETURN(o.slab, allocator_->Allocate(1));
    o.fresh = true;
    slabs_[o.slab] = SlabState{cls, 0};
    partial_[cls].insert(o.slab);
    if (open != nullptr) *open = o.slab;
  } else {
    o.slab = open != nullptr ? *open : *partial_[cls].begin();
  }
  SlabState& s = slabs_[o.slab];
  o.object = static_cast<uint32_t>(std::countr_one(s.used));
  s.used |= uint64_t{1} << o.object;
  if (std::popcount(s.used) == static_cast<int>(PackedPerSlab(cls))) partial_[cls].erase(o.slab);
  return o;
}

bool NodeSpace::FreePacked(int cls, PageId slab, uint32_t object) {
  SlabState& s = slabs_.at(slab);
  s.used &= ~(uint64_t{1} << object);
  if (s.used == 0) {
    partial_[cls].erase(slab);
    slabs_.erase(slab);
    allocator_->Free(slab, 1);
    return true;
  }
  partial_[cls].insert(slab);
  return false;
}

void NodeSpace::Serialize(std::string* out) const {
  PutVarint64(out, mixed_pages_);
  PutVarint64(out, branch_pages_);
  PutVarint64(out, extents_.size());
  for (const auto& [first, ext] : extents_) {
    PutVarint64(out, first);
    PutVarint64(out, ext.size());
    for (PageId e : ext) PutVarint64(out, e);
  }
  PutVarint64(out, slabs_.size());
  for (const auto& [page, s] : slabs_) {
    PutVarint64(out, page);
    PutVarint32(out, static_cast<uint32_t>(s.cls));
    PutVarint64(out, s.used);
  }
}

Status NodeSpace::Deserialize(Slice* in) {
  extents_.clear();
  slabs_.clear();
  for (auto& p : partial_) p.clear();
  const auto bad = [] { return Status::DataLoss("aulid metadata: malformed node space"); };
  if (!GetVarint64(in, &mixed_pages_) || !GetVarint64(in, &branch_pages_)) return bad();
  uint64_t nodes = 0;
  if (!GetVarint64(in, &nodes)) return bad();
  for (uint64_t i = 0; i < nodes; ++i) {
    uint64_t first = 0, count = 0;
    if (!GetVarint64(in, &first) || !GetVarint64(in, &count) || count < 2 || count > (1u << 20)) {
      return bad();
    }
    std::vector<PageId> ext(count);
    for (auto& e : ext) {
      if (!GetVarint64(in, &e)) return bad();
    }
    if (ext[0] != first) return bad();
    extents_[first] = std::move(ext);
  }
  uint64_t slabs = 0;
  if (!GetVarint64(in, &slabs)) return bad();
  for (uint64_t i = 0; i < slabs; ++i) {
    uint64_t page = 0, used = 0;
    uint32_t cls = 0;
    if (!GetVarint64(in, &page) || !GetVarint32(in, &cls) || !GetVarint64(in, &used) ||
        cls >= kPackedClasses || used == 0 ||
        (PackedPerSlab(cls) < 64 && (used >> PackedPerSlab(cls)) != 0)) {
      return bad();
    }
    slabs_[page] = SlabState{static_cast<int>(cls), used};
    if (std::popcount(used) < static_cast<int>(PackedPerSlab(cls))) partial_[cls].insert(page);
  }
  return Status::Ok();
}

StatusOr<char*> LiveSink::Fresh(PageId id, PageType type) {
  Release();
  GROVE_ASSIGN_OR_RETURN(guard_, pool_->NewPage(id, type, Retention::kHigh));
  dirtied_.insert(id);
  peak_ = std::max<uint64_t>(peak_, dirtied_.size());
  return guard_.mutable_data();
}

StatusOr<char*> LiveSink::Existing(PageId id) {
  if (!guard_ || guard_.id() != id) {
    Release();
    GROVE_ASSIGN_OR_RETURN(guard_, pool_->FetchWrite(id, IoCause::kDemand, Retention::kHigh));
  }
  dirtied_.insert(id);
  peak_ = std::max<uint64_t>(peak_, dirtied_.size());
  return guard_.mutable_data();
}

StatusOr<const char*> LiveSink::Read(PageId id) {
  if (guard_ && guard_.id() == id) return static_cast<const char*>(guard_.data());
  if (!read_ || read_.id() != id) {
    Release();
    GROVE_ASSIGN_OR_RETURN(read_, pool_->FetchRead(id, IoCause::kDemand, Retention::kHigh));
  }
  return read_.data();
}

void LiveSink::Drop(PageId id) {
  if (read_ && read_.id() == id) read_.Release();
  if (guard_ && guard_.id() == id) {
    guard_.Discard();
  } else {
    pool_->Discard(id);
  }
  dirtied_.erase(id);
}

StatusOr<char*> ImageSink::Fresh(PageId id, PageType type) {
  AlignedBuffer b(kPageSize);
  page::Init(b.data(), type, id);
  char* p = b.data();
  images_[id] = std::move(b);
  return p;
}

StatusOr<char*> ImageSink::Existing(PageId id) {
  auto it = images_.find(id);
  if (it == images_.end()) {
    return Status::Internal(fmt::format("aulid bulk build: page {} was not built here", id));
  }
  return it->second.data();
}

StatusOr<const char*> ImageSink::Read(PageId id) {
  GROVE_ASSIGN_OR_RETURN(char* p, Existing(id));
  return static_cast<const char*>(p);
}

Status ImageSink::Flush(DirectPageWriter* writer) {
  if (writer == nullptr) return Status::Internal("aulid bulk build without a page writer");
  AlignedBuffer run(ExtentAllocator::kMaxExtentPages * kPageSize);
  auto it = images_.begin();
  while (it != images_.end()) {
    const PageId first = it->first;
    size_t n = 0;
    while (it != images_.end() && it->first == first + n && n < ExtentAllocator::kMaxExtentPages) {
      std::memcpy(run.data() + n * kPageSize, it->second.data(), kPageSize);
      ++n;
      ++it;
    }
    GROVE_RETURN_IF_ERROR(writer->WriteRun(first, n, run.data()));
  }
  images_.clear();
  return Status::Ok();
}

}  // namespace grove::aulid
