// HlnTree reads: the subnode walk (checkSubNode), point lookups, Prepare, whole-leaf reads.

#include <algorithm>

#include <fmt/format.h>

#include "index/hln/hln_tree.h"

namespace grove {

using core::InnerNodeView;
using hln::Entry;
using hln::SubnodeView;

namespace {

// Reads subnode pages for the walk and checks that each is what the leaf entry says it is.
class SubnodeReader {
 public:
  SubnodeReader(BufferPool* pool, IoCause cause, int leaf_pages, PrefetchBatch* batch = nullptr)
      : pool_(pool), cause_(cause), leaf_pages_(leaf_pages), batch_(batch) {}

  StatusOr<PageReadGuard> Read(PageId id, int* reads) {
    ++*reads;
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g,
                           pool_->FetchRead(id, cause_, Retention::kNormal, batch_));
    if (page::Type(g.data()) != static_cast<uint16_t>(hln::kSubnodePage) ||
        SubnodeView(g.data()).leaf_pages() != leaf_pages_) {
      return Status::DataLoss(
          fmt::format("hln: page {} is not a subnode of a {}-page leaf", id, leaf_pages_));
    }
    return g;
  }

 private:
  BufferPool* const pool_;
  const IoCause cause_;
  const int leaf_pages_;
  PrefetchBatch* const batch_;
};

}  // namespace

StatusOr<HlnTree::Located> HlnTree::Locate(const hln::LeafRef& ref, int guess, Slice key,
                                           IoCause cause, PrefetchBatch* batch) {
  const int k = PackedCount(ref);
  SubnodeReader reader(pool_, cause, cfg_.leaf_pages, batch);
  Located out;
  out.guess = guess;
  auto read = [&](int p) { return reader.Read(PackedPage(ref, p), &out.reads); };
  auto min_le_key = [&](const SubnodeView& s) { return order_.Compare(s.key(0), key) <= 0; };
  auto key_le_max = [&](const SubnodeView& s) {
    return order_.Compare(key, s.key(s.count() - 1)) <= 0;
  };

  // Right phase: subnode j is nonempty and its min is <= key; walk right while that holds.
  auto right_phase = [&](int j, PageReadGuard g) -> StatusOr<Located> {
    for (;;) {
      if (key_le_max(SubnodeView(g.data()))) {
        out.in_range = true;
        out.sub = j;
        out.guard = std::move(g);
        return std::move(out);
      }
      g.Release();
      int r = j + 1;
      PageReadGuard rg;
      for (; r < k; ++r) {
        GROVE_ASSIGN_OR_RETURN(rg, read(r));
        if (!SubnodeView(rg.data()).empty()) break;
      }
      if (r == k || !min_le_key(SubnodeView(rg.data()))) {
        out.u = j;
        out.t = r;
        return std::move(out);
      }
      j = r;
      g = std::move(rg);
    }
  };
  // Left phase: every nonempty subnode from l + 1 on starts above key; t is the first of them.
  auto left_phase = [&](int l, int t) -> StatusOr<Located> {
    for (; l >= 0; --l) {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard g, read(l));
      const SubnodeView s(g.data());
      if (s.empty()) continue;
      if (min_le_key(s)) {
        if (key_le_max(s)) {
          out.in_range = true;
          out.sub = l;
          out.guard = std::move(g);
        } else {
          out.u = l;
          out.t = t;
        }
        return std::move(out);
      }
      t = l;
    }
    out.u = -1;
    out.t = t;
    return std::move(out);
  };

  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, read(guess));
  const SubnodeView s(g.data());
  if (!s.empty()) {
    if (min_le_key(s)) return right_phase(guess, std::move(g));
    g.Release();
    return left_phase(guess - 1, guess);
  }
  g.Release();
  // The guess is empty: the first nonempty subnode to its right tells which way to go.
  int r = guess + 1;
  PageReadGuard rg;
  for (; r < k; ++r) {
    GROVE_ASSIGN_OR_RETURN(rg, read(r));
    if (!SubnodeView(rg.data()).empty()) break;
  }
  if (r < k && min_le_key(SubnodeView(rg.data()))) return right_phase(r, std::move(rg));
  rg.Release();
  return left_phase(guess - 1, r);
}

StatusOr<bool> HlnTree::Lookup(Slice key, std::string* cell, PrefetchBatch* batch,
                               core::Path* path) {
  GROVE_ASSIGN_OR_RETURN(
      core::ParentLatch parent,
      tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, false, batch, path));
  const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(parent.child));
  const int guess = Guess(ref, parent.leaf_fences(), key);
  if (path != nullptr) (*path)[0] = PackedPage(ref, guess);
  GROVE_ASSIGN_OR_RETURN(Located loc, Locate(ref, guess, key, IoCause::kDemand, batch));
  lookups_.fetch_add(1, std::memory_order_relaxed);
  extra_reads_.fetch_add(loc.reads - 1, std::memory_order_relaxed);
  if (loc.in_range) {
    const SubnodeView s(loc.guard.data());
    bool found;
    const int pos = s.LowerBound(order_, key, &found);
    if (found) {
      cell->assign(s.cell(pos));
      return true;
    }
  }
  if (!ref.stash) return false;
  loc.guard.Release();
  overflow_reads_.fetch_add(1, std::memory_order_relaxed);
  GROVE_ASSIGN_OR_RETURN(PageReadGuard o,
                         pool_->FetchRead(ref.leaf, IoCause::kDemand, Retention::kNormal));
  const SubnodeView s(o.data());
  bool found;
  const int pos = s.LowerBound(order_, key, &found);
  if (found) cell->assign(s.cell(pos));
  return found;
}

Status HlnTree::Prepare(Slice key) {
  // Fault in what the write will touch: the owner subnode (and a stash node's overflow). Not
  // counted as a lookup.
  GROVE_ASSIGN_OR_RETURN(
      core::ParentLatch parent,
      tree_->DescendToParent(key, core::Seek::kAtOrAfter, IoCause::kDemand, false));
  const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(parent.child));
  GROVE_ASSIGN_OR_RETURN(Located loc,
                         Locate(ref, Guess(ref, parent.leaf_fences(), key), key, IoCause::kDemand));
  loc.guard.Release();
  if (ref.stash) {
    GROVE_RETURN_IF_ERROR(
        pool_->FetchRead(ref.leaf, IoCause::kDemand, Retention::kNormal).status());
  }
  return Status::Ok();
}

StatusOr<std::vector<Entry>> HlnTree::ReadLeaf(const hln::LeafRef& ref, IoCause cause) {
  std::vector<PageId> ids;
  for (int i = 0; i < cfg_.leaf_pages; ++i) ids.push_back(ref.leaf + i);
  GROVE_RETURN_IF_ERROR(pool_->LoadMany(ids, cause));
  SubnodeReader reader(pool_, cause, cfg_.leaf_pages);
  int reads = 0;
  std::vector<PageReadGuard> guards;
  std::vector<const char*> pages;
  for (int i = 0; i < cfg_.leaf_pages; ++i) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, reader.Read(ref.leaf + i, &reads));
    pages.push_back(g.data());
    guards.push_back(std::move(g));
  }
  return hln::LeafEntries(pages, ref.stash, order_);
}

}  // namespace grove
