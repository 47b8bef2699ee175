// TreeLine reads: Get, write admission (Prepare), reading a segment's pages, and the cursor.

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "index/core/cursor.h"
#include "index/treeline/treeline.h"

namespace grove {

using treeline::RecordCache;

using treeline::DataPageView;
using treeline::Record;
using treeline::Segment;

namespace {

// Merges two ascending runs of records (a base page and its overflow page hold different keys).
std::vector<Record> MergeRuns(std::vector<Record> a, std::vector<Record> b) {
  if (b.empty()) return a;
  std::vector<Record> out;
  out.reserve(a.size() + b.size());
  std::merge(std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()),
             std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()),
             std::back_inserter(out),
             [](const Record& x, const Record& y) { return x.key < y.key; });
  return out;
}

std::vector<Record> RecordsOf(const char* page) {
  const DataPageView v(page);
  std::vector<Record> out;
  out.reserve(v.count());
  for (int i = 0; i < v.count(); ++i)
    out.push_back({std::string(v.key(i)), std::string(v.cell(i))});
  return out;
}

}  // namespace

Status TreeLine::CheckDataPage(const char* data, PageId id, const Segment& seg, int index,
                               bool overflow) const {
  const DataPageView v(data);
  if (page::Type(data) != static_cast<uint16_t>(treeline::kDataPage) ||
      v.is_overflow() != overflow || v.index() != index || v.segment_pages() != seg.pages) {
    return Status::DataLoss(fmt::format(
        "treeline: page {} is not {} page {} of the {}-page segment at {} (type {}, index {}, "
        "segment of {}{})",
        id, overflow ? "the overflow of" : "base", index, seg.pages, seg.first, page::Type(data),
        v.index(), v.segment_pages(), v.is_overflow() ? ", overflow" : ""));
  }
  return Status::Ok();
}

StatusOr<PageReadGuard> TreeLine::ReadDataPage(PageId id, const Segment& seg, int index,
                                               bool overflow, IoCause cause) {
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(id, cause));
  GROVE_RETURN_IF_ERROR(CheckDataPage(g.data(), id, seg, index, overflow));
  (overflow ? overflow_reads_ : page_reads_).fetch_add(1, std::memory_order_relaxed);
  return g;
}

StatusOr<bool> TreeLine::Get(Slice key, std::string* cell) {
  // Without the cache proper, records still wait here while their segment is reorganised.
  bool evicted_lately = false;
  const RecordCache::Kind kind = cache_.Get(key, cell, &evicted_lately);
  if (kind == RecordCache::Kind::kValue) return true;
  if (kind == RecordCache::Kind::kTombstone) return false;
  bool found = false;
  PageId base_id;
  uint64_t ticket;
  std::vector<Record> neighbours;  // optimistic caching: the page's other records
  {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch p,
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, /*exclusive=*/false));
    const Segment seg = Segment::Decode(p.leaf_payload());
    const int i = seg.PageFor(key);
    base_id = seg.first + i;
    // A record the cache evicted lately, on a page the pool does not hold: a device read that a
    // larger record cache would have saved (the memory split's evidence).
    if (evicted_lately && !pool_->IsResident(base_id)) {
      read_ghost_hits_.fetch_add(1, std::memory_order_relaxed);
    }
    GROVE_ASSIGN_OR_RETURN(PageReadGuard base,
                           ReadDataPage(base_id, seg, i, false, IoCause::kDemand));
    ticket = cache_.Ticket(base_id);
    auto look = [&](const char* page) {
      const DataPageView v(page);
      const int pos = v.Find(key, &found);
      if (found) cell->assign(v.cell(pos).data(), v.cell(pos).size());
      if (cfg_.optimistic && cfg_.cache) {
        for (Record& r : RecordsOf(page)) {
          if (r.key != key) neighbours.push_back(std::move(r));
        }
      }
    };
    look(base.data());
    const PageId over = DataPageView(base.data()).overflow();
    if (!found && over != 0) {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard o, ReadDataPage(over, seg, i, true, IoCause::kDemand));
      look(o.data());
    }
  }
  // Admitted after the latches are gone (the cache comes after page latches, and a read must not
  // hold up the page); the ticket keeps out what a write-back made stale meanwhile.
  if (cfg_.cache) {
    if (found) cache_.AdmitClean(key, *cell, cache_.mid_priority(), base_id, ticket);
    for (const Record& r : neighbours) cache_.AdmitClean(r.key, r.cell, 1, base_id, ticket);
    // Misses are admitted even when only dirty entries could make room: the background thread
    // writes dirty victims back (a read holds no write room). Kicked once per 1/64 of capacity,
    // not on every admission.
    if (cache_.Excess() > cache_.capacity_bytes() / 64) bg_.Kick();
  }
  return found;
}

