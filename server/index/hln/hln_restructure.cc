// HlnTree structure changes: rebalancing, stash nodes, splits (with inner splits above them) and
// the merge/rebalance after deletes. Each one first acquires everything it may need (latches,
// new pages), so that a failure changes nothing, and then rewrites in memory only.

#include <algorithm>

#include <fmt/format.h>

#include "index/hln/hln_tree.h"
#include "page/extent_allocator.h"

namespace grove {

using core::Fences;
using core::InnerNode;
using core::InnerNodeView;
using hln::Entry;
using hln::LeafImage;
using hln::Subnode;
using hln::SubnodeView;

namespace {

size_t BytesOf(const std::vector<Entry>& entries) {
  size_t b = 0;
  for (const Entry& e : entries) b += e.bytes();
  return b;
}

std::vector<Entry> EntriesOf(const std::vector<PageWriteGuard>& subs, bool stash,
                             const hln::LeafOrder& order) {
  std::vector<const char*> pages;
  for (const PageWriteGuard& g : subs) pages.push_back(g.data());
  return hln::LeafEntries(pages, stash, order);
}

}  // namespace

// --- Pages ----------------------------------------------------------------------------------

Status HlnTree::LatchLeaf(PageId leaf, std::vector<PageWriteGuard>* subs) {
  std::vector<PageId> ids;
  for (int i = 0; i < cfg_.leaf_pages; ++i) ids.push_back(leaf + i);
  GROVE_RETURN_IF_ERROR(pool_->LoadMany(ids, IoCause::kDemand));
  subs->clear();
  for (PageId id : ids) {
    GROVE_ASSIGN_OR_RETURN(PageWriteGuard g, pool_->FetchWrite(id));
    if (page::Type(g.data()) != static_cast<uint16_t>(hln::kSubnodePage) ||
        SubnodeView(g.data()).index() != id - leaf) {
      return Status::DataLoss(
          fmt::format("hln: page {} is not subnode {} of leaf {}", id, id - leaf, leaf));
    }
    subs->push_back(std::move(g));
  }
  return Status::Ok();
}

Status HlnTree::NewLeaf(std::vector<PageWriteGuard>* subs) {
  GROVE_ASSIGN_OR_RETURN(const PageId first, ctx_.allocator->Allocate(cfg_.leaf_pages));
  subs->clear();
  for (int i = 0; i < cfg_.leaf_pages; ++i) {
    auto g = pool_->NewPage(first + i, hln::kSubnodePage);
    if (!g.ok()) {
      for (PageWriteGuard& s : *subs) s.Discard();
      subs->clear();
      ctx_.allocator->Free(first, cfg_.leaf_pages);
      return g.status();
    }
    Subnode::Format(g->mutable_data(), static_cast<uint16_t>(i),
                    static_cast<uint16_t>(cfg_.leaf_pages), cfg_.fnv ? hln::kFnvOrder : 0);
    subs->push_back(std::move(*g));
  }
  return Status::Ok();
}

void HlnTree::FreeLeaf(std::vector<PageWriteGuard>* subs) {
  const PageId first = (*subs)[0].id();
  for (PageWriteGuard& s : *subs) s.Discard();
  subs->clear();
  ctx_.allocator->Free(first, cfg_.leaf_pages);
}

void HlnTree::WriteLeaf(std::vector<PageWriteGuard>* subs, const LeafImage& image) {
  const uint16_t n = static_cast<uint16_t>(cfg_.leaf_pages);
  for (uint16_t i = 0; i < n; ++i) {
    uint16_t flags = cfg_.fnv ? hln::kFnvOrder : 0;
    if (image.stash) flags |= hln::kStashLeaf | (i == 0 ? hln::kOverflow : 0);
    const std::vector<Entry>& src =
        image.stash ? (i == 0 ? image.overflow : image.packed[i - 1]) : image.packed[i];
    Subnode s((*subs)[i].mutable_data());
    Subnode::Format((*subs)[i].mutable_data(), i, n, flags);
    SlottedPage sp = s.mutable_slots();
    for (const Entry& e : src) sp.Insert(sp.count(), e.key, e.cell);
  }
}

// --- Leaves ---------------------------------------------------------------------------------

Status HlnTree::Restructure(Slice key, Slice cell, std::optional<std::string>* old_cell,
                            bool full_path) {
  std::vector<PageWriteGuard> path;
  Fences pf;
  if (full_path) {
    GROVE_RETURN_IF_ERROR(tree_->LatchPath(key, core::BTreeCore::Change::kInsert, &path, &pf));
  } else {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent(key, core::Seek::kAtOrAfter,
                                                                       IoCause::kDemand, true));
    pf = p.fences;
    path.push_back(std::move(p.excl));
  }
  PageWriteGuard& parent = path.back();
  const int ci = InnerNodeView(parent.data()).ChildIndexFor(key);
  const hln::LeafRef ref = DecodeLeafRef(InnerNodeView(parent.data()).payload(ci));
  const Fences lf = InnerNodeView(parent.data()).ChildFences(ci, pf);

