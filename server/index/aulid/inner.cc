#include "index/aulid/inner.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "index/aulid/inner_build.h"

namespace grove::aulid {
namespace {

// The first entry >= key in sorted `es`, or es.size().
size_t LowerBound(const std::vector<Entry>& es, uint64_t key) {
  return std::lower_bound(es.begin(), es.end(), key,
                          [](const Entry& e, uint64_t k) { return e.key < k; }) -
         es.begin();
}

uint32_t BranchChildFor(const Slot& b, uint64_t key) {
  uint32_t i = 0;
  while (i + 1 < b.children && b.pivot[i] < key) ++i;
  return i;
}

Status Corrupt(PageId id, const char* what) {
  return Status::DataLoss(fmt::format("aulid inner page {}: {}", id, what));
}

// Whether `p` is a slot page laid out with `per_page` slots per page.
bool IsSlotPage(const char* p, uint32_t per_page) {
  return page::Type(p) == static_cast<uint16_t>(kSlotPage) && SlotPagePerPage(p) == per_page;
}

}  // namespace

StatusOr<Slot> InnerPart::ReadSlot(const MixedRef& node, uint64_t s, IoCause cause) const {
  const PageId id = space_.SlotPage(node, s);
  Slot slot;
  {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(id, cause, Retention::kHigh));
    if (!IsSlotPage(g.data(), node.per_page)) return Corrupt(id, "not a slot page of its node");
    slot = DecodeSlot(g.data(), SlotInPage(s, node.per_page));
  }
  GROVE_RETURN_IF_ERROR(Load(&slot, cause, nullptr));
  return slot;
}

Status InnerPart::Load(Slot* slot, IoCause cause, RouteCost* cost) const {
  if (slot->loaded) return Status::Ok();
  const PageId id = slot->place.slab;
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(id, cause, Retention::kHigh));
  if (cost) ++cost->mixed;
  if (page::Type(g.data()) != static_cast<uint16_t>(kSlabPage) ||
      SlabClass(g.data()) != kDescriptorClass ||
      slot->place.object >= PackedPerSlab(kDescriptorClass)) {
    return Corrupt(id, "not the slab of an out-of-line descriptor");
  }
  LoadDescriptor(g.data() + SlabObjectOffset(kDescriptorClass, slot->place.object), slot);
  return Status::Ok();
}

Status InnerPart::Load(Slot* slot, PageSink* sink) const {
  if (slot->loaded) return Status::Ok();
  GROVE_ASSIGN_OR_RETURN(const char* p, sink->Read(slot->place.slab));
  if (page::Type(p) != static_cast<uint16_t>(kSlabPage) || SlabClass(p) != kDescriptorClass ||
      slot->place.object >= PackedPerSlab(kDescriptorClass)) {
    return Corrupt(slot->place.slab, "not the slab of an out-of-line descriptor");
  }
  LoadDescriptor(p + SlabObjectOffset(kDescriptorClass, slot->place.object), slot);
  return Status::Ok();
}

Status InnerPart::Build(std::span<const Entry> entries, PageSink* sink) {
  if (!empty()) return Status::Internal("aulid: building over a non-empty inner part");
  if (entries.empty()) return Status::Ok();
  InnerBuilder b(&space_, options_, sink);
  GROVE_ASSIGN_OR_RETURN(InnerBuilder::Built built, b.Node(entries, 1));
  root_ = built.slot.mixed;
  copies_valid_ = options_.fulfill;  // every node is new: its copies are exact
  return Status::Ok();
}

