#include "index/aha/page_leaf.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "grove/io_backend.h"

#include "index/core/inner_node.h"
#include "index/core/leaf_node.h"
#include "page/extent_allocator.h"
#include "page/page.h"
#include "page/slotted_page.h"

namespace grove::aha {

namespace {

size_t Footprint(const Entry& e) { return SlottedPageView::CellBytes(e.key.size(), e.cell.size()); }

size_t Capacity() {
  std::string page(kPageSize, '\0');
  core::Leaf::Format(page.data());
  return core::LeafView(page.data()).capacity();
}

// The fill of page i under sound remedy: 1 / (2 - u), u = frac(i * golden ratio), in [0.5, 1).
double SoundRemedyFill(size_t i) {
  const double phi = 0.6180339887498949;
  const double u = std::fmod(static_cast<double>(i + 1) * phi, 1.0);
  return 1.0 / (2.0 - u);
}

}  // namespace

void LeafPageBuilder::Add(const Entry& e) {
  segment_bytes_.back() += Footprint(e);
  entries_.push_back(e);
}

void LeafPageBuilder::Break() {
  segments_.push_back(entries_.size());
  segment_bytes_.push_back(0);
}

void LeafPageBuilder::Layout(size_t begin, size_t end, uint64_t bytes,
                             std::vector<size_t>* ends) const {
  if (begin == end) return;
  const size_t capacity = Capacity();
  if (alloc_ == LeafAlloc::kEven) {
    const uint64_t n = std::max<uint64_t>(1, (bytes + capacity - 1) / capacity);
    const double target = static_cast<double>(bytes) / static_cast<double>(n);
    size_t used = 0, made = 0;
    for (size_t i = begin; i < end; ++i) {
      const size_t f = Footprint(entries_[i]);
      const bool full = used + f > capacity;
      const bool reached =
          static_cast<double>(used) + static_cast<double>(f) / 2.0 > target && made + 1 < n;
      if (used > 0 && (full || reached)) {
        ends->push_back(i);
        ++made;
        used = 0;
      }
      used += f;
    }
  } else {
    size_t used = 0, made = 0;
    double target = SoundRemedyFill(0) * static_cast<double>(capacity);
    for (size_t i = begin; i < end; ++i) {
      const size_t f = Footprint(entries_[i]);
      if (used > 0 && (used + f > capacity || static_cast<double>(used + f) > target)) {
        ends->push_back(i);
        ++made;
        used = 0;
        target = SoundRemedyFill(made) * static_cast<double>(capacity);
      }
      used += f;
    }
  }
  ends->push_back(end);
}

StatusOr<LeafPages> LeafPageBuilder::Finish(ExtentSource* extents, DirectPageWriter* writer,
                                            IoCause cause, std::vector<PageExtent>* written_out,
                                            std::vector<size_t>* pages_per_segment) {
  // Where each page ends: entries [ends[i-1], ends[i]); segments never share a page.
  std::vector<size_t> ends;
  for (size_t g = 0; g < segments_.size(); ++g) {
    const size_t begin = segments_[g];
    const size_t end = g + 1 < segments_.size() ? segments_[g + 1] : entries_.size();
    const size_t before = ends.size();
    Layout(begin, end, segment_bytes_[g], &ends);
    if (pages_per_segment != nullptr) pages_per_segment->push_back(ends.size() - before);
  }
  LeafPages pages;
  if (ends.empty()) return pages;
  std::vector<PageExtent> written;
  auto abandon = [&] {
    for (const auto& [first, count] : written) extents->Abandon(first, count);
  };
  size_t begin = segments_[0];
  for (size_t chunk = 0; chunk < ends.size(); chunk += ExtentAllocator::kMaxExtentPages) {
    const size_t count = std::min<size_t>(ExtentAllocator::kMaxExtentPages, ends.size() - chunk);
    auto first = extents->Allocate(static_cast<uint32_t>(count));
    if (!first.ok()) {
      abandon();
      return first.status();
    }
    AlignedBuffer images(count * kPageSize);
    std::memset(images.data(), 0, images.size());
    for (size_t j = 0; j < count; ++j) {
      char* p = images.data() + j * kPageSize;
      const PageId id = *first + j;
      page::Init(p, core::kLeafPage, id);
      core::Leaf::Format(p);
      core::Leaf leaf(p);
      SlottedPage sp = leaf.mutable_slots();
      const size_t end = ends[chunk + j];
      auto page = std::make_shared<LeafPage>();
      page->id = id;
      page->low = entries_[begin].key;
      for (size_t i = begin; i < end; ++i) {
        sp.Insert(sp.count(), entries_[i].key, entries_[i].cell);
      }
      page->used = static_cast<uint32_t>(leaf.used_bytes());
      page->entries = static_cast<uint32_t>(end - begin);
      pages.push_back(std::move(page));
      begin = end;
    }
    written.emplace_back(*first, static_cast<uint32_t>(count));
    if (Status s = writer->WriteRun(*first, count, images.data(), cause); !s.ok()) {
      abandon();
      return s;
    }
  }
  written_out->insert(written_out->end(), written.begin(), written.end());
  return pages;
}

size_t LeafPageCapacity() { return Capacity(); }

size_t PageFor(const LeafPages& pages, Slice key) {
  auto it = std::upper_bound(
      pages.begin(), pages.end(), key,
      [](Slice k, const std::shared_ptr<const LeafPage>& p) { return k.compare(p->low) < 0; });
  return it == pages.begin() ? 0 : static_cast<size_t>(it - pages.begin() - 1);
}

Status ReadLeafPage(BufferPool* pool, const LeafPage& page, IoCause cause,
                    std::vector<Entry>* out) {
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool->FetchRead(page.id, cause));
  if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) {
    return Status::DataLoss(fmt::format("aha leaf page {}: type {}, expected {}", page.id,
                                        page::Type(g.data()),
                                        static_cast<uint16_t>(core::kLeafPage)));
  }
  core::LeafView leaf(g.data());
  if (const char* problem = leaf.slots().CheckOffsets(); *problem != 0) {
    return Status::DataLoss(fmt::format("aha leaf page {}: {}", page.id, problem));
  }
  out->resize(static_cast<size_t>(leaf.count()));
  for (int i = 0; i < leaf.count(); ++i) {
    Entry& e = (*out)[i];
    e.key.assign(leaf.key(i).data(), leaf.key(i).size());
    e.cell.assign(leaf.cell(i).data(), leaf.cell(i).size());
    e.lsn = 0;
    e.tombstone = false;
  }
  return Status::Ok();
}

