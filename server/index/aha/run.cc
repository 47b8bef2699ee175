#include "index/aha/run.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "index/aha/bloom.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::aha {

namespace {

constexpr uint16_t kSlotBase = kPageHeaderSize;
constexpr size_t kRegionBytes = kPageSize - kPageHeaderSize - SlottedPageView::kRegionHeader;
constexpr size_t kFenceBytes = 4;

void DecodeEntry(Slice key, Slice payload, Entry* out) {
  const uint64_t tag = DecodeFixed64(payload.data());
  out->key.assign(key.data(), key.size());
  out->lsn = tag >> 1;
  out->tombstone = (tag & 1) != 0;
  out->cell.assign(payload.data() + 8, payload.size() - 8);
}

Status CheckPage(const char* p, PageType type, uint32_t aux, PageId id) {
  if (page::Type(p) != static_cast<uint16_t>(type) || page::Aux(p) != aux) {
    return Status::DataLoss(
        fmt::format("aha run page {}: type {} part {}, expected type {} part {}", id, page::Type(p),
                    page::Aux(p), static_cast<uint16_t>(type), aux));
  }
  if (type != kRunFilter) {
    if (const char* problem = SlottedPageView(p, kSlotBase).CheckOffsets(); *problem != 0) {
      return Status::DataLoss(fmt::format("aha run page {}: {}", id, problem));
    }
  }
  return Status::Ok();
}

}  // namespace

// ---- RunMeta ----

void RunMeta::EncodeTo(std::string* out) const {
  PutVarint64(out, first);
  PutVarint32(out, pages);
  PutVarint32(out, data_pages);
  PutVarint32(out, filter_pages);
  PutVarint64(out, entries);
  PutVarint64(out, tombstones);
  PutVarint64(out, bytes);
  PutVarint64(out, min_lsn);
  PutVarint64(out, max_lsn);
  PutLengthPrefixed(out, min_key);
  PutLengthPrefixed(out, max_key);
}

Status RunMeta::DecodeFrom(Slice* in, RunMeta* m) {
  Slice lo, hi;
  if (!GetVarint64(in, &m->first) || !GetVarint32(in, &m->pages) ||
      !GetVarint32(in, &m->data_pages) || !GetVarint32(in, &m->filter_pages) ||
      !GetVarint64(in, &m->entries) || !GetVarint64(in, &m->tombstones) ||
      !GetVarint64(in, &m->bytes) || !GetVarint64(in, &m->min_lsn) ||
      !GetVarint64(in, &m->max_lsn) || !GetLengthPrefixed(in, &lo) || !GetLengthPrefixed(in, &hi)) {
    return Status::DataLoss("aha run descriptor: truncated");
  }
  m->min_key = std::string(lo);
  m->max_key = std::string(hi);
  if (m->pages == 0 || m->pages > ExtentAllocator::kMaxExtentPages || m->data_pages == 0 ||
      m->data_pages + m->filter_pages >= m->pages || m->entries < m->data_pages ||
      m->first < ExtentAllocator::kFirstDataPage || m->min_key > m->max_key) {
    return Status::DataLoss(
        fmt::format("aha run descriptor at page {}: impossible shape", m->first));
  }
  return Status::Ok();
}

// ---- Run ----

