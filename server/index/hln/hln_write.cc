// HlnTree writes that stay inside one subnode, and the way to a structure change.

#include <algorithm>

#include <fmt/format.h>

#include "index/hln/hln_tree.h"

namespace grove {

using core::Fences;
using core::InnerNodeView;
using hln::Subnode;
using hln::SubnodeView;

StatusOr<HlnTree::Outcome> HlnTree::TryUpsert(const hln::LeafRef& ref, const Fences& leaf_fences,
                                              Slice key, Slice cell,
                                              std::optional<std::string>* old_cell) {
  const int k = PackedCount(ref);
  const int guess = Guess(ref, leaf_fences, key);
  GROVE_ASSIGN_OR_RETURN(Located loc, Locate(ref, guess, key, IoCause::kDemand));
  loc.guard.Release();
  // An absent key may go to any subnode that keeps the packed subnodes in order; of those, take
  // the one nearest the guess, so that later lookups of the key hit on the first read.
  const int owner =
      loc.in_range ? loc.sub : std::clamp(guess, std::max(loc.u, 0), std::min(loc.t, k - 1));
  auto replace = [&](PageWriteGuard& g, int pos) -> Outcome {
    Subnode s(g.mutable_data());
    SlottedPage sp = s.mutable_slots();
    if (!sp.CanReplacePayload(pos, cell.size())) return Outcome::kRestructure;
    const Slice old = s.cell(pos);
    old_cell->emplace(old);
    used_bytes_.fetch_add(cell.size() - old.size(), std::memory_order_relaxed);  // mod 2^64
    sp.ReplacePayload(pos, cell);
    writes_single_.fetch_add(1, std::memory_order_relaxed);
    return Outcome::kDone;
  };
  auto insert = [&](PageWriteGuard& g) {
    NoteKey(key);
    Subnode s(g.mutable_data());
    bool found;
    const int pos = s.LowerBound(order_, key, &found);
    s.mutable_slots().Insert(pos, key, cell);
    entries_.fetch_add(1, std::memory_order_relaxed);
    used_bytes_.fetch_add(SlottedPageView::CellBytes(key.size(), cell.size()),
                          std::memory_order_relaxed);
    writes_single_.fetch_add(1, std::memory_order_relaxed);
  };

  if (loc.in_range) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, pool_->FetchWrite(PackedPage(ref, owner)));
    bool found;
    const int pos = SubnodeView(g.data()).LowerBound(order_, key, &found);
    if (found) return replace(g, pos);
  }
  if (ref.stash) {  // the key may live in the overflow subnode
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard o, pool_->FetchWrite(ref.leaf));
    bool found;
    const int pos = SubnodeView(o.data()).LowerBound(order_, key, &found);
    if (found) return replace(o, pos);
  }
  {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, pool_->FetchWrite(PackedPage(ref, owner)));
    if (SubnodeView(g.data()).slots().HasRoomFor(key.size(), cell.size())) {
      insert(g);
      return Outcome::kDone;
    }
  }
  if (ref.stash) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard o, pool_->FetchWrite(ref.leaf));
    if (SubnodeView(o.data()).slots().HasRoomFor(key.size(), cell.size())) {
      insert(o);
      return Outcome::kDone;
    }
  }
  return Outcome::kRestructure;
}

StatusOr<HlnTree::Outcome> HlnTree::TryDelete(const hln::LeafRef& ref, const Fences& leaf_fences,
                                              Slice key, std::optional<std::string>* old_cell) {
  GROVE_ASSIGN_OR_RETURN(Located loc,
                         Locate(ref, Guess(ref, leaf_fences, key), key, IoCause::kDemand));
  loc.guard.Release();
  auto remove = [&](PageWriteGuard& g) -> bool {
    Subnode s(g.mutable_data());
    bool found;
    const int pos = s.LowerBound(order_, key, &found);
    if (!found) return false;
    old_cell->emplace(s.cell(pos));
    used_bytes_.fetch_sub(SlottedPageView::CellBytes(key.size(), s.cell(pos).size()),
                          std::memory_order_relaxed);
    s.mutable_slots().Remove(pos);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    writes_single_.fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  if (loc.in_range) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, pool_->FetchWrite(PackedPage(ref, loc.sub)));
    if (remove(g)) {
      // An empty packed subnode makes lookups that are guessed into it walk further.
      return SubnodeView(g.data()).empty() ? Outcome::kTidy : Outcome::kDone;
    }
  }
  if (ref.stash) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard o, pool_->FetchWrite(ref.leaf));
    remove(o);
  }
  return Outcome::kDone;
}

Status HlnTree::Put(const WriteContext&, Slice key, Slice cell,
                    std::optional<std::string>* old_cell) {
  old_cell->reset();
  PageId leaf;
  {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch parent,
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, false));
    const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(parent.child));
    MutexLock lock(&LeafLock(ref.leaf));
    GROVE_ASSIGN_OR_RETURN(const Outcome o,
                           TryUpsert(ref, parent.leaf_fences(), key, cell, old_cell));
    if (o == Outcome::kDone) return Status::Ok();
    leaf = ref.leaf;
  }
  // The leaf must be rewritten. Load it now, without latches, so that the structure change holds
  // the parent exclusively mostly for CPU work. (A failure here shows again below.)
  std::vector<PageId> ids;
  for (int i = 0; i < cfg_.leaf_pages; ++i) ids.push_back(leaf + i);
  pool_->LoadMany(ids, IoCause::kDemand).IgnoreError();
  Status s = Restructure(key, cell, old_cell, /*full_path=*/false);
  if (s.code() == StatusCode::kAborted) s = Restructure(key, cell, old_cell, /*full_path=*/true);
  return s;
}

Status HlnTree::Delete(const WriteContext&, Slice key, std::optional<std::string>* old_cell) {
  old_cell->reset();
  Outcome o;
  {
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch parent,
        tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, false));
    const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(parent.child));
    MutexLock lock(&LeafLock(ref.leaf));
    GROVE_ASSIGN_OR_RETURN(o, TryDelete(ref, parent.leaf_fences(), key, old_cell));
  }
  if (o != Outcome::kTidy) return Status::Ok();
  // The delete is complete; tidying is an optimisation that changes nothing when it fails.
  if (Status s = Tidy(key); !s.ok()) {
    tidy_failures_.fetch_add(1, std::memory_order_relaxed);
    if (ctx_.logger != nullptr) {
      ctx_.logger->Log(LogLevel::kWarn,
                       "hln: tidying a leaf after a delete failed: " + s.ToString());
    }
  }
  return Status::Ok();
}

}  // namespace grove
