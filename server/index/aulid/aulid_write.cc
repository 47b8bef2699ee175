// Aulid writes: in place under the shared inner lock; leaf splits (Algorithm 1) and Adjust
// rebuilds (Algorithm 2) under it exclusively.

#include <optional>

#include <fmt/format.h>

#include "index/aulid/aulid.h"
#include "index/aulid/inner_build.h"
#include "index/aulid/prefix.h"

namespace grove {

using core::Leaf;
using core::LeafView;

Status Aulid::Put(const WriteContext& w, Slice key, Slice cell,
                  std::optional<std::string>* old_cell) {
  old_cell->reset();
  {
    ReaderLock lock(&inner_mu_);
    GROVE_ASSIGN_OR_RETURN(const Target t, Locate(key, false, nullptr, nullptr));
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, pool_->FetchWrite(t.leaf));
    const core::LeafPut r = core::PutInLeaf(leaf, key, cell, old_cell);
    if (r == core::LeafPut::kInserted) entries_.fetch_add(1, std::memory_order_relaxed);
    if (r != core::LeafPut::kNoRoom) return Status::Ok();
  }
  return PutWithSplit(w, key, cell, old_cell);
}

Status Aulid::Delete(const WriteContext& w, Slice key, std::optional<std::string>* old_cell) {
  old_cell->reset();
  PageId where = kInvalidPageId;
  {
    ReaderLock lock(&inner_mu_);
    GROVE_ASSIGN_OR_RETURN(const Target t, Locate(key, false, nullptr, nullptr));
    where = t.leaf;
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard leaf, pool_->FetchWrite(t.leaf));
    bool found = false;
    const int i = LeafView(leaf.data()).Find(key, &found);
    if (!found) return Status::Ok();
    const bool was_underfull = Underfull(LeafView(leaf.data()));
    SlottedPage sp = Leaf(leaf.mutable_data()).mutable_slots();
    old_cell->emplace(sp.Payload(i));
    sp.Remove(i);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    // A merge is tried when the leaf drops under a quarter and again when it empties, not on
    // every delete from a leaf that could not merge (it would take the lock exclusively each
    // time).
    const LeafView v(leaf.data());
    if (!Underfull(v) || (was_underfull && v.count() > 0)) return Status::Ok();
  }
  // The delete is done; a merge that cannot run leaves the leaf underfull. Only a merge that
  // failed halfway (and so fail-stopped the store) is an error.
  bool halfway = false;
  const Status s = MergeUnderfull(w, key, where, &halfway);
  return halfway ? s : Status::Ok();
}