StatusOr<InnerPart::Routed> InnerPart::Route(uint64_t key, IoCause cause, RouteCost* cost,
                                             bool exact) const {
  Routed r;
  if (empty()) return r;
  // The mixed nodes passed and the slot taken in each, for a NULL slot that runs off a node's end.
  std::vector<std::pair<MixedRef, uint64_t>> above;
  MixedRef node = root_;
  // The first entry after slot s of `node`: further in it, or after the slot of a node above.
  auto after = [&](uint64_t from) -> StatusOr<Routed> {
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(std::optional<Entry> e, FirstFrom(node, from, cause, cost));
      if (e) return Routed{Routed::kEntry, *e};
      if (above.empty()) return Routed{};  // kTail
      node = above.back().first;
      from = above.back().second + 1;
      above.pop_back();
    }
  };
  for (;;) {
    const uint64_t s = node.model.Slot(key);
    const PageId id = space_.SlotPage(node, s);
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(id, cause, Retention::kHigh));
    if (cost) ++cost->mixed;
    if (!IsSlotPage(g.data(), node.per_page)) return Corrupt(id, "not a slot page of its node");
    const uint32_t at = SlotInPage(s, node.per_page);
    // The slot after the last one of this page.
    const uint64_t end = s - at + SlotsInPage(node, SlotPageIndex(s, node.per_page));
    Slot slot = DecodeSlot(g.data(), at);
    switch (slot.tag) {
      case SlotTag::kMixed:
        g.Release();
        GROVE_RETURN_IF_ERROR(Load(&slot, cause, cost));
        above.emplace_back(node, s);
        node = slot.mixed;
        continue;
      case SlotTag::kData: {
        if (slot.data.key >= key) {
          r.kind = Routed::kEntry;
          r.entry = slot.data;
          return r;
        }
        // The predecessor case: the entry wanted is the next one. ScanFward looks for it in
        // the page already read.
        if (options_.scan_forward) {
          for (uint64_t t = s + 1; t < end; ++t) {
            const Slot next = DecodeSlot(g.data(), at + static_cast<uint32_t>(t - s));
            if (next.tag == SlotTag::kNull && next.has_copy && copies_valid_) {
              r.kind = Routed::kEntry;
              r.entry = next.copy;
              return r;
            }
            if (next.tag == SlotTag::kNull) continue;
            if (next.tag == SlotTag::kData) {
              r.kind = Routed::kEntry;
              r.entry = next.data;
              return r;
            }
            break;
          }
        }
        if (exact) {
          g.Release();
          return after(s + 1);
        }
        r.kind = Routed::kPast;
        r.entry = slot.data;
        return r;
      }
      case SlotTag::kPacked:
      case SlotTag::kBranch: {
        g.Release();
        GROVE_RETURN_IF_ERROR(Load(&slot, cause, cost));
        PageId page = slot.slab;
        size_t offset = SlabObjectOffset(slot.cls, slot.object);
        uint32_t count = slot.count;
        if (slot.tag == SlotTag::kBranch) page = slot.child[BranchChildFor(slot, key)];
        GROVE_ASSIGN_OR_RETURN(PageReadGuard h, pool_->FetchRead(page, cause, Retention::kHigh));
        if (slot.tag == SlotTag::kBranch) {
          if (page::Type(h.data()) != static_cast<uint16_t>(kBranchPage)) {
            return Corrupt(page, "not a branch page");
          }
          offset = kBranchBase;
          count = std::min(BranchCount(h.data()), kBranchFanout);
          if (cost) ++cost->branch;
        } else {
          if (page::Type(h.data()) != static_cast<uint16_t>(kSlabPage)) {
            return Corrupt(page, "not a slab page");
          }
          if (cost) ++cost->packed;
        }
        const std::vector<Entry> es = DecodeEntries(h.data() + offset, count);
        if (es.empty()) return Corrupt(page, "empty entry array");
        const size_t i = LowerBound(es, key);
        if (i == es.size() && exact) {
          h.Release();
          // A later child of the branch (keys above its pivot), or what follows the slot.
          if (slot.tag == SlotTag::kBranch) {
            const uint32_t c = BranchChildFor(slot, key);
            if (c + 1 < slot.children) {
              GROVE_ASSIGN_OR_RETURN(PageReadGuard n,
                                     pool_->FetchRead(slot.child[c + 1], cause, Retention::kHigh));
              if (cost) ++cost->branch;
              return Routed{Routed::kEntry, DecodeEntry(BranchEntry(n.data(), 0))};
            }
          }
          return after(s + 1);
        }
        r.kind = i < es.size() ? Routed::kEntry : Routed::kPast;
        r.entry = es[std::min(i, es.size() - 1)];
        return r;
      }
      case SlotTag::kNull: {
        if (slot.has_copy && copies_valid_) {  // Fulfill: the entry of the DATA slot ahead
          r.kind = Routed::kEntry;
          r.entry = slot.copy;
          return r;
        }
        // The next entry after this slot: in the page already read, or further on.
        for (uint64_t t = s + 1; t < end; ++t) {
          const uint32_t ti = at + static_cast<uint32_t>(t - s);
          if (SlotIsNull(g.data(), ti)) continue;
          const Slot next = DecodeSlot(g.data(), ti);
          g.Release();
          GROVE_ASSIGN_OR_RETURN(r.entry, Leftmost(next, cause, cost));
          r.kind = Routed::kEntry;
          return r;
        }
        g.Release();
        return after(end);
      }
    }
    return Corrupt(id, "bad slot tag");
  }
}

