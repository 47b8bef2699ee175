// TreeLine writes: Put and Delete into the record cache, eviction, and the batched write-back of
// a page's dirty records into its base and overflow pages.

#include <algorithm>

#include <fmt/format.h>

#include "index/treeline/treeline.h"
#include "page/extent_allocator.h"
#include "util/clock.h"

namespace grove {

using treeline::RecordCache;

using treeline::DataPage;
using treeline::DataPageView;
using treeline::Segment;

namespace {

// A write does a few write-backs of its own at most; the background thread does the rest.
constexpr int kWriteBacksPerWrite = 4;

}  // namespace

Status TreeLine::Put(const WriteContext& w, Slice key, Slice cell,
                     std::optional<std::string>* old_cell) {
  NoteLsn(w.lsn);
  bool was_value = false;
  std::optional<std::string> replaced = cache_.Write(key, cell, w.lsn, &was_value);
  if (replaced) *old_cell = std::move(replaced);
  // Writes are blind: a Put of a key the cache does not hold as a value counts as an insert.
  if (cfg_.forecasting && !was_value) forecaster_.RecordInsert(Project(key));
  MakeRoom(key, w.room);
  return Status::Ok();
}

Status TreeLine::Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) {
  NoteLsn(w.lsn);
  std::optional<std::string> replaced = cache_.Write(key, std::nullopt, w.lsn);
  if (replaced) *old_cell = std::move(replaced);
  MakeRoom(key, w.room);
  return Status::Ok();
}

void TreeLine::NoteLsn(Lsn lsn) {
  uint64_t cur = latest_lsn_.load(std::memory_order_relaxed);
  while (lsn > cur && !latest_lsn_.compare_exchange_weak(cur, lsn, std::memory_order_relaxed)) {
  }
}

void TreeLine::MakeRoom(Slice key, WriteRoom* room) {
  if (!cfg_.cache) {
    // Every write reaches its page now, with the engine's reservation of two pages (base and
    // overflow). When its segment is full or being reorganised, the record waits in the cache
    // for the reorganisation and the background thread writes it back after it.
    uint64_t prepaid = 2;
    StatusOr<WriteBackResult> r = WriteBack(key, room, &prepaid);
    if (!r.ok()) NoteBackgroundError("write-back", r.status());
    if (!r.ok() || *r == WriteBackResult::kNoRoom) bg_.Kick();
    return;
  }
  // A few victims per write; one whose segment waits for a reorganisation is passed over.
  uint64_t prepaid = 0;
  for (int n = 0; n < kWriteBacksPerWrite; ++n) {
    std::optional<std::string> victim = cache_.Evict();
    if (!victim) return;
    StatusOr<WriteBackResult> r = WriteBack(*victim, room, &prepaid);
    if (!r.ok()) NoteBackgroundError("write-back", r.status());
    if (!r.ok() || *r == WriteBackResult::kNoRoom) break;
  }
  if (cache_.Excess() > 0) bg_.Kick();
}

void TreeLine::NoteBackgroundError(const char* what, const Status& s) {
  if (ctx_.logger == nullptr || !error_log_.Allow()) return;
  ctx_.logger->Log(LogLevel::kWarn, fmt::format("treeline: {} failed (records stay in the record "
                                                "cache and are retried): {}",
                                                what, s.ToString()));
}

void TreeLine::PrefetchBasePages(const std::vector<std::string>& keys) {
  std::vector<PageId> ids;
  ids.reserve(keys.size());
  for (const std::string& key : keys) {
    StatusOr<core::ParentLatch> p =
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, /*exclusive=*/false);
    if (!p.ok()) continue;
    const Segment seg = Segment::Decode(p->leaf_payload());
    ids.push_back(seg.first + seg.PageFor(key));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // kPrefetch: read ahead of the write-backs' need (and so no evidence for a larger pool).
  if (ids.size() > 1) pool_->LoadMany(ids, IoCause::kPrefetch).IgnoreError();
}

