// TreeLine::Verify: the core's inner levels, then every segment's pages against its model and
// fences, and the record cache's dirty records (docs/formats/treeline.md).

#include <fmt/format.h>

#include "index/treeline/treeline.h"

namespace grove {

using treeline::DataPageView;
using treeline::Segment;

struct TreeLine::VerifyTotals {
  uint64_t records = 0, segments = 0, single = 0, pages = 0, overflow = 0;
};

void TreeLine::VerifyPage(const char* data, PageId id, const Segment& seg, int index,
                          const core::Fences& fences, const DirtyMap& dirty, IndexVerifier* v,
                          VerifyTotals* t) const {
  const DataPageView page(data);
  if (const char* why = page.slots().CheckStructure(); *why != '\0') {
    v->Problem(fmt::format("treeline: page {}: {}", id, why));
    return;
  }
  for (int k = 0; k < page.count(); ++k) {
    const Slice key = page.key(k);
    if (!fences.Contains(key) || seg.PageFor(key) != index) {
      v->Problem(
          fmt::format("treeline: page {} (page {} of the segment at {}) holds a key its "
                      "segment places {}",
                      id, index, seg.first,
                      fences.Contains(key) ? fmt::format("on page {}", seg.PageFor(key))
                                           : std::string("outside the segment")));
      continue;
    }
    // A page's record that the cache holds a newer version of stays referenced until that
    // version reaches the page; it is no entry.
    if (dirty.count(std::string(key)) > 0) {
      v->OnShadowedCell(key, page.cell(k));
    } else {
      v->OnCell(key, page.cell(k));
    }
    ++t->records;
  }
}

void TreeLine::VerifySegment(Slice payload, const core::Fences& fences, const DirtyMap& dirty,
                             IndexVerifier* v, VerifyTotals* t) {
  const Segment seg = Segment::Decode(payload);
  ++t->segments;
  const int n = seg.pages;
  if (n != 1 && n != 2 && n != 4 && n != 8 && n != 16) {
    v->Problem(fmt::format("treeline: the segment at page {} has {} pages", seg.first, n));
    return;
  }
  v->ClaimPages(seg.first, n, "treeline segment");
  t->pages += n;
  t->single += n == 1 ? 1 : 0;
  auto fetch = [&](PageId id, int i, bool overflow) -> std::optional<PageReadGuard> {
    StatusOr<PageReadGuard> g = pool_->FetchRead(id, IoCause::kScan);
    if (!g.ok()) {
      v->Problem(fmt::format("treeline: page {} unreadable: {}", id, g.status().ToString()));
      return std::nullopt;
    }
    if (Status s = CheckDataPage(g->data(), id, seg, i, overflow); !s.ok()) {
      v->Problem(std::string(s.message()));
      return std::nullopt;
    }
    return std::move(*g);
  };
  for (int i = 0; i < n; ++i) {
    std::optional<PageReadGuard> base = fetch(seg.first + i, i, false);
    if (!base) continue;
    VerifyPage(base->data(), seg.first + i, seg, i, fences, dirty, v, t);
    const PageId over_id = DataPageView(base->data()).overflow();
    if (over_id == 0) continue;
    v->ClaimPages(over_id, 1, "treeline overflow page");
    ++t->overflow;
    std::optional<PageReadGuard> over = fetch(over_id, i, true);
    if (!over) continue;
    VerifyPage(over->data(), over_id, seg, i, fences, dirty, v, t);
    const DataPageView b(base->data()), o(over->data());
    for (int k = 0; k < o.count(); ++k) {
      bool found;
      b.Find(o.key(k), &found);
      if (found) {
        v->Problem(fmt::format("treeline: page {} and its overflow page {} both hold a key",
                               seg.first + i, over_id));
        break;
      }
    }
    if (DataPageView(over->data()).overflow() != 0) {
      v->Problem(fmt::format("treeline: overflow page {} has an overflow page", over_id));
    }
  }
}

Status TreeLine::Verify(IndexVerifier* v) {
  // Writers and maintenance are paused: the dirty records and the pages are one state.
  const DirtyMap dirty = cache_.DirtySnapshot();
  VerifyTotals t;
  GROVE_RETURN_IF_ERROR(tree_->Verify(v, [&](Slice payload, const core::Fences& f) {
    VerifySegment(payload, f, dirty, v, &t);
    return Status::Ok();
  }));
  for (const auto& [key, cell] : dirty) {
    if (cell) v->OnCell(key, *cell);
  }
  for (std::string& problem : cache_.CheckConsistency()) v->Problem("treeline: " + problem);
  if (t.segments != segments_.load() || t.single != segments_single_.load() ||
      t.pages != data_pages_.load() || t.overflow != overflow_pages_.load()) {
    v->Problem(fmt::format(
        "treeline: {} segments ({} of one page), {} pages and {} overflow pages found, counters "
        "say {} ({}), {} and {}",
        t.segments, t.single, t.pages, t.overflow, segments_.load(), segments_single_.load(),
        data_pages_.load(), overflow_pages_.load()));
  }
  // The counter is of records on pages, shadowed ones included.
  if (t.records != page_entries_.load()) {
    v->Problem(fmt::format("treeline: {} records on pages, the counter says {}", t.records,
                           page_entries_.load()));
  }
  return Status::Ok();
}

}  // namespace grove