StatusOr<std::optional<Entry>> InnerPart::FirstFrom(const MixedRef& node, uint64_t s, IoCause cause,
                                                    RouteCost* cost) const {
  while (s < node.model.slots) {
    const PageId id = space_.SlotPage(node, s);
    GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool_->FetchRead(id, cause, Retention::kHigh));
    if (cost) ++cost->mixed;
    if (!IsSlotPage(g.data(), node.per_page)) return Corrupt(id, "not a slot page of its node");
    const uint32_t at = SlotInPage(s, node.per_page);
    const uint64_t end = s - at + SlotsInPage(node, SlotPageIndex(s, node.per_page));
    for (uint32_t i = at; s < end; ++s, ++i) {
      if (SlotIsNull(g.data(), i)) continue;
      const Slot slot = DecodeSlot(g.data(), i);
      g.Release();
      GROVE_ASSIGN_OR_RETURN(Entry e, Leftmost(slot, cause, cost));
      return std::optional<Entry>(e);
    }
  }
  return std::optional<Entry>();
}

StatusOr<Entry> InnerPart::Leftmost(const Slot& in, IoCause cause, RouteCost* cost) const {
  Slot slot = in;
  GROVE_RETURN_IF_ERROR(Load(&slot, cause, cost));
  switch (slot.tag) {
    case SlotTag::kData:
      return slot.data;
    case SlotTag::kPacked: {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard h, pool_->FetchRead(slot.slab, cause, Retention::kHigh));
      if (cost) ++cost->packed;
      return DecodeEntry(h.data() + SlabObjectOffset(slot.cls, slot.object));
    }
    case SlotTag::kBranch: {
      GROVE_ASSIGN_OR_RETURN(PageReadGuard h,
                             pool_->FetchRead(slot.child[0], cause, Retention::kHigh));
      if (cost) ++cost->branch;
      return DecodeEntry(BranchEntry(h.data(), 0));
    }
    case SlotTag::kMixed: {
      GROVE_ASSIGN_OR_RETURN(std::optional<Entry> e, FirstFrom(slot.mixed, 0, cause, cost));
      if (!e) return Status::DataLoss("aulid: an empty mixed node in a slot");
      return *e;
    }
    case SlotTag::kNull:
      break;
  }
  return Status::Internal("aulid: leftmost entry of a NULL slot");
}

Status InnerPart::Descend(uint64_t key, std::vector<Step>* path) const {
  path->clear();
  if (empty()) return Status::Ok();
  MixedRef node = root_;
  for (;;) {
    const uint64_t s = node.model.Slot(key);
    Step st{space_.SlotPage(node, s), SlotInPage(s, node.per_page), Slot(), s};
    GROVE_ASSIGN_OR_RETURN(st.slot, ReadSlot(node, s, IoCause::kDemand));
    path->push_back(st);
    if (st.slot.tag != SlotTag::kMixed) return Status::Ok();
    node = st.slot.mixed;
  }
}

