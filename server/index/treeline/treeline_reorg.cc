// TreeLine reorganisation (paper §4.5): a full segment and its neighbours with overflow pages are
// rebuilt, with the dirty records of their range, into new segments that replace them at once.
//
//   Phase I    under the segments' level-1 node P, latched exclusively for a moment: choose the
//              run of segments (the full one, then neighbours with overflow pages, up to `radius`
//              on each side, stopping at the first without) and mark them busy, so write-backs
//              leave them alone from here on (in-flight ones held P shared and are done).
//   Phase II   read their pages (one IO per extent), pin the cache's dirty records of the range,
//              merge (the cache's version wins, tombstones drop), and build new segments (models,
//              page counts, placement: segment.h), with the goal lowered for forecast inserts.
//   Phase III  write the new segments to freshly allocated extents (new pages, dirty in the pool;
//              nothing points at them yet).
//   Phase IV   latch the path that may change, replace the old segments' cells in P with the new
//              ones (BTreeCore::ReplaceChildren: P may split), then free the old extents and
//              overflow pages, release the page cells the merge dropped, and unpin: the pinned
//              records that were not written again meanwhile are now clean.
//
// Readers are held up only by the latched path during Phase IV; scans and lookups of the busy
// segments go on meanwhile. The whole reorganisation is one maintenance unit, so a checkpoint
// sees all of it or none; on failure before Phase IV nothing visible changed and the new pages
// go back.

#include <fmt/format.h>

#include "index/treeline/treeline.h"
#include "page/extent_allocator.h"

namespace grove {

using treeline::RecordCache;

using treeline::BuiltSegment;
using treeline::DataPage;
using treeline::Record;
using treeline::Segment;

namespace {

// The largest key a built segment holds ("" when it holds none).
std::string LastKey(const BuiltSegment& b) {
  for (auto it = b.pages.rbegin(); it != b.pages.rend(); ++it) {
    if (!it->empty()) return it->back().key;
  }
  return std::string();
}

}  // namespace

uint64_t TreeLine::ReorganisationBudgetPages() const {
  return std::min<uint64_t>(ExtentAllocator::kMaxExtentPages, pool_->capacity_pages() / 4);
}

double TreeLine::ForecastScale(const std::vector<Record>& records, uint64_t old_pages,
                               const std::string& low, const std::string* high) const {
  if (!cfg_.forecasting) return 1.0;
  double bytes = 0;
  for (const Record& r : records) bytes += static_cast<double>(r.bytes());
  const double mean = records.empty() ? 64.0 : bytes / static_cast<double>(records.size());
  const treeline::GoalEpsilon ge = treeline::GoalFor(mean, BuildOptionsFor(1.0));
  const double goal = static_cast<double>(ge.goal);
  const double epsilon = static_cast<double>(ge.epsilon_q) / 4.0;
  // The paper's pessimistic estimate of the records the range holds, and goal' = goal E / (E + F),
  // kept at 2 epsilon at least; epsilon itself stays.
  const double e = 1.5 * static_cast<double>(old_pages) * (goal + 2 * epsilon);
  const double f =
      forecaster_.Forecast(Project(low), high != nullptr ? Project(*high) : UINT64_MAX);
  if (f <= 0 || e <= 0) return 1.0;
  const double floor_scale = std::min(1.0, 2 * epsilon / goal);
  return std::max(floor_scale, e / (e + f));
}

Status TreeLine::Reorganise(const ReorgTask& task, int radius, WriteRoom* room,
                            uint64_t* need_pages) {
  // At most this many new pages: a share of the pool, so that the unit's room can be had.
  const uint64_t budget_pages = ReorganisationBudgetPages();
  // --- Phase I: the run of segments, marked busy under P.
  std::vector<Segment> pre;
  std::string low, high;
  bool has_high = false;
  {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p,
                           tree_->DescendToParent(task.key, core::Seek::kAtOrAfter,
                                                  IoCause::kDemand, /*exclusive=*/true));
    const core::InnerNodeView n(p.data());
    if (Segment::Decode(n.payload(p.child)).first != task.segment) {
      return Status::Ok();  // already rebuilt by an earlier reorganisation
    }
    int a = p.child, b = p.child;
    MutexLock lock(&state_mu_);
    auto has_overflow = [&](int j) {
      state_mu_.AssertHeld();  // called only under the lock above
      return overflowed_.count(Segment::Decode(n.payload(j)).first) > 0;
    };
    // Pages the run may read: base pages and (at most) as many overflow pages. Neighbours join
    // while the run stays within half the budget; the other half is for the cache's records.
    auto pages_of = [&](int j) -> uint64_t { return 2u * Segment::Decode(n.payload(j)).pages; };
    uint64_t run_pages = pages_of(p.child);
    for (bool grew = true; grew;) {
      grew = false;
      if (a > 0 && p.child - (a - 1) <= radius && has_overflow(a - 1) &&
          run_pages + pages_of(a - 1) <= budget_pages / 2) {
        run_pages += pages_of(--a);
        grew = true;
      }
      if (b + 1 < n.count() && b + 1 - p.child <= radius && has_overflow(b + 1) &&
          run_pages + pages_of(b + 1) <= budget_pages / 2) {
        run_pages += pages_of(++b);
        grew = true;
      }
    }
    for (int j = a; j <= b; ++j) {
      pre.push_back(Segment::Decode(n.payload(j)));
      busy_.insert(pre.back().first);
    }
    const core::Fences fa = n.ChildFences(a, p.fences), fb = n.ChildFences(b, p.fences);
    low = fa.has_low ? fa.low : std::string();
    has_high = fb.has_high;
    if (has_high) high = fb.high;
  }
  const std::string* high_ptr = has_high ? &high : nullptr;
  auto unbusy = [&] {
    MutexLock lock(&state_mu_);
    for (const Segment& s : pre) busy_.erase(s.first);
  };