Status Aulid::MergeUnderfull(const WriteContext& w, Slice key, PageId leaf, bool* halfway) {
  WriterLock lock(&inner_mu_);
  // The leaf's run is the key's (a lookup would skip the leaf if the delete emptied it, so walk
  // the run to it). Not there any more: another write merged or split it meanwhile.
  GROVE_ASSIGN_OR_RETURN(const Target t, Locate(key, true, nullptr, nullptr));
  PageId left_id = kInvalidPageId, right_id = kInvalidPageId;
  bool continues = false;
  PageId cur = t.run_start;
  for (uint64_t walked = 0;; ++walked) {
    if (walked == kMergeMaxWalk) return Status::Ok();
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(cur));
    if (page::Type(g.data()) != static_cast<uint16_t>(core::kLeafPage)) {
      return Status::DataLoss(fmt::format("aulid: page {} in the leaf chain is not a leaf", cur));
    }
    const LeafView v(g.data());
    continues = (v.flags() & kRunContinues) != 0 && v.right() != kInvalidPageId;
    if (cur == leaf) {
      if (!Underfull(v)) return Status::Ok();  // refilled meanwhile
      left_id = v.left();
      right_id = v.right();
      break;
    }
    if (!continues) return Status::Ok();
    cur = v.right();
  }
  // The pair (a, b): b's cells move into a, its left neighbour, and b goes away.
  //   * Inside a run (the leaf is not its run's first, or its run continues to the right), no
  //     inner entry names b: only the chain changes.
  //   * The leaf is a run of its own and the next run has an entry: the two runs become one.
  //     The leaf's entry goes and the next run's entry is repointed to the leaf, whose keys
  //     then cover both ranges. (Before the tail nothing merges: the tail has no entry, and the
  //     largest entry would have to be found again.)
  PageId a = kInvalidPageId, b = kInvalidPageId;
  std::optional<aulid::Entry> joined;  // the next run's entry, when two runs become one
  if (leaf != t.run_start) {
    a = left_id;
    b = leaf;
  } else if (right_id != kInvalidPageId && continues) {
    a = leaf;
    b = right_id;
  } else if (right_id != kInvalidPageId && t.run_key && *t.run_key != UINT64_MAX) {
    GROVE_ASSIGN_OR_RETURN(const aulid::InnerPart::Routed r,
                           inner_.Route(*t.run_key + 1, IoCause::kDemand, nullptr, true));
    if (r.kind != aulid::InnerPart::Routed::kEntry) return Status::Ok();  // the tail is next
    if (r.entry.leaf != right_id) {
      return Status::Internal(
          fmt::format("aulid: the run after leaf {} starts at {}, its entry names {}", leaf,
                      right_id, r.entry.leaf));
    }
    GROVE_ASSIGN_OR_RETURN(const uint64_t p1, inner_.PagesForChange(*t.run_key));
    GROVE_ASSIGN_OR_RETURN(const uint64_t p2, inner_.PagesForChange(r.entry.key));
    if (w.room != nullptr && !w.room->Extend(p1 + p2).ok()) return Status::Ok();  // stays lazy
    a = leaf;
    b = right_id;
    joined = r.entry;
  } else {
    return Status::Ok();  // the last leaf, or alone before the tail: it stays underfull
  }
  if (a == kInvalidPageId) return Status::Internal("aulid: a run's later leaf has no left link");

  // Latches left to right: a, b, then the leaf after b (its left link changes).
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard ga, pool_->FetchWrite(a));
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard gb, pool_->FetchWrite(b));
  PageWriteGuard next;
  if (const PageId after = LeafView(gb.data()).right(); after != kInvalidPageId) {
    GROVE_ASSIGN_OR_RETURN(next, pool_->FetchWrite(after));
  }
  const uint16_t b_flags = LeafView(gb.data()).flags();
  if (!core::MergeLeaves(ga, gb, next)) return Status::Ok();  // does not fit: stays underfull
  Leaf(ga.mutable_data()).set_flags(b_flags);                 // a now ends where b ended, run-wise
  if (joined) {
    aulid::LiveSink sink(pool_);
    Status s = inner_.Remove(*t.run_key, &sink);
    if (s.ok()) s = inner_.Repoint(joined->key, a, &sink);
    if (!s.ok()) {
      // The leaves are merged and the inner part half changed: stop writes; recovery rebuilds.
      if (ctx_.services) ctx_.services->FailStop(s);
      *halfway = true;
      return s;
    }
    merge_run_joins_.fetch_add(1, std::memory_order_relaxed);
  }
  if (b == last_) last_ = a;
  const PageId freed = gb.id();
  gb.Discard();
  ctx_.allocator->Free(freed, 1);
  leaf_pages_.fetch_sub(1, std::memory_order_relaxed);
  merges_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

namespace {

// Where to cut `cells` (all of a leaf plus the new one) into a lower part of m cells and an upper
// part: both must fit in a page. Among the cuts where the projection changes (so the lower part
// can be a run of its own) and neither part is under a quarter page, the most even; else the most
// even of all. *strict says which.
size_t ChooseCut(const std::vector<core::Cell>& cells, size_t capacity,
                 const std::function<uint64_t(Slice)>& proj, bool* strict) {
  std::vector<size_t> prefix(cells.size() + 1, 0);
  for (size_t j = 0; j < cells.size(); ++j) {
    prefix[j + 1] =
        prefix[j] + SlottedPageView::CellBytes(cells[j].first.size(), cells[j].second.size());
  }
  size_t best = 0, best_gap = SIZE_MAX, best_strict = 0, best_strict_gap = SIZE_MAX;
  for (size_t m = 1; m < cells.size(); ++m) {
    const size_t left = prefix[m], right = prefix.back() - prefix[m];
    if (left > capacity || right > capacity) continue;
    const size_t gap = left > right ? left - right : right - left;
    if (gap < best_gap) {
      best_gap = gap;
      best = m;
    }
    if (std::min(left, right) >= capacity / 4 && gap < best_strict_gap &&
        proj(cells[m - 1].first) < proj(cells[m].first)) {
      best_strict_gap = gap;
      best_strict = m;
    }
  }
  *strict = best_strict != 0;
  return *strict ? best_strict : best;
}

}  // namespace