Status InnerPart::WriteSlot(const Step& step, Slot slot, PageSink* sink) {
  DescriptorPlace freed;
  bool placed = false;
  {
    GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(step.page));
    placed = PlaceSlot(p, step.index, &slot, &freed);
  }
  if (!placed) {
    // The page's descriptors are all taken: this one goes out of line.
    GROVE_ASSIGN_OR_RETURN(const NodeSpace::Object o, space_.AllocatePacked(kDescriptorClass));
    if (o.fresh) {
      GROVE_ASSIGN_OR_RETURN(char* q, sink->Fresh(o.slab, kSlabPage));
      FormatSlabPage(q, kDescriptorClass);
    }
    slot.place = DescriptorPlace{DescriptorPlace::kOutOfLine, 0, o.slab, o.object};
    GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(step.page));
    if (!PlaceSlot(p, step.index, &slot, &freed)) {
      return Status::Internal("aulid: an out-of-line descriptor was refused");
    }
  }
  if (slot.HasDescriptor() && slot.place.kind == DescriptorPlace::kOutOfLine) {
    GROVE_ASSIGN_OR_RETURN(char* q, sink->Existing(slot.place.slab));
    StoreDescriptor(q + SlabObjectOffset(kDescriptorClass, slot.place.object), slot);
  }
  if (freed.kind == DescriptorPlace::kOutOfLine &&
      space_.FreePacked(kDescriptorClass, freed.slab, freed.object)) {
    sink->Drop(freed.slab);
  }
  return Status::Ok();
}

Status InnerPart::UpdateStats(std::vector<Step>& path, int64_t size_delta, int64_t l3_delta,
                              PageSink* sink) {
  // path[i] (i < size - 1) is the MIXED slot naming the node at depth i + 2.
  for (size_t i = path.size() - 1; i-- > 0;) {
    MixedRef& m = path[i].slot.mixed;
    m.size = static_cast<uint32_t>(static_cast<int64_t>(m.size) + size_delta);
    m.l3_items = static_cast<uint32_t>(static_cast<int64_t>(m.l3_items) + l3_delta);
    if (m.size == 0) {
      // A child node left empty goes away; its slot becomes NULL.
      GROVE_RETURN_IF_ERROR(FreeUnder(path[i].slot, sink));
      path[i].slot = Slot();
    }
    GROVE_RETURN_IF_ERROR(WriteSlot(path[i], path[i].slot, sink));
  }
  root_.size = static_cast<uint32_t>(static_cast<int64_t>(root_.size) + size_delta);
  root_.l3_items = static_cast<uint32_t>(static_cast<int64_t>(root_.l3_items) + l3_delta);
  return root_.size == 0 ? Clear(sink) : Status::Ok();
}

StatusOr<uint64_t> InnerPart::PagesForInsert(uint64_t key, bool append) const {
  if (empty()) return PagesForSlots(SlotCount(1, options_), kMaxPerPage);
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(key, &path));
  // The slots on the path (statistics), each with a descriptor that may be out of line.
  uint64_t pages = 2 * path.size();
  const Slot& s = path.back().slot;
  switch (s.tag) {
    case SlotTag::kNull:
      break;
    case SlotTag::kData:
      if (options_.lipp) {
        std::vector<Entry> two = {s.data, {key, 0}};
        if (key < s.data.key) std::swap(two[0], two[1]);
        pages += InnerBuilder::PagesForNode(two, options_);
      } else {
        pages += 2;
      }
      break;
    case SlotTag::kPacked:
      // The old slab, a new one and a partly used one, or a branch page and the slab of an
      // out-of-line descriptor.
      pages += 4;
      break;
    case SlotTag::kBranch: {
      uint32_t total = 0;
      std::vector<Entry> all;
      for (uint32_t i = 0; i < s.children; ++i) {
        GROVE_ASSIGN_OR_RETURN(PageReadGuard h,
                               pool_->FetchRead(s.child[i], IoCause::kDemand, Retention::kHigh));
        const uint32_t n = std::min(BranchCount(h.data()), kBranchFanout);
        total += n;
        const std::vector<Entry> es = DecodeEntries(BranchEntry(h.data(), 0), n);
        all.insert(all.end(), es.begin(), es.end());
      }
      if (total + 1 > kBranchMax) {
        all.insert(all.begin() + LowerBound(all, key), Entry{key, 0});
        const MixedRef& node = path.size() == 1 ? root_ : path[path.size() - 2].slot.mixed;
        const bool tail = append && path.back().s + 1 == node.model.slots;
        pages += InnerBuilder::PagesForNode(all, options_, tail ? TailRoom(all.size(), node) : 0);
      } else {
        pages += kBranchChildren + 1;
      }
      break;
    }
    case SlotTag::kMixed:
      return Status::Internal("aulid: descent ended at a mixed slot");
  }
  return pages;
}