namespace {

// The fences as the run's index pages list them.
StatusOr<std::vector<std::string>> FencesFromIndex(BufferPool* pool, const RunMeta& meta,
                                                   IoCause cause) {
  AlignedBuffer buf(kPageSize);
  std::vector<std::string> fences;
  fences.reserve(meta.data_pages);
  for (uint32_t i = 0; i < meta.index_pages(); ++i) {
    const PageId id = meta.first + meta.data_pages + meta.filter_pages + i;
    GROVE_RETURN_IF_ERROR(pool->ReadCopy(id, buf.data(), cause));
    GROVE_RETURN_IF_ERROR(CheckPage(buf.data(), kRunIndex, i, id));
    SlottedPageView v(buf.data(), kSlotBase);
    for (int s = 0; s < v.count(); ++s) {
      if (v.Payload(s).size() != kFenceBytes ||
          DecodeFixed32(v.Payload(s).data()) != fences.size()) {
        return Status::DataLoss(fmt::format("aha run index page {}: fence {} out of order", id, s));
      }
      fences.emplace_back(v.Key(s));
    }
  }
  if (fences.size() != meta.data_pages || fences.front() != meta.min_key) {
    return Status::DataLoss(fmt::format("aha run at page {}: {} fences for {} data pages",
                                        meta.first, fences.size(), meta.data_pages));
  }
  return fences;
}

// The same fences read off the data pages (each one's first key), ascending.
StatusOr<std::vector<std::string>> FencesFromData(BufferPool* pool, const RunMeta& meta) {
  AlignedBuffer buf(kPageSize);
  std::vector<std::string> fences;
  fences.reserve(meta.data_pages);
  for (uint32_t i = 0; i < meta.data_pages; ++i) {
    const PageId id = meta.first + i;
    GROVE_RETURN_IF_ERROR(pool->ReadCopy(id, buf.data(), IoCause::kRecovery));
    GROVE_RETURN_IF_ERROR(CheckPage(buf.data(), kRunData, i, id));
    SlottedPageView v(buf.data(), kSlotBase);
    if (v.count() == 0 || (!fences.empty() && v.Key(0).compare(fences.back()) <= 0)) {
      return Status::DataLoss(fmt::format("aha run data page {}: empty or out of order", id));
    }
    fences.emplace_back(v.Key(0));
  }
  if (fences.empty() || fences.front() != meta.min_key) {
    return Status::DataLoss(
        fmt::format("aha run at page {}: its first key is not its minimum", meta.first));
  }
  return fences;
}

}  // namespace

StatusOr<std::shared_ptr<Run>> Run::Open(BufferPool* pool, const RunMeta& meta) {
  StatusOr<std::vector<std::string>> fences = FencesFromIndex(pool, meta, IoCause::kRecovery);
  bool rebuilt = false;
  if (!fences.ok() && fences.status().IsDataLoss()) {
    // The index pages only repeat the data pages' first keys: a damaged one costs reading the
    // data pages at open, not the run. Verify still reports the damaged page.
    StatusOr<std::vector<std::string>> from_data = FencesFromData(pool, meta);
    if (!from_data.ok()) return fences.status();  // the data is damaged too: the first problem
    fences = std::move(from_data);
    rebuilt = true;
  }
  if (!fences.ok()) return fences.status();
  auto run = std::make_shared<Run>(meta, std::move(*fences));
  run->index_rebuilt_ = rebuilt;
  return run;
}

Status Run::CheckFilterAndIndex(BufferPool* pool) const {
  AlignedBuffer buf(kPageSize);
  for (uint32_t i = 0; i < meta_.filter_pages; ++i) {
    const PageId id = meta_.first + meta_.data_pages + i;
    GROVE_RETURN_IF_ERROR(pool->ReadCopy(id, buf.data(), IoCause::kScan));
    GROVE_RETURN_IF_ERROR(CheckPage(buf.data(), kRunFilter, i, id));
  }
  GROVE_ASSIGN_OR_RETURN(const std::vector<std::string> fences,
                         FencesFromIndex(pool, meta_, IoCause::kScan));
  if (fences != fences_) {
    return Status::DataLoss(fmt::format(
        "aha run at page {}: its index pages disagree with its data pages", meta_.first));
  }
  return Status::Ok();
}

bool Run::Overlaps(Slice lo, Slice hi, bool has_hi) const {
  if (Slice(meta_.max_key).compare(lo) < 0) return false;
  return !has_hi || Slice(meta_.min_key).compare(hi) < 0;
}

uint32_t Run::PageFor(Slice key) const {
  auto it = std::upper_bound(fences_.begin(), fences_.end(), key,
                             [](Slice k, const std::string& f) { return k.compare(f) < 0; });
  return it == fences_.begin() ? 0 : static_cast<uint32_t>(it - fences_.begin() - 1);
}