StatusOr<bool> GetFromPages(BufferPool* pool, const LeafPages& pages, Slice key, Entry* out) {
  if (pages.empty()) return false;
  const LeafPage& page = *pages[PageFor(pages, key)];
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool->FetchRead(page.id, IoCause::kDemand));
  if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) {
    return Status::DataLoss(fmt::format("aha leaf page {}: not a leaf page", page.id));
  }
  core::LeafView leaf(g.data());
  if (const char* problem = leaf.slots().CheckOffsets(); *problem != 0) {
    return Status::DataLoss(fmt::format("aha leaf page {}: {}", page.id, problem));
  }
  bool found = false;
  const int i = leaf.Find(key, &found);
  if (!found) return false;
  out->key.assign(key.data(), key.size());
  out->cell.assign(leaf.cell(i).data(), leaf.cell(i).size());
  out->lsn = 0;
  out->tombstone = false;
  return true;
}

Status PageMerger::Add(const Entry& e) {
  const int target = old_.empty() ? -1 : static_cast<int>(PageFor(old_, e.key));
  if (rebuilt_.empty() || target != current_) {
    if (!rebuilt_.empty()) {
      CloseCurrent();
      builder_.Break();
    }
    current_ = target;
    rebuilt_.push_back(target);
    old_entries_.clear();
    old_pos_ = 0;
    if (target >= 0) {
      GROVE_RETURN_IF_ERROR(ReadLeafPage(pool_, *old_[target], cause_, &old_entries_));
    }
  }
  while (old_pos_ < old_entries_.size() && old_entries_[old_pos_].key < e.key) {
    builder_.Add(old_entries_[old_pos_++]);
  }
  if (old_pos_ < old_entries_.size() && old_entries_[old_pos_].key == e.key) {
    released_.push_back(std::move(old_entries_[old_pos_].cell));
    ++old_pos_;
  }
  if (!e.tombstone) builder_.Add(e);
  return Status::Ok();
}

void PageMerger::CloseCurrent() {
  while (old_pos_ < old_entries_.size()) builder_.Add(old_entries_[old_pos_++]);
}