  // --- Phase II: read, pin, merge, build.
  std::vector<Record> records;
  std::vector<PageId> old_overflow;
  uint64_t old_pages = 0, old_single = 0;
  for (const Segment& s : pre) {
    SegmentRead read;
    Status st = ReadPages(s, 0, s.pages - 1, IoCause::kDemand, &read);
    if (!st.ok()) {
      unbusy();
      return st;
    }
    for (Record& r : read.records) records.push_back(std::move(r));
    old_overflow.insert(old_overflow.end(), read.overflow.begin(), read.overflow.end());
    old_pages += s.pages;
    old_single += s.pages == 1 ? 1 : 0;
  }
  const uint64_t old_records = records.size();
  // The cache's records of the range join as far as the budget goes (at least one: progress);
  // the others stay dirty and reach the new pages by write-back.
  uint64_t page_bytes = 0;
  for (const Record& r : records) page_bytes += r.bytes();
  const double budget_bytes =
      static_cast<double>(budget_pages * treeline::kPageCapacity) * cfg_.goal;
  const uint64_t pin_bytes =
      budget_bytes > static_cast<double>(page_bytes)
          ? static_cast<uint64_t>(budget_bytes - static_cast<double>(page_bytes))
          : 0;
  const std::vector<RecordCache::DirtyRecord> pinned = cache_.PinRange(low, high_ptr, pin_bytes);
  auto abandon = [&](const Status& cause) {
    for (const std::string& c : cache_.Unpin(pinned, /*applied=*/false)) {
      ctx_.services->ReleaseCell(c);
    }
    unbusy();
    return cause;
  };
  std::vector<Record> merged;
  std::vector<std::string> dropped;  // page cells the cache's records replace or delete
  merged.reserve(records.size() + pinned.size());
  {
    size_t a = 0, b = 0;
    while (a < records.size() || b < pinned.size()) {
      if (b == pinned.size() || (a < records.size() && records[a].key < pinned[b].key)) {
        merged.push_back(std::move(records[a++]));
        continue;
      }
      if (a < records.size() && records[a].key == pinned[b].key) {
        dropped.push_back(std::move(records[a++].cell));
      }
      if (!pinned[b].tombstone()) merged.push_back({pinned[b].key, pinned[b].cell.ToString()});
      ++b;
    }
  }
  const uint64_t new_records = merged.size();
  const double scale = ForecastScale(merged, old_pages, low, high_ptr);
  std::vector<BuiltSegment> built =
      treeline::BuildSegments(std::move(merged), BuildOptionsFor(scale));
  if (built.empty()) {  // everything was deleted: one empty page keeps the range
    built.emplace_back();
    built.back().pages.resize(1);
  }
  uint64_t new_pages = 0, new_single = 0;
  for (const BuiltSegment& b : built) {
    new_pages += b.segment.pages;
    new_single += b.segment.pages == 1 ? 1 : 0;
  }
  // New pages, plus the inner nodes a split of P may add and dirty on the way up.
  const uint64_t need = new_pages + 2 * tree_->height() + built.size() / 16 + 2;
  if (need > room->reserved() && !room->Extend(need - room->reserved()).ok()) {
    *need_pages = need;
    return abandon(Status::ResourceExhausted(
        fmt::format("treeline: a reorganisation needs {} pages of write room", need)));
  }