uint64_t Run::memory_bytes() const {
  uint64_t n = sizeof(*this) + meta_.min_key.size() + meta_.max_key.size();
  for (const auto& f : fences_) n += f.size() + sizeof(f);
  return n;
}

StatusOr<bool> Run::Get(BufferPool* pool, Slice key, Entry* out, bool* filtered,
                        IoCause cause) const {
  *filtered = false;
  if (!Covers(key)) return false;
  if (meta_.filter_pages > 0) {
    const uint64_t h = Hash64(key);
    const uint32_t block = BloomBlockOf(h, meta_.filter_pages);
    const PageId id = meta_.first + meta_.data_pages + block;
    StatusOr<PageReadGuard> g = pool->FetchRead(id, cause, Retention::kHigh);
    Status s = g.ok() ? CheckPage(g->data(), kRunFilter, block, id) : g.status();
    // A damaged filter page only loses its answers: the data page decides (Verify reports it).
    if (!s.ok() && !s.IsDataLoss()) return s;
    if (s.ok() &&
        !BloomMayContain(g->data() + kPageHeaderSize, h, BloomProbes(BloomBitsPerKey()))) {
      *filtered = true;
      return false;
    }
  }
  const uint32_t i = PageFor(key);
  const PageId id = meta_.first + i;
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool->FetchRead(id, cause));
  GROVE_RETURN_IF_ERROR(CheckPage(g.data(), kRunData, i, id));
  SlottedPageView v(g.data(), kSlotBase);
  bool found = false;
  const int s = v.LowerBound(key, &found);
  if (!found) return false;
  DecodeEntry(v.Key(s), v.Payload(s), out);
  return true;
}

double Run::BloomBitsPerKey() const {
  // The probe count is derived from the filter's size per key, so that a run written with other
  // options is still read correctly.
  return static_cast<double>(meta_.filter_pages) * kBloomBlockBits /
         static_cast<double>(std::max<uint64_t>(1, meta_.entries));
}

Status Run::ReadPage(BufferPool* pool, uint32_t i, IoCause cause, std::vector<Entry>* out) const {
  const PageId id = meta_.first + i;
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool->FetchRead(id, cause));
  GROVE_RETURN_IF_ERROR(CheckPage(g.data(), kRunData, i, id));
  SlottedPageView v(g.data(), kSlotBase);
  out->resize(v.count());
  for (int s = 0; s < v.count(); ++s) DecodeEntry(v.Key(s), v.Payload(s), &(*out)[s]);
  return Status::Ok();
}

// ---- RunBuilder ----

RunBuilder::RunBuilder(const RunOptions& options) : options_(options) {
  options_.max_pages =
      std::clamp<uint32_t>(options_.max_pages, 3, ExtentAllocator::kMaxExtentPages);
}

size_t RunBuilder::CellBytes(const Entry& e) {
  return SlottedPageView::CellBytes(e.key.size(), 8 + e.cell.size());
}

uint32_t RunBuilder::FilterPagesFor(uint64_t keys) const {
  return BloomBlocks(keys, options_.bloom_bits_per_key);
}

uint32_t RunBuilder::IndexPagesFor(uint64_t fence_bytes) const {
  // Packed greedily a page holds at least kRegionBytes minus one largest fence; count pages as if
  // each lost a whole maximal cell, which over-counts by at most one page.
  const uint64_t kMaxFence = SlottedPageView::CellBytes(1024, kFenceBytes);
  return static_cast<uint32_t>(std::max<uint64_t>(
      1, (fence_bytes + (kRegionBytes - kMaxFence) - 1) / (kRegionBytes - kMaxFence)));
}

bool RunBuilder::Fits(const Entry& e) const {
  const bool new_page = current_.empty() || current_free_ < CellBytes(e);
  const uint32_t data =
      static_cast<uint32_t>(pages_.size()) + (current_.empty() ? 0 : 1) + (new_page ? 1 : 0);
  const uint64_t fences =
      fence_bytes_ + (new_page ? SlottedPageView::CellBytes(e.key.size(), kFenceBytes) : 0);
  return data + FilterPagesFor(meta_.entries + 1) + IndexPagesFor(fences) <= options_.max_pages;
}