  // The parent is exclusive now: another writer may have made room meanwhile.
  old_cell->reset();
  GROVE_ASSIGN_OR_RETURN(const Outcome again, TryUpsert(ref, lf, key, cell, old_cell));
  if (again == Outcome::kDone) return Status::Ok();

  std::vector<PageWriteGuard> subs;
  GROVE_RETURN_IF_ERROR(LatchLeaf(ref.leaf, &subs));
  std::vector<Entry> entries = EntriesOf(subs, ref.stash, order_);
  const size_t before = BytesOf(entries);
  auto it = std::lower_bound(entries.begin(), entries.end(), key,
                             [&](const Entry& e, Slice k) { return order_.Less(e.key, k); });
  const bool replaced = it != entries.end() && it->key == key;
  if (replaced) {
    old_cell->emplace(it->cell);
    it->cell.assign(cell);
  } else {
    NoteKey(key);
    entries.insert(it, Entry{std::string(key), std::string(cell)});
  }
  const size_t after = BytesOf(entries);
  const double capacity = static_cast<double>(cfg_.leaf_pages) * hln::kSubnodeCapacity;
  auto account = [&] {
    used_bytes_.fetch_add(after - before, std::memory_order_relaxed);  // mod 2^64
    if (!replaced) entries_.fetch_add(1, std::memory_order_relaxed);
  };

  // Rebalance while under the threshold, else a stash node, else split.
  std::optional<LeafImage> image;
  if (static_cast<double>(after) <= cfg_.threshold * capacity) {
    image = hln::PlanNormal(entries, cfg_.leaf_pages);
  }
  if (!image && cfg_.stash) image = hln::PlanStash(entries, cfg_.leaf_pages);
  if (image) {
    const std::vector<int> hints = hln::HintsFor(*image, Space(lf), HintParamsFor(image->stash));
    WriteLeaf(&subs, *image);
    InnerNode(parent.mutable_data()).SetPayload(ci, EncodeLeafRef(ref.leaf, image->stash, hints));
    if (image->stash && !ref.stash) {
      stash_conversions_.fetch_add(1, std::memory_order_relaxed);
      NoteStashConversion(ref.leaf);
    }
    if (image->stash && ref.stash) stash_rebuilds_.fetch_add(1, std::memory_order_relaxed);
    if (!image->stash) rebalances_.fetch_add(1, std::memory_order_relaxed);
    if (image->stash != ref.stash) {
      image->stash ? stash_leaves_.fetch_add(1) : stash_leaves_.fetch_sub(1);
    }
    writes_rebalance_.fetch_add(cfg_.leaf_pages, std::memory_order_relaxed);
    account();
    return Status::Ok();
  }