uint64_t InnerPart::RebuildEstimate(uint64_t size, uint64_t room) const {
  // From the size alone (the exact count needs the entries, collected by Rebuild): the slot pages
  // at 192 per page (most nodes take 224), and every entry once more in a slab or branch page.
  return PagesForSlots(SlotCount(size, options_) + room, 192) +
         (size * kEntryBytes + kPageSize - 1) / kPageSize;
}

uint64_t InnerPart::TailRoom(uint64_t n, const MixedRef& owner) const {
  // Room for as many entries again: the node is rebuilt once it doubled. When the node whose
  // last slot it fills cannot be rebuilt within the bound once it doubles, appends will chain
  // tail nodes one below the other; each then takes as much as half the bound allows, so that
  // the chain grows by a level per that many appends, not per a thousand.
  uint64_t room = SlotCount(n, options_);
  const uint64_t bound = options_.max_rebuild_pages;
  if (bound > 0 && RebuildEstimate(2 * uint64_t{owner.size}, 0) > bound) {
    room = std::max<uint64_t>(room, bound / 2 * 192);
  }
  return room;
}

bool InnerPart::Qualifies(const MixedRef& m, bool tail) const {
  // A tail node was built with room for as many entries again: it is due once it doubled.
  const double beta = tail ? std::max(options_.beta, 2.0) : options_.beta;
  if (!(m.size >= beta * m.init_size && m.l3_items > 0 &&
        m.l3_items >= options_.alpha * static_cast<double>(m.size))) {
    return false;
  }
  if (m.first == declined_first_ && m.size < declined_size_ + declined_size_ / 4) return false;
  if (options_.max_rebuild_pages == 0) return true;
  const uint64_t room = tail ? SlotCount(m.size, options_) : 0;
  return RebuildEstimate(m.size, room) <= options_.max_rebuild_pages;
}

