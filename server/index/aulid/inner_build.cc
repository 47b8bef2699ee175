#include "index/aulid/inner_build.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

namespace grove::aulid {
namespace {

std::vector<uint64_t> KeysOf(std::span<const Entry> entries) {
  std::vector<uint64_t> keys(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) keys[i] = entries[i].key;
  return keys;
}

// The runs of entries the model sends to one slot, in slot order.
struct Group {
  uint64_t slot;
  size_t first, count;
};
bool NeedsDescriptor(size_t n, const InnerOptions& o) {
  return n > 1 && (o.lipp || n > kPackedMax);
}

std::vector<Group> Groups(std::span<const Entry> entries, const learned::SlotModel& m) {
  std::vector<Group> out;
  size_t i = 0;
  while (i < entries.size()) {
    const uint64_t s = m.Slot(entries[i].key);
    size_t j = i + 1;
    while (j < entries.size() && m.Slot(entries[j].key) == s) ++j;
    out.push_back({s, i, j - i});
    i = j;
  }
  return out;
}

// Slots per page for a node, and which descriptors go out of line. A page holds fewer
// descriptors the more slots it holds (slot.h), and a node has one K for all its pages, so a few
// dense pages (skewed keys: every slot of the dense end holds a branch or a child) would force the
// smallest K on the whole node, most of whose slots are NULL: on SOSD's lognormal keys the root
// took 32 slots per page, 7x the pages of 224. Instead each K is priced as its slot pages plus
// the slab pages of the descriptors that overflow their page, and the cheapest wins. The groups
// with the fewest entries go out of line first (a lookup routed there reads one page more), and
// at most kOutOfLineEntryShare of the node's entries may sit behind one: the out-of-line
// descriptors of a node are few pages (31 per slab page) that its lookups share, so a pool that
// holds anything holds them, and the cap bounds the cost where nothing is cached to half a read
// per lookup. The smallest K never puts one out of line.
constexpr double kOutOfLineEntryShare = 1.0 / 2;

struct PerPage {
  uint32_t k = 0;
  std::vector<bool> out_of_line;  // by group
  uint64_t out_of_line_count = 0;
};

PerPage ChoosePerPage(const std::vector<Group>& groups, uint64_t slots, size_t entries,
                      const InnerOptions& o) {
  PerPage best;
  double best_pages = 0;
  std::vector<size_t> page_groups;  // groups with a descriptor in the page being priced
  for (uint32_t k : kPerPageChoices) {
    const uint32_t fit = LayoutFor(k).descriptors;
    PerPage c;
    c.k = k;
    c.out_of_line.assign(groups.size(), false);
    uint64_t moved_entries = 0;
    auto settle = [&] {
      if (page_groups.size() > fit) {
        // The smallest groups leave the page.
        std::sort(page_groups.begin(), page_groups.end(), [&](size_t a, size_t b) {
          return groups[a].count != groups[b].count ? groups[a].count < groups[b].count : a < b;
        });
        for (size_t j = 0; j < page_groups.size() - fit; ++j) {
          c.out_of_line[page_groups[j]] = true;
          moved_entries += groups[page_groups[j]].count;
          ++c.out_of_line_count;
        }
      }
      page_groups.clear();
    };
    uint64_t page = UINT64_MAX;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Group& g = groups[gi];
      if (!NeedsDescriptor(g.count, o)) continue;
      if (g.slot / k != page) {
        settle();
        page = g.slot / k;
      }
      page_groups.push_back(gi);
    }
    settle();
    if (c.out_of_line_count > 0 &&
        static_cast<double>(moved_entries) > kOutOfLineEntryShare * static_cast<double>(entries)) {
      continue;
    }
    const double pages = static_cast<double>(PagesForSlots(slots, k)) +
                         static_cast<double>(c.out_of_line_count) / PackedPerSlab(kDescriptorClass);
    if (best.k == 0 || pages < best_pages) {
      best_pages = pages;
      best = std::move(c);
    }
  }
  return best;
}

}  // namespace

uint64_t SlotCount(size_t n, const InnerOptions& options) {
  if (options.slots_per_entry <= 0) return learned::SlotsFor(n);
  const double slots = std::ceil(options.slots_per_entry * static_cast<double>(n));
  return std::max<uint64_t>(2, static_cast<uint64_t>(slots));
}

learned::SlotModel InnerBuilder::Fit(std::span<const uint64_t> keys, const InnerOptions& options,
                                     uint64_t room) {
  const uint64_t fitted = SlotCount(keys.size(), options);
  learned::FmcdFit fit = learned::FitFmcd(keys, fitted);
  if (keys.size() >= 2 && fit.conflict_degree >= keys.size()) {
    // Spread the first and last key over the ends instead; distinct keys then take >= 2 slots.
    learned::SlotModel& m = fit.model;
    m.base = keys.front();
    m.slope = static_cast<double>(m.slots - 1) / static_cast<double>(keys.back() - keys.front());
    m.intercept = 0.5;
  }
  // The model keeps its line; the slots past the fitted ones take the keys above the entries.
  fit.model.slots += room;
  return fit.model;
}