Status Aulid::PutWithSplit(const WriteContext& w, Slice key, Slice cell,
                           std::optional<std::string>* old_cell) {
  WriterLock lock(&inner_mu_);
  uint64_t walked = 0;
  GROVE_ASSIGN_OR_RETURN(const Target t, Locate(key, true, nullptr, &walked));
  PageId left_id = kInvalidPageId;
  {
    // Another writer may have made room meanwhile.
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard x, pool_->FetchWrite(t.leaf));
    const core::LeafPut r = core::PutInLeaf(x, key, cell, old_cell);
    if (r == core::LeafPut::kInserted) entries_.fetch_add(1, std::memory_order_relaxed);
    if (r != core::LeafPut::kNoRoom) return Status::Ok();
    left_id = LeafView(x.data()).left();
  }
  // Latches left to right: the left neighbour (its link changes), then the leaf.
  PageWriteGuard prev;
  if (left_id != kInvalidPageId) {
    GROVE_ASSIGN_OR_RETURN(prev, pool_->FetchWrite(left_id));
  }
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard x, pool_->FetchWrite(t.leaf));
  const LeafView v(x.data());
  std::vector<core::Cell> cells;
  cells.reserve(v.count() + 1);
  bool placed = false;
  for (int j = 0; j < v.count(); ++j) {
    if (!placed && key <= v.key(j)) {
      cells.emplace_back(std::string(key), std::string(cell));
      placed = true;
      if (key == v.key(j)) {
        old_cell->emplace(v.cell(j));  // a replacement that did not fit
        continue;
      }
    }
    cells.emplace_back(std::string(v.key(j)), std::string(v.cell(j)));
  }
  if (!placed) cells.emplace_back(std::string(key), std::string(cell));
  bool strict = false;
  const size_t m = ChooseCut(
      cells, v.capacity(),
      [this](Slice k) {
        inner_mu_.AssertHeld();  // ChooseCut calls it here, under the lock
        return Proj(k);
      },
      &strict);
  if (m == 0) return Status::Internal(fmt::format("aulid: leaf {} cannot be split", x.id()));

  // The inner change. The new lower leaf starts a run of its own when the original starts its
  // run, the cut is projection-strict and the write's room covers the inner insert; otherwise it
  // joins the run.
  const bool starts_run = t.leaf == t.run_start;
  const uint64_t new_key = Proj(cells[m - 1].first);
  const bool append = inner_.empty() || new_key > last_entry_;
  bool own_run = false;
  if (starts_run && strict) {
    GROVE_ASSIGN_OR_RETURN(const uint64_t pages, inner_.PagesForInsert(new_key, append));
    own_run = w.room == nullptr || w.room->Extend(pages).ok();
  }
  GROVE_ASSIGN_OR_RETURN(PageWriteGuard fresh, NewLeaf());
  aulid::InnerPart::AdjustHint hint;
  {
    aulid::LiveSink sink(pool_);
    Status s;
    if (own_run) {
      s = inner_.Insert(aulid::Entry{new_key, fresh.id()}, &sink, &hint, append);
      if (s.ok() && (inner_.size() == 1 || new_key > last_entry_)) last_entry_ = new_key;
    } else if (starts_run && t.run_key) {
      s = inner_.Repoint(*t.run_key, fresh.id(), &sink);
    }
    if (!s.ok()) {
      // The inner part may be half changed: stop writes; recovery rebuilds from the WAL.
      if (ctx_.services) ctx_.services->FailStop(s);
      return s;
    }
  }
  if (starts_run && !own_run && !t.run_key) tail_ = fresh.id();
  if (!own_run) run_joins_.fetch_add(1, std::memory_order_relaxed);

  // The leaves: the lower part into the new page, linked in to the left; the original keeps the
  // upper part, so the entry naming it stays valid.
  Leaf lower(fresh.mutable_data()), upper(x.mutable_data());
  SlottedPage lsp = lower.mutable_slots();
  for (size_t j = 0; j < m; ++j) lsp.Insert(lsp.count(), cells[j].first, cells[j].second);
  SlottedPage usp = upper.mutable_slots();
  usp.Clear();
  for (size_t j = m; j < cells.size(); ++j) {
    usp.Insert(usp.count(), cells[j].first, cells[j].second);
  }
  lower.set_left(left_id);
  lower.set_right(x.id());
  upper.set_left(fresh.id());
  if (prev) Leaf(prev.mutable_data()).set_right(fresh.id());
  lower.set_flags(own_run ? 0 : kRunContinues);
  if (!old_cell->has_value()) entries_.fetch_add(1, std::memory_order_relaxed);
  splits_.fetch_add(1, std::memory_order_relaxed);
  leaf_pages_.fetch_add(1, std::memory_order_relaxed);
  prev.Release();
  x.Release();
  fresh.Release();
  if (hint.needed) GROVE_RETURN_IF_ERROR(AdjustIfNeeded(w, new_key, hint));
  if (!own_run && walked >= kReindexRunLeaves) return TryReindex(w);
  return Status::Ok();
}