Status InnerPart::Insert(const Entry& e, PageSink* sink, AdjustHint* hint, bool append) {
  sink->Release();
  copies_valid_ = false;  // copies elsewhere may now name the wrong entry
  *hint = AdjustHint();
  if (empty()) return Build(std::span<const Entry>(&e, 1), sink);
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(e.key, &path));
  const uint32_t depth = static_cast<uint32_t>(path.size());
  const Step& at = path.back();
  const Slot& old = at.slot;
  InnerBuilder b(&space_, options_, sink);
  Slot slot;
  int64_t l3_delta = depth >= 3 ? 1 : 0;
  switch (old.tag) {
    case SlotTag::kNull:
      slot = Slot::Data(e);
      break;
    case SlotTag::kData: {
      if (old.data.key == e.key) return Status::AlreadyExists("aulid: inner entry exists");
      std::vector<Entry> two = {old.data, e};
      if (two[1].key < two[0].key) std::swap(two[0], two[1]);
      if (options_.lipp) {
        GROVE_ASSIGN_OR_RETURN(InnerBuilder::Built built, b.Node(two, depth + 1));
        counters_.creates += built.nodes;
        slot = built.slot;
        l3_delta = static_cast<int64_t>(built.l3) - (depth >= 3 ? 1 : 0);
      } else {
        GROVE_ASSIGN_OR_RETURN(slot, b.Packed(two));
      }
      break;
    }
    case SlotTag::kPacked: {
      std::vector<Entry> es;
      {
        GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(old.slab));
        es = DecodeEntries(p + SlabObjectOffset(old.cls, old.object), old.count);
      }
      const size_t i = LowerBound(es, e.key);
      if (i < es.size() && es[i].key == e.key) {
        return Status::AlreadyExists("aulid: inner entry exists");
      }
      es.insert(es.begin() + i, e);
      slot = old;
      if (es.size() <= PackedCapacity(old.cls)) {
        GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(old.slab));
        char* obj = p + SlabObjectOffset(old.cls, old.object);
        for (size_t j = 0; j < es.size(); ++j) EncodeEntry(obj + j * kEntryBytes, es[j]);
        slot.count = static_cast<uint32_t>(es.size());
      } else {
        // Promotion: the next class, or a branch past the largest.
        if (es.size() <= kPackedMax) {
          GROVE_ASSIGN_OR_RETURN(slot, b.Packed(es));
        } else {
          GROVE_ASSIGN_OR_RETURN(slot, b.Branch(es));
        }
        ++counters_.promotions;
        if (space_.FreePacked(old.cls, old.slab, old.object)) sink->Drop(old.slab);
      }
      break;
    }
    case SlotTag::kBranch: {
      slot = old;
      const uint32_t c = BranchChildFor(old, e.key);
      std::vector<Entry> es;
      {
        // Read, not dirtied: a conversion frees the children rather than change them.
        GROVE_ASSIGN_OR_RETURN(const char* p, sink->Read(old.child[c]));
        es = DecodeEntries(BranchEntry(p, 0), std::min(BranchCount(p), kBranchFanout));
      }
      const size_t i = LowerBound(es, e.key);
      if (i < es.size() && es[i].key == e.key) {
        return Status::AlreadyExists("aulid: inner entry exists");
      }
      es.insert(es.begin() + i, e);
      if (es.size() <= kBranchFanout) {
        GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(old.child[c]));
        SetBranchCount(p, static_cast<uint32_t>(es.size()));
        for (size_t j = 0; j < es.size(); ++j) {
          EncodeEntry(BranchEntry(p, static_cast<uint32_t>(j)), es[j]);
        }
        break;
      }
      // The child is full: every entry of the branch, in order.
      std::vector<Entry> all;
      for (uint32_t k = 0; k < old.children; ++k) {
        if (k == c) {
          all.insert(all.end(), es.begin(), es.end());
          continue;
        }
        GROVE_ASSIGN_OR_RETURN(const char* p, sink->Read(old.child[k]));
        const std::vector<Entry> ks =
            DecodeEntries(BranchEntry(p, 0), std::min(BranchCount(p), kBranchFanout));
        all.insert(all.end(), ks.begin(), ks.end());
      }
      if (all.size() <= kBranchMax) {
        if (old.children < kBranchChildren) {
          GROVE_ASSIGN_OR_RETURN(const PageId fresh, space_.AllocateBranch());
          GROVE_RETURN_IF_ERROR(sink->Fresh(fresh, kBranchPage).status());
          slot.child[slot.children++] = fresh;
          ++counters_.branch_splits;
        }
        GROVE_RETURN_IF_ERROR(b.Respread(&slot, all));
        break;
      }
      // Full: the branch becomes a child mixed node (a conversion); in its node's last slot,
      // under appends, a tail node.
      const MixedRef& node = path.size() == 1 ? root_ : path[path.size() - 2].slot.mixed;
      const bool tail = append && at.s + 1 == node.model.slots;
      GROVE_ASSIGN_OR_RETURN(InnerBuilder::Built built,
                             b.Node(all, depth + 1, tail ? TailRoom(all.size(), node) : 0));
      counters_.creates += built.nodes;
      for (uint32_t k = 0; k < old.children; ++k) {
        space_.FreeBranch(old.child[k]);
        sink->Drop(old.child[k]);
      }
      slot = built.slot;
      l3_delta = static_cast<int64_t>(built.l3) - (depth >= 3 ? all.size() - 1 : 0);
      break;
    }
    case SlotTag::kMixed:
      return Status::Internal("aulid: descent ended at a mixed slot");
  }
  GROVE_RETURN_IF_ERROR(WriteSlot(at, slot, sink));
  GROVE_RETURN_IF_ERROR(UpdateStats(path, 1, l3_delta, sink));
  if (options_.adjust) {
    // The topmost node that qualifies. Under appends the nodes on the rightmost path (the root,
    // then each in its parent's last slot) are tails.
    bool rightmost = append;
    if (Qualifies(root_, rightmost)) {
      *hint = AdjustHint{true, 1, rightmost};
    } else {
      const MixedRef* parent = &root_;
      for (size_t i = 0; i + 1 < path.size(); ++i) {
        rightmost = rightmost && path[i].s + 1 == parent->model.slots;
        parent = &path[i].slot.mixed;
        if (Qualifies(*parent, rightmost)) {
          *hint = AdjustHint{true, static_cast<uint32_t>(i + 2), rightmost};
          break;
        }
      }
    }
  }
  return Status::Ok();
}