Status PageMerger::Finish(ExtentSource* extents, DirectPageWriter* writer, LeafPages* pages,
                          LeafPages* retired, std::vector<PageExtent>* written,
                          std::vector<std::string>* released) {
  if (rebuilt_.empty()) {
    *pages = old_;
    return Status::Ok();
  }
  CloseCurrent();
  std::vector<size_t> counts;
  GROVE_ASSIGN_OR_RETURN(LeafPages fresh,
                         builder_.Finish(extents, writer, cause_, written, &counts));
  // The new list: old pages in order, each rebuilt one replaced by its segment's pages.
  pages->clear();
  size_t next = 0, seg = 0;
  auto take = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) pages->push_back(fresh[next++]);
  };
  if (rebuilt_[0] < 0) take(counts[seg++]);  // the leaf had no pages
  for (size_t i = 0; i < old_.size(); ++i) {
    if (seg < rebuilt_.size() && rebuilt_[seg] == static_cast<int>(i)) {
      retired->push_back(old_[i]);
      take(counts[seg++]);
    } else {
      pages->push_back(old_[i]);
    }
  }
  for (std::string& c : released_) released->push_back(std::move(c));
  return Status::Ok();
}

namespace {

class PagesSource final : public Source {
 public:
  PagesSource(BufferPool* pool, LeafPages pages, Slice start, bool from_start, bool reverse,
              IoCause cause, uint32_t readahead)
      : pool_(pool),
        pages_(std::move(pages)),
        reverse_(reverse),
        cause_(cause),
        readahead_(readahead) {
    if (pages_.empty()) return;
    const int n = static_cast<int>(pages_.size());
    if (from_start) {
      Load(reverse_ ? n - 1 : 0);
      pos_ = reverse_ ? static_cast<int>(entries_.size()) - 1 : 0;
      Settle();
      return;
    }
    Load(static_cast<int>(PageFor(pages_, start)));
    auto it = std::lower_bound(entries_.begin(), entries_.end(), start,
                               [](const Entry& e, Slice k) { return Slice(e.key).compare(k) < 0; });
    pos_ = static_cast<int>(it - entries_.begin());
    if (reverse_ && (it == entries_.end() || Slice(it->key).compare(start) > 0)) --pos_;
    Settle();
  }
  bool Valid() const override {
    return status_.ok() && pos_ >= 0 && pos_ < static_cast<int>(entries_.size());
  }
  const Entry& entry() const override { return entries_[pos_]; }
  void Next() override {
    pos_ += reverse_ ? -1 : 1;
    Settle();
  }
  Status status() const override { return status_; }

 private:
  // Moves to the next page in the scan's direction while the position is off this one.
  void Settle() {
    while (status_.ok() && (pos_ < 0 || pos_ >= static_cast<int>(entries_.size()))) {
      const int next = page_ + (reverse_ ? -1 : 1);
      if (next < 0 || next >= static_cast<int>(pages_.size())) return;
      Load(next);
      pos_ = reverse_ ? static_cast<int>(entries_.size()) - 1 : 0;
    }
  }
  void Load(int i) {
    page_ = i;  // entries_ keeps its strings' capacity: ReadLeafPage assigns over them
    if (readahead_ > 1 && !pool_->IsResident(pages_[i]->id)) {
      std::vector<PageId> ids;
      for (int j = i; j >= 0 && j < static_cast<int>(pages_.size()) && ids.size() < readahead_;
           j += reverse_ ? -1 : 1) {
        ids.push_back(pages_[j]->id);
      }
      std::sort(ids.begin(), ids.end());
      status_ = pool_->LoadMany(ids, cause_);
      if (!status_.ok()) return;
    }
    status_ = ReadLeafPage(pool_, *pages_[i], cause_, &entries_);
  }

  BufferPool* pool_;
  LeafPages pages_;
  bool reverse_;
  IoCause cause_;
  uint32_t readahead_;
  int page_ = 0;
  int pos_ = -1;
  std::vector<Entry> entries_;
  Status status_;
};

}  // namespace

std::unique_ptr<Source> NewPagesSource(BufferPool* pool, LeafPages pages, Slice start,
                                       bool from_start, bool reverse, IoCause cause,
                                       uint32_t readahead) {
  return std::make_unique<PagesSource>(pool, std::move(pages), start, from_start, reverse, cause,
                                       readahead);
}

}  // namespace grove::aha