Status TreeLine::Prepare(Slice key) {
  if (!cfg_.cache) return Index::Prepare(key);  // the write goes to its page: fault it in
  // Admission control: writes wait here, outside the write gate and holding nothing, while the
  // cache is far over capacity, so that the background thread's write-backs keep up. Bounded: a
  // stuck background thread (a full disk) slows writes down but does not stop them.
  const uint64_t limit = cache_.capacity_bytes() / 8 + (1u << 20);
  for (int i = 0; i < 2000 && cache_.Excess() > limit; ++i) {
    bg_.Kick();
    if (!bg_.WaitForRound(std::chrono::milliseconds(1))) break;
  }
  return Status::Ok();
}

Status TreeLine::ReadPages(const Segment& seg, int first, int last, IoCause cause,
                           SegmentRead* out) {
  std::vector<PageId> ids;
  for (int i = first; i <= last; ++i) ids.push_back(seg.first + i);
  if (ids.size() > 1) GROVE_RETURN_IF_ERROR(pool_->LoadMany(ids, cause));
  std::vector<std::vector<Record>> per_page;
  std::vector<PageId> overflow;
  std::vector<int> overflow_of;
  for (int i = first; i <= last; ++i) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, ReadDataPage(seg.first + i, seg, i, false, cause));
    per_page.push_back(RecordsOf(g.data()));
    if (const PageId o = DataPageView(g.data()).overflow(); o != 0) {
      overflow.push_back(o);
      overflow_of.push_back(i - first);
    }
    out->guards.push_back(std::move(g));
  }
  if (overflow.size() > 1) GROVE_RETURN_IF_ERROR(pool_->LoadMany(overflow, cause));
  for (size_t k = 0; k < overflow.size(); ++k) {
    const int i = first + overflow_of[k];
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, ReadDataPage(overflow[k], seg, i, true, cause));
    per_page[overflow_of[k]] = MergeRuns(std::move(per_page[overflow_of[k]]), RecordsOf(g.data()));
    out->guards.push_back(std::move(g));
  }
  out->overflow = std::move(overflow);
  for (std::vector<Record>& page : per_page) {
    for (Record& r : page) out->records.push_back(std::move(r));
  }
  return Status::Ok();
}

int TreeLine::ScanPagesFor(uint64_t records) const {
  const uint64_t pages =
      data_pages_.load(std::memory_order_relaxed) + overflow_pages_.load(std::memory_order_relaxed);
  const uint64_t entries = page_entries_.load(std::memory_order_relaxed);
  if (pages == 0 || entries < pages) return treeline::kMaxSegmentPages;
  const uint64_t per_page = entries / pages;
  // The start key lies half a page in, on average.
  const uint64_t want = records + per_page / 2;
  return static_cast<int>(
      std::clamp<uint64_t>((want + per_page - 1) / per_page, 1, treeline::kMaxSegmentPages));
}

// --- Cursor
// ---------------------------------------------------------------------------------------

namespace {

// Merges page records (ascending) with the cache's entries of the same range (ascending): the
// cache's version wins and its tombstones hide the page's record.
std::vector<core::BatchCursor::Entry> Overlay(std::vector<Record> pages,
                                              std::vector<RecordCache::DirtyRecord> cached) {
  std::vector<core::BatchCursor::Entry> out;
  out.reserve(pages.size() + cached.size());
  size_t a = 0, b = 0;
  while (a < pages.size() || b < cached.size()) {
    if (b == cached.size() || (a < pages.size() && pages[a].key < cached[b].key)) {
      out.push_back({std::move(pages[a].key), std::move(pages[a].cell)});
      ++a;
      continue;
    }
    if (a < pages.size() && pages[a].key == cached[b].key) ++a;
    if (!cached[b].tombstone()) {
      out.push_back({std::move(cached[b].key), cached[b].cell.ToString()});
    }
    ++b;
  }
  return out;
}

class TreeLineCursor final : public core::BatchCursor {
 public:
  // Dirty records of the cache one batch takes at most (copied under the cache's lock).
  static constexpr size_t kCachedPerBatch = 4096;

  TreeLineCursor(TreeLine* index, CursorOptions options)
      : core::BatchCursor(std::move(options)), index_(index) {
    Start();
  }