void RunBuilder::CloseDataPage() {
  if (current_.empty()) return;
  pages_.push_back(std::move(current_));
  current_.clear();
}

void RunBuilder::Add(const Entry& e) {
  const size_t need = CellBytes(e);
  if (current_.empty() || current_free_ < need) {
    CloseDataPage();
    current_.assign(kPageSize, '\0');
    page::Init(current_.data(), kRunData, 0);
    page::SetAux(current_.data(), static_cast<uint32_t>(pages_.size()));
    SlottedPage::Init(current_.data(), kSlotBase);
    current_free_ = SlottedPageView(current_.data(), kSlotBase).FreeBytes();
    fences_.push_back(e.key);
    fence_bytes_ += SlottedPageView::CellBytes(e.key.size(), kFenceBytes);
  }
  std::string payload(8, '\0');
  EncodeFixed64(payload.data(), (e.lsn << 1) | (e.tombstone ? 1 : 0));
  payload += e.cell;
  SlottedPage sp(current_.data(), kSlotBase);
  sp.Insert(sp.count(), e.key, payload);
  current_free_ -= need;

  if (meta_.entries == 0) {
    meta_.min_key = e.key;
    meta_.min_lsn = meta_.max_lsn = e.lsn;
  }
  meta_.max_key = e.key;
  meta_.min_lsn = std::min(meta_.min_lsn, e.lsn);
  meta_.max_lsn = std::max(meta_.max_lsn, e.lsn);
  ++meta_.entries;
  if (e.tombstone) ++meta_.tombstones;
  meta_.bytes += e.key.size() + e.cell.size();
  if (options_.bloom_bits_per_key > 0) hashes_.push_back(Hash64(e.key));
}

StatusOr<std::shared_ptr<Run>> RunBuilder::Finish(ExtentSource* extents, DirectPageWriter* writer,
                                                  IoCause cause) {
  CloseDataPage();
  const auto data = static_cast<uint32_t>(pages_.size());
  const uint32_t filter = FilterPagesFor(meta_.entries);

  // Index pages, packed greedily.
  std::vector<std::string> index;
  for (uint32_t i = 0; i < data; ++i) {
    const std::string& key = fences_[i];
    if (index.empty() ||
        !SlottedPageView(index.back().data(), kSlotBase).HasRoomFor(key.size(), kFenceBytes)) {
      index.emplace_back(kPageSize, '\0');
      page::Init(index.back().data(), kRunIndex, 0);
      page::SetAux(index.back().data(), static_cast<uint32_t>(index.size() - 1));
      SlottedPage::Init(index.back().data(), kSlotBase);
    }
    char no[kFenceBytes];
    EncodeFixed32(no, i);
    SlottedPage sp(index.back().data(), kSlotBase);
    sp.Insert(sp.count(), key, Slice(no, kFenceBytes));
  }
  const uint32_t total = data + filter + static_cast<uint32_t>(index.size());
  if (total > ExtentAllocator::kMaxExtentPages) {
    return Status::Internal(fmt::format("aha run of {} pages exceeds an extent", total));
  }
  GROVE_ASSIGN_OR_RETURN(const PageId first, extents->Allocate(total));

  AlignedBuffer images(static_cast<size_t>(total) * kPageSize);
  char* out = images.data();
  std::memset(out, 0, images.size());
  for (uint32_t i = 0; i < data; ++i) std::memcpy(out + i * kPageSize, pages_[i].data(), kPageSize);
  const int probes = BloomProbes(static_cast<double>(filter) * kBloomBlockBits /
                                 static_cast<double>(std::max<uint64_t>(1, meta_.entries)));
  for (uint32_t f = 0; f < filter; ++f) {
    char* p = out + (data + f) * kPageSize;
    page::Init(p, kRunFilter, 0);
    page::SetAux(p, f);
  }
  for (uint64_t h : hashes_) {
    char* p = out + (data + BloomBlockOf(h, filter)) * kPageSize;
    BloomAdd(p + kPageHeaderSize, h, probes);
  }
  for (size_t x = 0; x < index.size(); ++x) {
    std::memcpy(out + (data + filter + x) * kPageSize, index[x].data(), kPageSize);
  }
  for (uint32_t i = 0; i < total; ++i) page::SetId(out + i * kPageSize, first + i);
  if (Status s = writer->WriteRun(first, total, out, cause); !s.ok()) {
    extents->Abandon(first, total);
    return s;
  }
  meta_.first = first;
  meta_.pages = total;
  meta_.data_pages = data;
  meta_.filter_pages = filter;
  return std::make_shared<Run>(meta_, std::move(fences_));
}