Status Aulid::TryReindex(const WriteContext& w) {
  const uint64_t leaves = leaf_pages_.load();
  if (leaves > kReindexMaxLeaves || leaves < 2 * reindex_tried_at_) return Status::Ok();
  reindex_tried_at_ = leaves;
  // The chain, from its first leaf: each leaf's smallest and largest key.
  std::vector<PageId> ids;
  std::vector<uint16_t> flags;
  std::vector<aulid::LeafKeys> keys;
  GROVE_ASSIGN_OR_RETURN(const aulid::InnerPart::Routed first,
                         inner_.Route(0, IoCause::kDemand, nullptr, true));
  PageId cur = first.kind == aulid::InnerPart::Routed::kEntry ? first.entry.leaf : tail_;
  while (cur != kInvalidPageId && ids.size() <= leaves) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(cur));
    const LeafView v(g.data());
    ids.push_back(cur);
    flags.push_back(v.flags());
    aulid::LeafKeys& k = keys.emplace_back();
    if (v.count() > 0) {
      k.min.assign(v.key(0));
      k.max.assign(v.key(v.count() - 1));
    }
    cur = v.right();
  }
  if (ids.size() != leaves) return Status::Internal("aulid: the leaf chain and count disagree");
  const std::string prefix = aulid::ChoosePrefix(keys, prefix_);
  if (prefix == prefix_) return Status::Ok();

  // Runs under the new prefix: a boundary between two non-empty leaves whose keys project apart.
  std::vector<aulid::Entry> entries;
  std::vector<std::pair<size_t, uint16_t>> reflag;  // leaf, its new run flag
  PageId run_start = ids[0];
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool last = i + 1 == ids.size();
    const bool strict = !last && aulid::ProjectsApart(keys[i], keys[i + 1], prefix);
    const uint16_t want = (last || strict) ? 0 : kRunContinues;
    if ((flags[i] & kRunContinues) != want) reflag.emplace_back(i, want);
    if (strict) {
      entries.push_back({ProjWith(prefix, keys[i].max), run_start});
      run_start = ids[i + 1];
    }
  }
  const uint64_t pages = reflag.size() + inner_.space().mixed_pages() +
                         aulid::InnerBuilder::PagesForNode(entries, cfg_.inner) + 1;
  if (w.room != nullptr && !w.room->Extend(pages).ok()) return Status::Ok();
  for (const auto& [i, want] : reflag) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, pool_->FetchWrite(ids[i]));
    Leaf(g.mutable_data())
        .set_flags(static_cast<uint16_t>((LeafView(g.data()).flags() & ~kRunContinues) | want));
  }
  aulid::LiveSink sink(pool_);
  Status s = inner_.Clear(&sink);
  if (s.ok()) s = inner_.Build(entries, &sink);
  if (!s.ok()) {
    if (ctx_.services) ctx_.services->FailStop(s);
    return s;
  }
  prefix_ = prefix;
  tail_ = run_start;
  if (!entries.empty()) last_entry_ = entries.back().key;
  reindexes_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status Aulid::AdjustIfNeeded(const WriteContext& w, uint64_t key,
                             const aulid::InnerPart::AdjustHint& hint) {
  // REQUIRES: inner_mu_ held exclusively. A rebuild the write's room cannot cover waits until
  // the node grew further (InnerPart::Rebuild).
  aulid::LiveSink sink(pool_);
  bool rebuilt = false;
  const Status s = inner_.Rebuild(
      key, hint, &sink,
      [&](uint64_t pages) { return w.room == nullptr || w.room->Extend(pages).ok(); }, &rebuilt);
  if (!s.ok() && ctx_.services) ctx_.services->FailStop(s);
  return s;
}

}  // namespace grove