 private:
  // The rest of the segment holding `from`: its pages from the one `from` maps to, read with one
  // IO, merged with the cache's records of the same range while the pages are still latched (so
  // that no write-back moves a record from the cache to a page between the two reads).
  //
  // A read takes at most a window of those pages: for the cursor's first read, the pages that
  // hold the entries the caller expects (CursorOptions::expected_entries, else 64;
  // TreeLine::ScanPagesFor), doubling with every read after it. Most scans are short (YCSB E
  // asks for 50 records on average: one or two pages of small records, a whole segment of 1 KiB
  // ones), and reading 16 pages to return a few would spend the device's bandwidth on pages
  // nobody asked for, while a long scan still reaches whole-segment reads. A batch that stops
  // inside the segment ends at the next page's lowest key (its projection boundary,
  // Segment::LowOf); the next read starts there.

  Status ReadForward(const std::string& from, bool, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch p,
        index_->tree().DescendToParent(from, core::Seek::kAtOrAfter, IoCause::kScan, false));
    *leaf = p.leaf_fences();
    const Segment seg = Segment::Decode(p.leaf_payload());
    const int start = seg.PageFor(from);
    int last = seg.pages - 1;
    if (reads_ == 0) {
      const uint64_t expected = options().expected_entries;
      first_window_ = index_->ScanPagesFor(expected != 0 ? expected : TreeLine::kScanRecordsHint);
    }
    const int window = first_window_ << std::min(reads_++, 4);
    if (last >= start + window) {
      // Keys at or above `cut` project to the pages after the ones read; `from` is below it.
      std::string cut = treeline::KeyAtProjection(seg.LowOf(start + window));
      if (!leaf->has_high || Slice(cut) < Slice(leaf->high)) {
        last = start + window - 1;
        leaf->high = std::move(cut);
        leaf->has_high = true;
      }
    }
    TreeLine::SegmentRead read;
    GROVE_RETURN_IF_ERROR(index_->ReadPages(seg, start, last, IoCause::kScan, &read));
    bool truncated = false;
    std::vector<RecordCache::DirtyRecord> cached = index_->cache().Range(
        from, leaf->has_high ? &leaf->high : nullptr, kCachedPerBatch, false, &truncated);
    read.guards.clear();
    if (truncated) {
      // More dirty records than a batch takes (a backlog of appends past the last page): the
      // batch ends after the last one taken, and the next read starts there.
      leaf->high = cached.back().key + '\0';
      leaf->has_high = true;
    }
    std::vector<Record> pages;
    for (Record& r : read.records) {
      if (r.key >= from && (!truncated || r.key < leaf->high)) pages.push_back(std::move(r));
    }
    *out = Overlay(std::move(pages), std::move(cached));
    return Status::Ok();
  }

  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     core::Fences* leaf) override {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch p,
        index_->tree().DescendToParent(before, bounded ? core::Seek::kBefore : core::Seek::kLast,
                                       IoCause::kScan, false));
    *leaf = p.leaf_fences();
    const Segment seg = Segment::Decode(p.leaf_payload());
    const int last = bounded ? seg.PageFor(before) : seg.pages - 1;
    TreeLine::SegmentRead read;
    GROVE_RETURN_IF_ERROR(index_->ReadPages(seg, 0, last, IoCause::kScan, &read));
    const std::string low = leaf->has_low ? leaf->low : std::string();
    bool truncated = false;
    std::vector<RecordCache::DirtyRecord> cached =
        index_->cache().Range(low, bounded ? &before : nullptr, kCachedPerBatch, true, &truncated);
    read.guards.clear();
    if (truncated) {
      // The batch holds the last dirty records below `before`; the next read ends at the first.
      leaf->low = cached.front().key;
      leaf->has_low = true;
    }
    std::vector<Record> pages;
    for (Record& r : read.records) {
      if ((!bounded || r.key < before) && (!truncated || r.key >= leaf->low)) {
        pages.push_back(std::move(r));
      }
    }
    *out = Overlay(std::move(pages), std::move(cached));
    std::reverse(out->begin(), out->end());
    return Status::Ok();
  }

  TreeLine* const index_;
  int reads_ = 0;  // forward reads so far
  int first_window_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> TreeLine::NewCursor(const CursorOptions& options) {
  return std::unique_ptr<IndexCursor>(std::make_unique<TreeLineCursor>(this, options));
}

}  // namespace grove