  // Split at the byte midpoint in key order; each half becomes a normal leaf.
  if (cfg_.fnv) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
  }
  size_t m = 0;
  for (size_t acc = 0; m + 1 < entries.size() && 2 * (acc + entries[m].bytes()) <= after; ++m) {
    acc += entries[m].bytes();
  }
  m = std::clamp<size_t>(m, 1, entries.size() - 1);
  const std::string sep = core::ShortestSeparator(entries[m - 1].key, entries[m].key);
  std::vector<Entry> left(std::make_move_iterator(entries.begin()),
                          std::make_move_iterator(entries.begin() + m));
  std::vector<Entry> right(std::make_move_iterator(entries.begin() + m),
                           std::make_move_iterator(entries.end()));
  if (cfg_.fnv) {
    auto by_order = [&](const Entry& a, const Entry& b) { return order_.Less(a.key, b.key); };
    std::sort(left.begin(), left.end(), by_order);
    std::sort(right.begin(), right.end(), by_order);
  }
  std::optional<LeafImage> li = hln::PlanNormal(std::move(left), cfg_.leaf_pages);
  std::optional<LeafImage> ri = hln::PlanNormal(std::move(right), cfg_.leaf_pages);
  if (!li || !ri) {
    return Status::Internal(fmt::format("hln: leaf {} cannot be split into two leaves", ref.leaf));
  }
  const Fences left_f = lf.Between(nullptr, &sep);
  const Fences right_f = lf.Between(&sep, nullptr);
  const hln::HintParams hp = HintParamsFor(false);
  const std::vector<int> lh = hln::HintsFor(*li, Space(left_f), hp);
  const std::vector<int> rh = hln::HintsFor(*ri, Space(right_f), hp);

  std::vector<PageWriteGuard> fresh;
  GROVE_RETURN_IF_ERROR(NewLeaf(&fresh));
  const std::string right_payload = EncodeLeafRef(fresh[0].id(), false, rh);
  core::BTreeCore::SplitPlan plan;
  if (!InnerNodeView(parent.data()).slots().HasRoomFor(sep.size(), right_payload.size())) {
    if (!full_path) {
      FreeLeaf(&fresh);
      return Status::Aborted("hln: the split needs inner splits");
    }
    if (Status s = tree_->PlanInsert(path, sep.size(), &plan); !s.ok()) {
      FreeLeaf(&fresh);
      return s;
    }
  }
  // Nothing can fail from here on.
  WriteLeaf(&subs, *li);
  WriteLeaf(&fresh, *ri);
  InnerNode(parent.mutable_data()).SetPayload(ci, EncodeLeafRef(ref.leaf, false, lh));
  const PageId created = fresh[0].id();
  subs.clear();
  fresh.clear();
  Status s = tree_->InsertChild(&path, &plan, sep, right_payload);
  NoteLeafSplit(ref, created);
  splits_.fetch_add(1, std::memory_order_relaxed);
  split_fill_ppm_.fetch_add(static_cast<uint64_t>(1e6 * static_cast<double>(before) / capacity),
                            std::memory_order_relaxed);
  if (ref.stash) stash_leaves_.fetch_sub(1, std::memory_order_relaxed);
  leaves_.fetch_add(1, std::memory_order_relaxed);
  writes_split_.fetch_add(2 * cfg_.leaf_pages, std::memory_order_relaxed);
  account();
  return s;
}

