#include "predict/phantom_map.h"

#include <algorithm>

namespace grove::predict {

PhantomMap PhantomMap::FromPages(const std::vector<PageId>& pages) {
  PhantomMap m;
  for (PageId p : pages) {
    if (!m.extents_.empty()) {
      Extent& last = m.extents_.back();
      if (last.first_page + last.length == p) {
        ++last.length;
        ++m.size_;
        continue;
      }
    }
    m.extents_.push_back({m.size_, p, 1});
    ++m.size_;
  }
  return m;
}

size_t PhantomMap::ExtentOf(uint64_t rank) const {
  auto it = std::upper_bound(extents_.begin(), extents_.end(), rank,
                             [](uint64_t r, const Extent& e) { return r < e.first_rank; });
  return static_cast<size_t>(it - extents_.begin()) - 1;
}

PageId PhantomMap::PageAt(uint64_t rank) const {
  const Extent& e = extents_[ExtentOf(rank)];
  return e.first_page + (rank - e.first_rank);
}

void PhantomMap::InsertAt(uint64_t rank, PageId page) {
  size_t at;
  if (rank == size_) {
    at = extents_.size();
  } else {
    at = ExtentOf(rank);
    Extent& e = extents_[at];
    if (rank > e.first_rank) {  // split the extent around the insertion point
      const uint64_t head = rank - e.first_rank;
      const Extent tail{rank, e.first_page + head, e.length - head};
      e.length = head;
      extents_.insert(extents_.begin() + at + 1, tail);
      ++at;
    }
  }
  extents_.insert(extents_.begin() + at, Extent{rank, page, 1});
  for (size_t i = at + 1; i < extents_.size(); ++i) ++extents_[i].first_rank;
  ++size_;
  Coalesce(at);
}

void PhantomMap::RemoveAt(uint64_t rank) {
  size_t at = ExtentOf(rank);
  Extent& e = extents_[at];
  const uint64_t off = rank - e.first_rank;
  if (e.length == 1) {
    extents_.erase(extents_.begin() + at);
  } else if (off == 0) {
    ++e.first_page;
    --e.length;
    ++at;
  } else if (off + 1 == e.length) {
    --e.length;
    ++at;
  } else {
    const Extent tail{rank + 1, e.first_page + off + 1, e.length - off - 1};
    e.length = off;
    extents_.insert(extents_.begin() + at + 1, tail);
    ++at;
  }
  // `at` is now the first extent after the removed node: shift it and everything behind it.
  for (size_t i = at; i < extents_.size(); ++i) --extents_[i].first_rank;
  --size_;
  if (at > 0) Coalesce(at - 1);
}

void PhantomMap::Coalesce(size_t around) {
  if (extents_.size() < 2) return;
  const size_t lo = around > 0 ? around - 1 : 0;
  for (size_t i = std::min(around + 1, extents_.size() - 1); i > lo && i < extents_.size(); --i) {
    Extent& a = extents_[i - 1];
    const Extent& b = extents_[i];
    if (a.first_page + a.length == b.first_page && a.first_rank + a.length == b.first_rank) {
      a.length += b.length;
      extents_.erase(extents_.begin() + i);
    }
  }
}

std::unordered_map<PageId, uint64_t> PhantomMap::RankIndex() const {
  std::unordered_map<PageId, uint64_t> index;
  index.reserve(size_);
  for (const Extent& e : extents_) {
    for (uint64_t i = 0; i < e.length; ++i) index[e.first_page + i] = e.first_rank + i;
  }
  return index;
}

}  // namespace grove::predict