// ---- RunCursor ----

RunCursor::RunCursor(BufferPool* pool, std::shared_ptr<const Run> run, IoCause cause,
                     uint32_t readahead)
    : pool_(pool),
      run_(std::move(run)),
      cause_(cause),
      readahead_(std::max<uint32_t>(1, readahead)) {}

bool RunCursor::LoadPage(int64_t i, int direction) {
  page_.clear();
  pos_ = -1;
  page_no_ = i;
  const auto& m = run_->meta();
  if (i < 0 || i >= m.data_pages) return false;
  if (readahead_ > 1 && !pool_->IsResident(m.first + i)) {
    std::vector<PageId> ids;
    for (int64_t j = i; j >= 0 && j < m.data_pages && ids.size() < readahead_; j += direction) {
      ids.push_back(m.first + j);
    }
    if (direction < 0) std::reverse(ids.begin(), ids.end());
    status_ = pool_->LoadMany(ids, cause_);
    if (!status_.ok()) return false;
  }
  status_ = run_->ReadPage(pool_, static_cast<uint32_t>(i), cause_, &page_);
  return status_.ok() && !page_.empty();
}

void RunCursor::SeekToFirst() {
  if (LoadPage(0, 1)) pos_ = 0;
}

void RunCursor::SeekToLast() {
  const int64_t last = run_->meta().data_pages - 1;
  if (LoadPage(last, -1)) pos_ = static_cast<int>(page_.size()) - 1;
}

void RunCursor::Seek(Slice key) {
  const uint32_t p = run_->PageFor(key);
  if (!LoadPage(p, 1)) return;
  auto it = std::lower_bound(page_.begin(), page_.end(), key,
                             [](const Entry& e, Slice k) { return Slice(e.key).compare(k) < 0; });
  pos_ = static_cast<int>(it - page_.begin());
  if (pos_ == static_cast<int>(page_.size()) && LoadPage(p + 1, 1)) pos_ = 0;
}

void RunCursor::SeekForPrev(Slice key) {
  if (key.compare(run_->meta().min_key) < 0) {
    page_.clear();
    pos_ = -1;
    return;
  }
  const uint32_t p = run_->PageFor(key);
  if (!LoadPage(p, -1)) return;
  auto it = std::upper_bound(page_.begin(), page_.end(), key,
                             [](Slice k, const Entry& e) { return k.compare(e.key) < 0; });
  pos_ = static_cast<int>(it - page_.begin()) - 1;
  if (pos_ < 0 && LoadPage(static_cast<int64_t>(p) - 1, -1)) {
    pos_ = static_cast<int>(page_.size()) - 1;
  }
}

void RunCursor::Next() {
  if (!Valid()) return;
  if (++pos_ < static_cast<int>(page_.size())) return;
  if (LoadPage(page_no_ + 1, 1)) pos_ = 0;
}

void RunCursor::Prev() {
  if (!Valid()) return;
  if (--pos_ >= 0) return;
  if (LoadPage(page_no_ - 1, -1)) pos_ = static_cast<int>(page_.size()) - 1;
}

}  // namespace grove::aha