StatusOr<InnerBuilder::Built> InnerBuilder::Node(std::span<const Entry> entries, uint32_t depth,
                                                 uint64_t room) {
  const std::vector<uint64_t> keys = KeysOf(entries);
  const learned::SlotModel model = Fit(keys, options_, room);
  if (keys.size() >= 2 && model.Slot(keys.front()) == model.Slot(keys.back())) {
    return Status::Internal("aulid: a node model that separates no entries (keys not ascending)");
  }
  const std::vector<Group> groups = Groups(entries, model);
  const PerPage layout = ChoosePerPage(groups, model.slots, entries.size(), options_);
  const uint32_t per_page = layout.k;
  const uint64_t pages = PagesForSlots(model.slots, per_page);
  GROVE_ASSIGN_OR_RETURN(const PageId first, space_->AllocateMixed(pages));
  Built out;
  out.nodes = 1;
  // One page image at a time, emitted when the groups move past it.
  AlignedBuffer img(kPageSize);
  uint64_t cur = 0;
  auto start_page = [&](uint64_t index) {
    std::memset(img.data(), 0, kPageSize);
    const uint64_t in_page = std::min<uint64_t>(per_page, model.slots - index * per_page);
    FormatSlotPage(img.data(), first, static_cast<uint32_t>(index), static_cast<uint32_t>(in_page),
                   per_page);
  };
  auto place = [&](uint64_t s, Slot slot) -> Status {
    DescriptorPlace freed;
    if (!PlaceSlot(img.data(), SlotInPage(s, per_page), &slot, &freed)) {
      return Status::Internal("aulid: a node page without room for its descriptors");
    }
    return Status::Ok();
  };
  size_t ahead = 0;  // Fulfill: the first group after the slot being filled
  auto emit = [&](uint64_t index) -> Status {
    if (options_.fulfill) {
      // A NULL slot whose next group is a single entry (a DATA slot) gets a copy of it.
      const uint64_t lo = index * per_page;
      const uint64_t hi = std::min(model.slots, lo + per_page);
      for (uint64_t s = lo; s < hi; ++s) {
        while (ahead < groups.size() && groups[ahead].slot <= s) ++ahead;
        if (!SlotIsNull(img.data(), SlotInPage(s, per_page)) || ahead == groups.size() ||
            groups[ahead].count != 1) {
          continue;
        }
        GROVE_RETURN_IF_ERROR(place(s, Slot::Copy(entries[groups[ahead].first])));
      }
    }
    const PageId id = space_->PageOf(first, index);
    GROVE_ASSIGN_OR_RETURN(char* p, sink_->Fresh(id, kSlotPage));
    std::memcpy(p + kPageHeaderSize, img.data() + kPageHeaderSize, kPageSize - kPageHeaderSize);
    return Status::Ok();
  };
  start_page(0);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    while (SlotPageIndex(g.slot, per_page) > cur) {
      GROVE_RETURN_IF_ERROR(emit(cur));
      start_page(++cur);
    }
    GROVE_ASSIGN_OR_RETURN(Built b, ForSlot(entries.subspan(g.first, g.count), depth));
    out.l3 += b.l3;
    out.nodes += b.nodes;
    if (layout.out_of_line[gi] && b.slot.HasDescriptor()) {
      GROVE_RETURN_IF_ERROR(OutOfLine(&b.slot));
    }
    GROVE_RETURN_IF_ERROR(place(g.slot, b.slot));
  }
  for (;;) {
    GROVE_RETURN_IF_ERROR(emit(cur));
    if (++cur == pages) break;
    start_page(cur);
  }
  out.slot.tag = SlotTag::kMixed;
  MixedRef& r = out.slot.mixed;
  r.first = first;
  r.model = model;
  r.per_page = per_page;
  r.depth = depth;
  r.size = static_cast<uint32_t>(entries.size());
  r.init_size = r.size;
  r.l3_items = static_cast<uint32_t>(out.l3);
  return out;
}

StatusOr<char*> InnerBuilder::NewObject(int cls, bool dense, NodeSpace::Object* o) {
  GROVE_ASSIGN_OR_RETURN(*o, space_->AllocatePacked(cls, dense ? &open_[cls] : nullptr));
  char* p = nullptr;
  if (o->fresh) {
    GROVE_ASSIGN_OR_RETURN(p, sink_->Fresh(o->slab, kSlabPage));
    FormatSlabPage(p, cls);
  } else {
    GROVE_ASSIGN_OR_RETURN(p, sink_->Existing(o->slab));
  }
  return p + SlabObjectOffset(cls, o->object);
}

Status InnerBuilder::OutOfLine(Slot* slot) {
  NodeSpace::Object o;
  GROVE_ASSIGN_OR_RETURN(char* obj, NewObject(kDescriptorClass, /*dense=*/true, &o));
  slot->place = DescriptorPlace{DescriptorPlace::kOutOfLine, 0, o.slab, o.object};
  StoreDescriptor(obj, *slot);
  return Status::Ok();
}