Status InnerPart::Rebuild(uint64_t key, const AdjustHint& hint, PageSink* sink,
                          const std::function<bool(uint64_t pages)>& reserve, bool* rebuilt) {
  *rebuilt = false;
  sink->Release();
  const uint32_t depth = hint.depth;
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(key, &path));
  if (depth == 0 || depth > path.size()) return Status::Internal("aulid: no node to rebuild");
  Slot old;
  old.tag = SlotTag::kMixed;
  old.mixed = depth == 1 ? root_ : path[depth - 2].slot.mixed;
  std::vector<Entry> all;
  GROVE_RETURN_IF_ERROR(CollectNode(old.mixed, &all));
  // The node's pages, and the slots above it (statistics), each with a descriptor that may be
  // out of line.
  const uint64_t room = hint.tail ? SlotCount(all.size(), options_) : 0;
  const uint64_t pages = InnerBuilder::PagesForNode(all, options_, room) + 2 * uint64_t{depth};
  if ((options_.max_rebuild_pages > 0 && pages > options_.max_rebuild_pages) || !reserve(pages)) {
    ++counters_.declined;
    declined_first_ = old.mixed.first;
    declined_size_ = old.mixed.size;
    return Status::Ok();
  }
  copies_valid_ = false;  // copies elsewhere may now name the wrong entry
  *rebuilt = true;
  // Build the new node first, then free the old one: a failure leaves the old one in place.
  InnerBuilder b(&space_, options_, sink);
  GROVE_ASSIGN_OR_RETURN(InnerBuilder::Built built, b.Node(all, depth, room));
  GROVE_RETURN_IF_ERROR(FreeUnder(old, sink));
  ++counters_.adjusts;
  counters_.creates += built.nodes;
  const int64_t l3_delta = static_cast<int64_t>(built.l3) - old.mixed.l3_items;
  if (depth == 1) {
    root_ = built.slot.mixed;
    return Status::Ok();
  }
  path.resize(depth - 1);  // path.back() is now the slot naming the rebuilt node
  path.back().slot = built.slot;
  GROVE_RETURN_IF_ERROR(WriteSlot(path.back(), built.slot, sink));
  // The nodes above keep their size; their counts of deep entries change.
  return UpdateStats(path, 0, l3_delta, sink);
}

Status InnerPart::Repoint(uint64_t key, PageId leaf, PageSink* sink) {
  sink->Release();
  copies_valid_ = false;  // copies elsewhere may now name the wrong entry
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(key, &path));
  if (path.empty()) return Status::NotFound("aulid: no inner entry");
  const Step& at = path.back();
  Slot slot = at.slot;
  switch (slot.tag) {
    case SlotTag::kData:
      if (slot.data.key != key) break;
      slot.data.leaf = leaf;
      return WriteSlot(at, slot, sink);
    case SlotTag::kPacked:
    case SlotTag::kBranch: {
      const PageId page =
          slot.tag == SlotTag::kPacked ? slot.slab : slot.child[BranchChildFor(slot, key)];
      GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(page));
      char* base = slot.tag == SlotTag::kPacked ? p + SlabObjectOffset(slot.cls, slot.object)
                                                : BranchEntry(p, 0);
      const uint32_t n =
          slot.tag == SlotTag::kPacked ? slot.count : std::min(BranchCount(p), kBranchFanout);
      const std::vector<Entry> es = DecodeEntries(base, n);
      const size_t i = LowerBound(es, key);
      if (i == es.size() || es[i].key != key) break;
      EncodeEntry(base + i * kEntryBytes, Entry{key, leaf});
      return Status::Ok();
    }
    case SlotTag::kNull:
    case SlotTag::kMixed:
      break;
  }
  return Status::NotFound("aulid: no inner entry");
}