Status HlnTree::Tidy(Slice key) {
  tidies_.fetch_add(1, std::memory_order_relaxed);
  GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent(key, core::Seek::kAtOrAfter,
                                                                     IoCause::kDemand, true));
  PageWriteGuard& parent = p.excl;
  const InnerNodeView pv(parent.data());
  const int ci = p.child;
  const hln::LeafRef ref = DecodeLeafRef(pv.payload(ci));
  const Fences lf = pv.ChildFences(ci, p.fences);
  std::vector<PageWriteGuard> subs;
  GROVE_RETURN_IF_ERROR(LatchLeaf(ref.leaf, &subs));
  std::vector<Entry> entries = EntriesOf(subs, ref.stash, order_);
  const size_t bytes = BytesOf(entries);
  const double capacity = static_cast<double>(cfg_.leaf_pages) * hln::kSubnodeCapacity;

  // Nearly empty: merge with a sibling under the same parent (the right one, else the left one)
  // when the union fills at most half a leaf, so that it does not split again soon. An empty
  // leaf merges with any sibling that fits into one leaf.
  if (static_cast<double>(bytes) < capacity / 4) {
    for (const int other : {ci + 1, ci - 1}) {
      if (other < 0 || other >= pv.count()) continue;
      const hln::LeafRef oref = DecodeLeafRef(pv.payload(other));
      std::vector<PageWriteGuard> osubs;
      GROVE_RETURN_IF_ERROR(LatchLeaf(oref.leaf, &osubs));
      std::vector<Entry> oentries = EntriesOf(osubs, oref.stash, order_);
      const double union_bytes = static_cast<double>(bytes + BytesOf(oentries));
      if (union_bytes > capacity / 2 && !(bytes == 0 && union_bytes <= cfg_.threshold * capacity)) {
        continue;
      }
      const int li = std::min(ci, other), ri = std::max(ci, other);
      std::vector<Entry> all;
      all.reserve(entries.size() + oentries.size());
      std::merge(entries.begin(), entries.end(), std::make_move_iterator(oentries.begin()),
                 std::make_move_iterator(oentries.end()), std::back_inserter(all),
                 [&](const Entry& a, const Entry& b) { return order_.Less(a.key, b.key); });
      std::optional<LeafImage> image = hln::PlanNormal(std::move(all), cfg_.leaf_pages);
      if (!image) continue;
      Fences merged = pv.ChildFences(li, p.fences);
      const Fences rf = pv.ChildFences(ri, p.fences);
      merged.high = rf.high;
      merged.has_high = rf.has_high;
      const std::vector<int> hints = hln::HintsFor(*image, Space(merged), HintParamsFor(false));
      std::vector<PageWriteGuard>& keep = li == ci ? subs : osubs;
      std::vector<PageWriteGuard>& gone = li == ci ? osubs : subs;
      const PageId kept = li == ci ? ref.leaf : oref.leaf;
      const hln::LeafRef& removed = li == ci ? oref : ref;
      const int stash_gone = (ref.stash ? 1 : 0) + (oref.stash ? 1 : 0);
      WriteLeaf(&keep, *image);
      InnerNode(parent.mutable_data()).SetPayload(li, EncodeLeafRef(kept, false, hints));
      FreeLeaf(&gone);
      keep.clear();
      NoteLeafRemoved(removed);
      merges_.fetch_add(1, std::memory_order_relaxed);
      leaves_.fetch_sub(1, std::memory_order_relaxed);
      stash_leaves_.fetch_sub(stash_gone, std::memory_order_relaxed);
      writes_rebalance_.fetch_add(cfg_.leaf_pages, std::memory_order_relaxed);
      // Only the level-1 node is latched: the core removes the child there and merges nothing
      // above it (hln's inner nodes may stay underfull).
      std::vector<PageWriteGuard> path;
      path.push_back(std::move(p.excl));
      return tree_->RemoveChild(&path, ri, key);
    }
  }
  // Otherwise spread the entries again so that no subnode is empty, when there are enough.
  const int k = PackedCount(ref);
  bool has_empty = false;
  for (size_t i = ref.stash ? 1 : 0; i < subs.size(); ++i) {
    has_empty |= SubnodeView(subs[i].data()).empty();
  }
  if (!has_empty || entries.size() < static_cast<size_t>(k) ||
      static_cast<double>(bytes) > cfg_.threshold * capacity) {
    return Status::Ok();
  }
  std::optional<LeafImage> image = hln::PlanNormal(std::move(entries), cfg_.leaf_pages);
  if (!image) return Status::Ok();
  const std::vector<int> hints = hln::HintsFor(*image, Space(lf), HintParamsFor(false));
  WriteLeaf(&subs, *image);
  InnerNode(parent.mutable_data()).SetPayload(ci, EncodeLeafRef(ref.leaf, false, hints));
  if (ref.stash) stash_leaves_.fetch_sub(1, std::memory_order_relaxed);
  rebalances_.fetch_add(1, std::memory_order_relaxed);
  writes_rebalance_.fetch_add(cfg_.leaf_pages, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace grove