StatusOr<InnerBuilder::Built> InnerBuilder::ForSlot(std::span<const Entry> entries,
                                                    uint32_t depth) {
  Built b;
  const size_t n = entries.size();
  if (n == 1) {
    b.slot = Slot::Data(entries[0]);
    b.l3 = depth >= 3 ? 1 : 0;
    return b;
  }
  if (options_.lipp || n > kBranchMax) return Node(entries, depth + 1);
  b.l3 = depth >= 3 ? n : 0;
  if (n <= kPackedMax) {
    GROVE_ASSIGN_OR_RETURN(b.slot, Packed(entries, /*dense=*/true));
  } else {
    GROVE_ASSIGN_OR_RETURN(b.slot, Branch(entries));
  }
  return b;
}

StatusOr<Slot> InnerBuilder::Packed(std::span<const Entry> entries, bool dense) {
  const int cls = PackedClassFor(static_cast<uint32_t>(entries.size()));
  NodeSpace::Object o;
  GROVE_ASSIGN_OR_RETURN(char* obj, NewObject(cls, dense, &o));
  std::memset(obj, 0, PackedObjectBytes(cls));
  for (size_t i = 0; i < entries.size(); ++i) EncodeEntry(obj + i * kEntryBytes, entries[i]);
  Slot s;
  s.tag = SlotTag::kPacked;
  s.cls = cls;
  s.count = static_cast<uint32_t>(entries.size());
  s.object = o.object;
  s.slab = o.slab;
  return s;
}

StatusOr<Slot> InnerBuilder::Branch(std::span<const Entry> entries) {
  Slot s;
  s.tag = SlotTag::kBranch;
  s.children = static_cast<uint32_t>((entries.size() + kBranchFanout - 1) / kBranchFanout);
  for (uint32_t i = 0; i < s.children; ++i) {
    StatusOr<PageId> id = space_->AllocateBranch();
    if (!id.ok()) {
      for (uint32_t j = 0; j < i; ++j) space_->FreeBranch(s.child[j]);
      return id.status();
    }
    s.child[i] = *id;
    GROVE_RETURN_IF_ERROR(sink_->Fresh(*id, kBranchPage).status());
  }
  GROVE_RETURN_IF_ERROR(Respread(&s, entries));
  return s;
}

Status InnerBuilder::Respread(Slot* branch, std::span<const Entry> entries) {
  const uint32_t c = branch->children;
  size_t at = 0;
  for (uint32_t i = 0; i < c; ++i) {
    const size_t n = (entries.size() - at) / (c - i);
    GROVE_ASSIGN_OR_RETURN(char* p, sink_->Existing(branch->child[i]));
    std::memset(p + kPageHeaderSize, 0, kPageSize - kPageHeaderSize);
    SetBranchCount(p, static_cast<uint32_t>(n));
    for (size_t j = 0; j < n; ++j) {
      EncodeEntry(BranchEntry(p, static_cast<uint32_t>(j)), entries[at + j]);
    }
    at += n;
    if (i + 1 < c) branch->pivot[i] = entries[at - 1].key;
  }
  for (uint32_t i = c; i + 1 < kBranchChildren; ++i) branch->pivot[i] = 0;
  for (uint32_t i = c; i < kBranchChildren; ++i) branch->child[i] = kInvalidPageId;
  return Status::Ok();
}

void InnerBuilder::Count(std::span<const Entry> entries, const InnerOptions& options, bool node,
                         uint64_t room, Tally* t) {
  const size_t n = entries.size();
  if (!node) {
    if (n == 1) return;
    if (!options.lipp && n <= kPackedMax) {
      ++t->objects[PackedClassFor(static_cast<uint32_t>(n))];
      return;
    }
    if (!options.lipp && n <= kBranchMax) {
      t->branch_pages += (n + kBranchFanout - 1) / kBranchFanout;
      return;
    }
  }
  const std::vector<uint64_t> keys = KeysOf(entries);
  const learned::SlotModel model = Fit(keys, options, room);
  const std::vector<Group> groups = Groups(entries, model);
  const PerPage layout = ChoosePerPage(groups, model.slots, n, options);
  t->slot_pages += PagesForSlots(model.slots, layout.k);
  t->objects[kDescriptorClass] += layout.out_of_line_count;
  if (n >= 2 && model.Slot(keys.front()) == model.Slot(keys.back())) return;  // Node() refuses
  for (const Group& g : groups) {
    Count(entries.subspan(g.first, g.count), options, false, 0, t);
  }
}

uint64_t InnerBuilder::PagesForNode(std::span<const Entry> entries, const InnerOptions& options,
                                    uint64_t room) {
  Tally t;
  Count(entries, options, true, room, &t);
  uint64_t pages = t.slot_pages + t.branch_pages;
  for (int c = 0; c < kPackedClasses; ++c) {
    // New slabs, plus the partly used one objects may go to first.
    if (t.objects[c] > 0) pages += (t.objects[c] + PackedPerSlab(c) - 1) / PackedPerSlab(c) + 1;
  }
  return pages;
}

}  // namespace grove::aulid