Status InnerPart::Remove(uint64_t key, PageSink* sink) {
  sink->Release();
  copies_valid_ = false;  // copies elsewhere may now name the wrong entry
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(key, &path));
  if (path.empty()) return Status::NotFound("aulid: no inner entry");
  const uint32_t depth = static_cast<uint32_t>(path.size());
  const Step& at = path.back();
  Slot slot = at.slot;
  switch (slot.tag) {
    case SlotTag::kData:
      if (slot.data.key != key) return Status::NotFound("aulid: no inner entry");
      slot = Slot();
      break;
    case SlotTag::kPacked: {
      std::vector<Entry> es;
      {
        GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(slot.slab));
        es = DecodeEntries(p + SlabObjectOffset(slot.cls, slot.object), slot.count);
      }
      const size_t i = LowerBound(es, key);
      if (i == es.size() || es[i].key != key) return Status::NotFound("aulid: no inner entry");
      es.erase(es.begin() + i);
      if (es.size() == 1) {
        if (space_.FreePacked(slot.cls, slot.slab, slot.object)) sink->Drop(slot.slab);
        slot = Slot::Data(es[0]);
        break;
      }
      GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(slot.slab));
      char* obj = p + SlabObjectOffset(slot.cls, slot.object);
      std::memset(obj, 0, PackedObjectBytes(slot.cls));
      for (size_t j = 0; j < es.size(); ++j) EncodeEntry(obj + j * kEntryBytes, es[j]);
      slot.count = static_cast<uint32_t>(es.size());
      break;
    }
    case SlotTag::kBranch: {
      const uint32_t c = BranchChildFor(slot, key);
      std::vector<Entry> es;
      uint32_t total = 0;
      for (uint32_t k = 0; k < slot.children; ++k) {
        GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(slot.child[k]));
        const uint32_t n = std::min(BranchCount(p), kBranchFanout);
        total += n;
        if (k == c) es = DecodeEntries(BranchEntry(p, 0), n);
      }
      const size_t i = LowerBound(es, key);
      if (i == es.size() || es[i].key != key) return Status::NotFound("aulid: no inner entry");
      es.erase(es.begin() + i);
      if (total - 1 == 1) {
        // One entry left in the whole branch: it becomes DATA.
        Entry last;
        for (uint32_t k = 0; k < slot.children; ++k) {
          if (k == c) {
            if (!es.empty()) last = es[0];
            continue;
          }
          GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(slot.child[k]));
          if (BranchCount(p) > 0) last = DecodeEntry(BranchEntry(p, 0));
        }
        for (uint32_t k = 0; k < slot.children; ++k) {
          space_.FreeBranch(slot.child[k]);
          sink->Drop(slot.child[k]);
        }
        slot = Slot::Data(last);
        break;
      }
      if (es.empty()) {
        // The child is empty: drop it and the pivot that bounded it.
        space_.FreeBranch(slot.child[c]);
        sink->Drop(slot.child[c]);
        const uint32_t gone = std::min(c, slot.children - 2);
        for (uint32_t k = gone; k + 1 < kBranchChildren - 1; ++k) slot.pivot[k] = slot.pivot[k + 1];
        for (uint32_t k = c; k + 1 < kBranchChildren; ++k) slot.child[k] = slot.child[k + 1];
        --slot.children;
        slot.child[kBranchChildren - 1] = kInvalidPageId;
        for (uint32_t k = slot.children - 1; k < kBranchChildren - 1; ++k) slot.pivot[k] = 0;
        break;
      }
      GROVE_ASSIGN_OR_RETURN(char* p, sink->Existing(slot.child[c]));
      std::memset(p + kPageHeaderSize, 0, kPageSize - kPageHeaderSize);
      SetBranchCount(p, static_cast<uint32_t>(es.size()));
      for (size_t j = 0; j < es.size(); ++j) {
        EncodeEntry(BranchEntry(p, static_cast<uint32_t>(j)), es[j]);
      }
      break;
    }
    case SlotTag::kNull:
    case SlotTag::kMixed:
      return Status::NotFound("aulid: no inner entry");
  }
  GROVE_RETURN_IF_ERROR(WriteSlot(at, slot, sink));
  return UpdateStats(path, -1, depth >= 3 ? -1 : 0, sink);
}

StatusOr<uint64_t> InnerPart::PagesForChange(uint64_t key) const {
  std::vector<Step> path;
  GROVE_RETURN_IF_ERROR(Descend(key, &path));
  return 2 * path.size() + kBranchChildren;
}

}  // namespace grove::aulid