StatusOr<TreeLine::WriteBackResult> TreeLine::WriteBack(Slice key, WriteRoom* room,
                                                        uint64_t* prepaid) {
  auto extend = [&](uint64_t pages) {
    const uint64_t covered = std::min(*prepaid, pages);
    *prepaid -= covered;
    return pages == covered || room->Extend(pages - covered).ok();
  };
  std::vector<std::string> released;
  size_t done = 0;
  bool all = false;  // the last pass applied every record it was offered
  bool no_room = false;
  Status failure;
  PageId segment_id;
  {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch p,
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, /*exclusive=*/false));
    const Segment seg = Segment::Decode(p.leaf_payload());
    segment_id = seg.first;
    // A segment being reorganised keeps its records in the cache until its new pages are in.
    if (Waiting(seg.first)) return WriteBackResult::kBusy;
    const int i = seg.PageFor(key);
    std::string low, high;
    bool has_high;
    PageRange(seg, i, p.leaf_fences(), &low, &high, &has_high);
    if (!cfg_.batched_writeback) {
      // Only the evicted record (the paper's factor analysis without same-page batching).
      low.assign(key.data(), key.size());
      high = low + '\0';
      has_high = true;
    }
    if (!extend(1)) return WriteBackResult::kNoRoom;
    const PageId base_id = seg.first + i;
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard base, pool_->FetchWrite(base_id));
    GROVE_RETURN_IF_ERROR(CheckDataPage(base.data(), base_id, seg, i, false));
    PageWriteGuard over;
    if (const PageId o = DataPageView(base.data()).overflow(); o != 0) {
      if (!extend(1)) return WriteBackResult::kNoRoom;
      GROVE_ASSIGN_OR_RETURN(over, pool_->FetchWrite(o));
      GROVE_RETURN_IF_ERROR(CheckDataPage(over.data(), o, seg, i, true));
    }

    // The overflow page, made the first time the base page is full: outside the cache's lock
    // (a new frame may wait for a checkpoint), between two passes over the dirty records.
    bool need_overflow = false;
    auto make_overflow = [&]() -> bool {
      if (!extend(1)) {
        no_room = true;
        return false;
      }
      StatusOr<PageId> id = ctx_.allocator->Allocate(1);
      if (!id.ok()) {
        failure = id.status();
        return false;
      }
      StatusOr<PageWriteGuard> g = pool_->NewPage(*id, treeline::kDataPage);
      if (!g.ok()) {
        ctx_.allocator->Free(*id, 1);
        failure = g.status();
        return false;
      }
      DataPage::Format(g->mutable_data(), static_cast<uint16_t>(i), seg.pages, true);
      DataPage(base.mutable_data()).set_overflow(*id);
      over = std::move(*g);
      overflow_pages_.fetch_add(1, std::memory_order_relaxed);
      overflows_created_.fetch_add(1, std::memory_order_relaxed);
      MutexLock lock(&state_mu_);
      overflowed_.insert(seg.first);
      return true;
    };
    // Puts `r` into the base page, else the overflow page; removes the key from where it was.
    auto apply_one = [&](const RecordCache::DirtyRecord& r) -> bool {
      bool in_base = false, in_over = false;
      const int bpos = DataPageView(base.data()).Find(r.key, &in_base);
      int opos = 0;
      if (over) opos = DataPageView(over.data()).Find(r.key, &in_over);
      PageWriteGuard* home = in_base ? &base : in_over ? &over : nullptr;
      const int hpos = in_base ? bpos : opos;
      if (r.tombstone()) {  // a delete
        if (home != nullptr) {
          SlottedPage sp = DataPage(home->mutable_data()).mutable_slots();
          released.emplace_back(sp.Payload(hpos));
          sp.Remove(hpos);
          page_entries_.fetch_sub(1, std::memory_order_relaxed);
        }
        return true;
      }
      const size_t need = SlottedPageView::CellBytes(r.key.size(), r.cell.size());
      if (home != nullptr) {
        // An update: in place when the page has room for the new version once the old is gone.
        const SlottedPageView hv = DataPageView(home->data()).slots();
        const Slice old = hv.Payload(hpos);
        if (hv.FreeBytes() + SlottedPageView::CellBytes(r.key.size(), old.size()) >= need) {
          SlottedPage sp = DataPage(home->mutable_data()).mutable_slots();
          released.emplace_back(sp.Payload(hpos));
          sp.Remove(hpos);
          sp.Insert(hpos, r.key, r.cell.slice());
          return true;
        }
      }
      // An insert, or an update that moves to the other page.
      PageWriteGuard* target = nullptr;
      if (home != &base && DataPageView(base.data()).slots().FreeBytes() >= need) {
        target = &base;
      } else if (home != &over) {
        if (!over) {
          need_overflow = true;
          return false;
        }
        if (DataPageView(over.data()).slots().FreeBytes() >= need) target = &over;
      }
      if (target == nullptr) return false;  // both full: the segment needs reorganising
      if (home != nullptr) {
        SlottedPage sp = DataPage(home->mutable_data()).mutable_slots();
        released.emplace_back(sp.Payload(hpos));
        sp.Remove(hpos);
      } else {
        page_entries_.fetch_add(1, std::memory_order_relaxed);
      }
      bool found;
      const int at = DataPageView(target->data()).Find(r.key, &found);
      DataPage(target->mutable_data()).mutable_slots().Insert(at, r.key, r.cell.slice());
      return true;
    };
    // At most what a page and its overflow page can hold is offered at once.
    constexpr uint64_t kMaxOffered = 2 * treeline::kPageCapacity;
    auto pass = [&] {
      return cache_.WriteBackRange(low, has_high ? &high : nullptr, base_id, kMaxOffered,
                                   [&](const std::vector<RecordCache::DirtyRecord>& records) {
                                     size_t n = 0;
                                     while (n < records.size() && apply_one(records[n])) ++n;
                                     all = n == records.size();
                                     return n;
                                   });
    };
    done = pass();
    if (need_overflow && !over && make_overflow()) done += pass();
  }
  // Released once the pages are let go: the value store has locks of its own.
  for (const std::string& c : released) ctx_.services->ReleaseCell(c);
  if (done > 0) {
    writebacks_.fetch_add(1, std::memory_order_relaxed);
    writeback_records_.fetch_add(done, std::memory_order_relaxed);
  }
  GROVE_RETURN_IF_ERROR(failure);
  if (all) return WriteBackResult::kDone;
  if (no_room) return WriteBackResult::kNoRoom;
  QueueReorganisation(segment_id, std::string(key));
  return WriteBackResult::kFull;
}

void TreeLine::QueueReorganisation(PageId segment, std::string key) {
  {
    MutexLock lock(&state_mu_);
    if (!queued_.insert(segment).second) return;
    reorg_queue_.push_back({segment, std::move(key)});
  }
  bg_.Kick();
}

}  // namespace grove