  // --- Phase III: the new segments' pages.
  std::vector<std::pair<PageId, uint8_t>> extents;
  auto give_back = [&] {
    for (const auto& [first, pages] : extents) {
      for (uint8_t i = 0; i < pages; ++i) pool_->Discard(first + i);
      ctx_.allocator->Free(first, pages);
    }
  };
  std::vector<core::Cell> cells;
  size_t cell_bytes = 0;
  std::string prev_last;
  for (BuiltSegment& b : built) {
    StatusOr<PageId> first = ctx_.allocator->Allocate(b.segment.pages);
    if (!first.ok()) {
      give_back();
      return abandon(first.status());
    }
    extents.emplace_back(*first, b.segment.pages);
    b.segment.first = *first;
    for (int i = 0; i < b.segment.pages; ++i) {
      StatusOr<PageWriteGuard> g = pool_->NewPage(*first + i, treeline::kDataPage);
      if (!g.ok()) {
        give_back();
        return abandon(g.status());
      }
      DataPage::Format(g->mutable_data(), static_cast<uint16_t>(i), b.segment.pages, false);
      SlottedPage sp = DataPage(g->mutable_data()).mutable_slots();
      for (const Record& r : b.pages[i]) sp.Insert(sp.count(), r.key, r.cell);
    }
    std::string sep =
        cells.empty() ? std::string() : core::ShortestSeparator(prev_last, b.first_key);
    cell_bytes += SlottedPageView::CellBytes(sep.size(), Segment::kEncodedBytes);
    cells.emplace_back(std::move(sep), b.segment.Encode());
    prev_last = LastKey(b);
  }

  // --- Phase IV: swap.
  {
    std::vector<PageWriteGuard> path;
    core::Fences fences;
    Status st = tree_->LatchPathToReplace(task.key, cells.size(), cell_bytes, &path, &fences);
    int at = -1;
    if (st.ok()) {
      const core::InnerNodeView n(path.back().data());
      for (int j = 0; j < n.count() && at < 0; ++j) {
        if (Segment::Decode(n.payload(j)).first == pre[0].first) at = j;
      }
      for (size_t k = 0; at >= 0 && k < pre.size(); ++k) {
        if (at + static_cast<int>(k) >= n.count() ||
            Segment::Decode(n.payload(at + static_cast<int>(k))).first != pre[k].first) {
          at = -1;
        }
      }
      if (at < 0) {
        st = Status::Internal(fmt::format(
            "treeline: the segments to reorganise (from page {}) moved under their level-1 node",
            pre[0].first));
      }
    }
    if (st.ok())
      st = tree_->ReplaceChildren(&path, at, static_cast<int>(pre.size()), std::move(cells));
    if (!st.ok()) {
      path.clear();
      give_back();
      return abandon(st);
    }
  }

  // The old pages are unreachable: readers and write-backs go through P, which now names only
  // the new segments.
  for (const Segment& s : pre) {
    for (int i = 0; i < s.pages; ++i) pool_->Discard(s.first + i);
    ctx_.allocator->Free(s.first, s.pages);
  }
  for (PageId o : old_overflow) {
    pool_->Discard(o);
    ctx_.allocator->Free(o, 1);
  }
  // Pinned records replaced meanwhile keep their cells on the new pages, which release them when
  // the newer version reaches them.
  cache_.Unpin(pinned, /*applied=*/true);
  for (const std::string& c : dropped) ctx_.services->ReleaseCell(c);
  {
    MutexLock lock(&state_mu_);
    for (const Segment& s : pre) {
      overflowed_.erase(s.first);
      busy_.erase(s.first);
    }
  }
  segments_.fetch_add(built.size() - pre.size(), std::memory_order_relaxed);
  segments_single_.fetch_add(new_single - old_single, std::memory_order_relaxed);
  data_pages_.fetch_add(new_pages - old_pages, std::memory_order_relaxed);
  overflow_pages_.fetch_sub(old_overflow.size(), std::memory_order_relaxed);
  page_entries_.fetch_add(new_records - old_records, std::memory_order_relaxed);
  reorganisations_.fetch_add(1, std::memory_order_relaxed);
  reorg_segments_in_.fetch_add(pre.size(), std::memory_order_relaxed);
  reorg_segments_out_.fetch_add(built.size(), std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace grove
