// InnerPart walks: in-order visits (Collect, Measure), freeing, Verify, and the
// metadata (the metanode's root and the node space).

#include <bit>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "index/aulid/inner.h"
#include "util/coding.h"

namespace grove::aulid {
namespace {

// A copy of a page, so that walks hold no latch while they descend.
StatusOr<AlignedBuffer> CopyPage(BufferPool* pool, PageId id) {
  GROVE_ASSIGN_OR_RETURN(PageReadGuard g, pool->FetchRead(id, IoCause::kDemand, Retention::kHigh));
  AlignedBuffer b(kPageSize);
  std::memcpy(b.data(), g.data(), kPageSize);
  return b;
}

// Calls fn(slot index, slot) for every non-NULL slot of `node`, in order, from page copies;
// `load` completes slots with out-of-line descriptors.
template <typename Load, typename Fn>
Status ForEachSlot(BufferPool* pool, const NodeSpace& space, const MixedRef& node, Load load,
                   Fn fn) {
  const uint64_t pages = NodePages(node);
  for (uint64_t i = 0; i < pages; ++i) {
    const PageId id = space.PageOf(node.first, i);
    GROVE_ASSIGN_OR_RETURN(AlignedBuffer b, CopyPage(pool, id));
    if (page::Type(b.data()) != static_cast<uint16_t>(kSlotPage) ||
        SlotPagePerPage(b.data()) != node.per_page) {
      return Status::DataLoss(fmt::format("aulid inner page {}: not a slot page of its node", id));
    }
    const uint32_t n = SlotsInPage(node, i);
    for (uint32_t j = 0; j < n; ++j) {
      if (SlotIsNull(b.data(), j)) continue;
      Slot slot = DecodeSlot(b.data(), j);
      GROVE_RETURN_IF_ERROR(load(&slot));
      GROVE_RETURN_IF_ERROR(fn(id, b.data(), i * node.per_page + j, slot));
    }
  }
  return Status::Ok();
}

}  // namespace

Status InnerPart::Collect(const Slot& slot, std::vector<Entry>* out) const {
  switch (slot.tag) {
    case SlotTag::kNull:
      return Status::Ok();
    case SlotTag::kData:
      out->push_back(slot.data);
      return Status::Ok();
    case SlotTag::kPacked: {
      GROVE_ASSIGN_OR_RETURN(AlignedBuffer b, CopyPage(pool_, slot.slab));
      const std::vector<Entry> es =
          DecodeEntries(b.data() + SlabObjectOffset(slot.cls, slot.object), slot.count);
      out->insert(out->end(), es.begin(), es.end());
      return Status::Ok();
    }
    case SlotTag::kBranch:
      for (uint32_t i = 0; i < slot.children; ++i) {
        GROVE_ASSIGN_OR_RETURN(AlignedBuffer b, CopyPage(pool_, slot.child[i]));
        const std::vector<Entry> es =
            DecodeEntries(BranchEntry(b.data(), 0), std::min(BranchCount(b.data()), kBranchFanout));
        out->insert(out->end(), es.begin(), es.end());
      }
      return Status::Ok();
    case SlotTag::kMixed:
      return CollectNode(slot.mixed, out);
  }
  return Status::Internal("aulid: bad slot tag");
}

Status InnerPart::CollectNode(const MixedRef& node, std::vector<Entry>* out) const {
  return ForEachSlot(
      pool_, space_, node, [&](Slot* s) { return Load(s, IoCause::kDemand, nullptr); },
      [&](PageId, const char*, uint64_t, const Slot& slot) { return Collect(slot, out); });
}

Status InnerPart::FreeUnder(const Slot& slot, PageSink* sink) {
  switch (slot.tag) {
    case SlotTag::kNull:
    case SlotTag::kData:
      return Status::Ok();
    case SlotTag::kPacked:
      if (space_.FreePacked(slot.cls, slot.slab, slot.object)) sink->Drop(slot.slab);
      return Status::Ok();
    case SlotTag::kBranch:
      for (uint32_t i = 0; i < slot.children; ++i) {
        space_.FreeBranch(slot.child[i]);
        sink->Drop(slot.child[i]);
      }
      return Status::Ok();
    case SlotTag::kMixed: {
      const MixedRef& node = slot.mixed;
      const uint64_t pages = NodePages(node);
      for (uint64_t i = 0; i < pages; ++i) {
        const PageId id = space_.PageOf(node.first, i);
        std::vector<Slot> inner;
        {
          GROVE_ASSIGN_OR_RETURN(const char* p, sink->Read(id));
          const uint32_t n = SlotsInPage(node, i);
          for (uint32_t j = 0; j < n; ++j) {
            if (SlotIsNull(p, j)) continue;
            const Slot c = DecodeSlot(p, j);
            if (c.tag != SlotTag::kData) inner.push_back(c);
          }
        }
        for (Slot& c : inner) {
          GROVE_RETURN_IF_ERROR(Load(&c, sink));
          GROVE_RETURN_IF_ERROR(FreeUnder(c, sink));
          // The slot's own descriptor goes with the node that holds it.
          if (c.place.kind == DescriptorPlace::kOutOfLine &&
              space_.FreePacked(kDescriptorClass, c.place.slab, c.place.object)) {
            sink->Drop(c.place.slab);
          }
        }
      }
      for (uint64_t i = 0; i < pages; ++i) sink->Drop(space_.PageOf(node.first, i));
      space_.FreeMixed(node.first, pages);
      return Status::Ok();
    }
  }
  return Status::Internal("aulid: bad slot tag");
}

Status InnerPart::Clear(PageSink* sink) {
  copies_valid_ = false;
  if (empty()) return Status::Ok();
  sink->Release();
  Slot r;
  r.tag = SlotTag::kMixed;
  r.mixed = root_;
  GROVE_RETURN_IF_ERROR(FreeUnder(r, sink));
  root_ = MixedRef();
  return Status::Ok();
}

StatusOr<InnerPart::Shape> InnerPart::Measure() const {
  Shape sh;
  if (empty()) return sh;
  uint64_t depth_sum = 0;
  std::function<Status(const MixedRef&)> node = [&](const MixedRef& m) -> Status {
    ++sh.mixed_nodes;
    sh.slot_pages += NodePages(m);
    auto load = [&](Slot* s) { return Load(s, IoCause::kDemand, nullptr); };
    return ForEachSlot(pool_, space_, m, load,
                       [&](PageId, const char*, uint64_t, const Slot& slot) {
                         if (slot.place.kind == DescriptorPlace::kOutOfLine)
                           ++sh.descriptors_out_of_line;
                         switch (slot.tag) {
                           case SlotTag::kMixed:
                             return node(slot.mixed);
                           case SlotTag::kData:
                             ++sh.data;
                             depth_sum += m.depth;
                             break;
                           case SlotTag::kPacked:
                             sh.packed += slot.count;
                             depth_sum += uint64_t{m.depth} * slot.count;
                             break;
                           case SlotTag::kBranch: {
                             sh.branch_pages += slot.children;
                             std::vector<Entry> es;
                             GROVE_RETURN_IF_ERROR(Collect(slot, &es));
                             sh.branch += es.size();
                             depth_sum += uint64_t{m.depth} * es.size();
                             break;
                           }
                           case SlotTag::kNull:
                             break;
                         }
                         return Status::Ok();
                       });
  };
  GROVE_RETURN_IF_ERROR(node(root_));
  sh.slab_pages = space_.slab_pages();
  const uint64_t n = sh.data + sh.packed + sh.branch;
  sh.mean_depth = n == 0 ? 0 : static_cast<double>(depth_sum) / static_cast<double>(n);
  return sh;
}

Status InnerPart::Verify(IndexVerifier* v, const EntryVisitor& fn) const {
  bool have_prev = false;
  uint64_t prev = 0;
  std::map<PageId, uint64_t> objects;  // slab -> objects referenced
  auto problem = [&](std::string what) { v->Problem("aulid inner part: " + std::move(what)); };
  auto visit = [&](const Entry& e, uint32_t depth) -> Status {
    if (have_prev && e.key <= prev) {
      problem(fmt::format("entry key {} after {}: not ascending", e.key, prev));
    }
    have_prev = true;
    prev = e.key;
    return fn(e, depth);
  };
  // Checks node `m` at `depth`; *count and *l3 receive its entries and those at depth >= 3.
  std::function<Status(const MixedRef&, uint32_t, uint64_t*, uint64_t*)> node =
      [&](const MixedRef& m, uint32_t depth, uint64_t* count, uint64_t* l3) -> Status {
    if (m.model.slots < 2 || m.depth != depth || !ValidPerPage(m.per_page)) {
      problem(fmt::format("node {}: {} slots at depth {} (recorded {}), {} per page", m.first,
                          m.model.slots, depth, m.depth, m.per_page));
      return Status::Ok();
    }
    const uint64_t pages = NodePages(m);
    space_.ForEachExtent(m.first, pages, [&](PageId first, uint32_t n) {
      v->ClaimPages(first, n, "aulid mixed node");
    });
    bool copying = false;  // in a NULL run with Fulfill copies of `copied`
    Entry copied;
    for (uint64_t i = 0; i < pages; ++i) {
      const PageId id = space_.PageOf(m.first, i);
      GROVE_ASSIGN_OR_RETURN(AlignedBuffer b, CopyPage(pool_, id));
      const uint32_t in_page = SlotsInPage(m, i);
      if (page::Type(b.data()) != static_cast<uint16_t>(kSlotPage) ||
          SlotPageNode(b.data()) != m.first || SlotPageIndexOf(b.data()) != i ||
          SlotPagePerPage(b.data()) != m.per_page || SlotPageSlots(b.data()) != in_page) {
        problem(fmt::format("page {} is not page {} of node {} ({} slots per page)", id, i, m.first,
                            m.per_page));
        continue;
      }
      // In-page descriptors: each named by one slot, and the page's bitmap says which.
      uint64_t named = 0;
      const uint32_t fit = LayoutFor(m.per_page).descriptors;
      for (uint32_t j = 0; j < in_page; ++j) {
        const uint64_t s = i * m.per_page + j;
        Slot slot = DecodeSlot(b.data(), j);
        if (slot.bad) {
          problem(
              fmt::format("node {} slot {}: a descriptor number its page cannot hold", m.first, s));
          continue;
        }
        if (slot.place.kind == DescriptorPlace::kInPage) {
          const uint32_t d = slot.place.index;
          if (d >= fit || (named >> d & 1)) {
            problem(fmt::format("node {} slot {}: descriptor {} out of range or named twice",
                                m.first, s, d));
            continue;
          }
          named |= uint64_t{1} << d;
        } else if (slot.place.kind == DescriptorPlace::kOutOfLine) {
          auto it = space_.slabs().find(slot.place.slab);
          if (it == space_.slabs().end() || it->second.cls != kDescriptorClass ||
              slot.place.object >= PackedPerSlab(kDescriptorClass)) {
            problem(
                fmt::format("node {} slot {}: out-of-line descriptor {}/{} is not an "
                            "allocated object",
                            m.first, s, slot.place.slab, slot.place.object));
            continue;
          }
          uint64_t& seen = objects[slot.place.slab];
          if (seen >> slot.place.object & 1) {
            problem(fmt::format("object {}/{} named twice", slot.place.slab, slot.place.object));
          }
          seen |= uint64_t{1} << slot.place.object;
          GROVE_RETURN_IF_ERROR(Load(&slot, IoCause::kDemand, nullptr));
        }
        if (copies_valid_ && slot.has_copy) {
          if (copying && !(copied == slot.copy)) {
            problem(fmt::format("node {} slot {}: Fulfill copies of two entries in one run",
                                m.first, s));
          }
          copying = true;
          copied = slot.copy;
        }
        if (slot.tag != SlotTag::kNull && copying) {
          if (slot.tag != SlotTag::kData || !(slot.data == copied)) {
            problem(
                fmt::format("node {} slot {}: the NULL run before it copies entry {}, "
                            "which is not this slot's",
                            m.first, s, copied.key));
          }
          copying = false;
        }
        std::vector<Entry> es;
        switch (slot.tag) {
          case SlotTag::kNull:
            continue;
          case SlotTag::kData:
            es.push_back(slot.data);
            break;
          case SlotTag::kPacked: {
            auto it = space_.slabs().find(slot.slab);
            if (it == space_.slabs().end() || it->second.cls != slot.cls ||
                slot.object >= PackedPerSlab(slot.cls) || slot.count < 2 ||
                slot.count > PackedCapacity(slot.cls)) {
              problem(
                  fmt::format("node {} slot {}: packed array {}/{} (class {}, {} entries) "
                              "is not an allocated object",
                              m.first, s, slot.slab, slot.object, slot.cls, slot.count));
              continue;
            }
            uint64_t& seen = objects[slot.slab];
            if (seen >> slot.object & 1) {
              problem(fmt::format("packed array {}/{} named twice", slot.slab, slot.object));
            }
            seen |= uint64_t{1} << slot.object;
            GROVE_RETURN_IF_ERROR(Collect(slot, &es));
            break;
          }
          case SlotTag::kBranch: {
            if (slot.children < 1 || slot.children > kBranchChildren) {
              problem(
                  fmt::format("node {} slot {}: branch of {} children", m.first, s, slot.children));
              continue;
            }
            for (uint32_t c = 0; c < slot.children; ++c) {
              v->ClaimPages(slot.child[c], 1, "aulid branch page");
              GROVE_ASSIGN_OR_RETURN(AlignedBuffer cb, CopyPage(pool_, slot.child[c]));
              const uint32_t n = BranchCount(cb.data());
              if (page::Type(cb.data()) != static_cast<uint16_t>(kBranchPage) || n == 0 ||
                  n > kBranchFanout) {
                problem(fmt::format("branch page {}: type {}, {} entries", slot.child[c],
                                    page::Type(cb.data()), n));
                continue;
              }
              const std::vector<Entry> ks = DecodeEntries(BranchEntry(cb.data(), 0), n);
              if (c + 1 < slot.children && ks.back().key > slot.pivot[c]) {
                problem(fmt::format("branch page {}: key {} above its pivot {}", slot.child[c],
                                    ks.back().key, slot.pivot[c]));
              }
              if (c > 0 && ks.front().key <= slot.pivot[c - 1]) {
                problem(fmt::format("branch page {}: key {} not above the pivot {}", slot.child[c],
                                    ks.front().key, slot.pivot[c - 1]));
              }
              es.insert(es.end(), ks.begin(), ks.end());
            }
            if (es.size() < 2)
              problem(fmt::format("branch in node {} slot {} of one entry", m.first, s));
            break;
          }
          case SlotTag::kMixed: {
            uint64_t sub = 0, sub_l3 = 0;
            GROVE_RETURN_IF_ERROR(node(slot.mixed, depth + 1, &sub, &sub_l3));
            if (sub != slot.mixed.size || sub_l3 != slot.mixed.l3_items) {
              problem(fmt::format("node {}: recorded {} entries ({} deep), holds {} ({})",
                                  slot.mixed.first, slot.mixed.size, slot.mixed.l3_items, sub,
                                  sub_l3));
            }
            if (sub == 0) problem(fmt::format("node {} is empty", slot.mixed.first));
            *count += sub;
            *l3 += sub_l3;
            continue;
          }
          default:
            problem(
                fmt::format("node {} slot {}: bad tag {}", m.first, s, static_cast<int>(slot.tag)));
            continue;
        }
        for (const Entry& e : es) {
          if (m.model.Slot(e.key) != s) {
            problem(fmt::format("node {}: key {} sits in slot {}, its model says {}", m.first,
                                e.key, s, m.model.Slot(e.key)));
          }
          GROVE_RETURN_IF_ERROR(visit(e, depth));
        }
        *count += es.size();
        if (depth >= 3) *l3 += es.size();
      }
      if (named != SlotPageDescriptorsUsed(b.data())) {
        problem(fmt::format("page {} of node {}: descriptors in use {:#x}, named by slots {:#x}", i,
                            m.first, SlotPageDescriptorsUsed(b.data()), named));
      }
    }
    if (copying) problem(fmt::format("node {}: Fulfill copies after its last slot", m.first));
    return Status::Ok();
  };
  if (!empty()) {
    uint64_t count = 0, l3 = 0;
    GROVE_RETURN_IF_ERROR(node(root_, 1, &count, &l3));
    if (count != root_.size || l3 != root_.l3_items) {
      problem(fmt::format("the root records {} entries ({} deep), holds {} ({})", root_.size,
                          root_.l3_items, count, l3));
    }
  }
  for (const auto& [slab, st] : space_.slabs()) {
    v->ClaimPages(slab, 1, "aulid packed-array slab");
    auto it = objects.find(slab);
    const uint64_t seen = it == objects.end() ? 0 : it->second;
    if (seen != st.used) {
      problem(
          fmt::format("slab {}: objects in use {:#x}, named by slots {:#x}", slab, st.used, seen));
    }
    GROVE_ASSIGN_OR_RETURN(AlignedBuffer b, CopyPage(pool_, slab));
    if (page::Type(b.data()) != static_cast<uint16_t>(kSlabPage) || SlabClass(b.data()) != st.cls) {
      problem(fmt::format("slab {}: page type {} class {}, expected class {}", slab,
                          page::Type(b.data()), SlabClass(b.data()), st.cls));
    }
  }
  return Status::Ok();
}

void InnerPart::Serialize(std::string* out) const {
  PutVarint64(out, root_.first);
  PutVarint32(out, root_.per_page);
  PutVarint64(out, root_.model.base);
  PutFixed64(out, std::bit_cast<uint64_t>(root_.model.slope));
  PutFixed64(out, std::bit_cast<uint64_t>(root_.model.intercept));
  PutVarint64(out, root_.model.slots);
  PutVarint32(out, root_.size);
  PutVarint32(out, root_.init_size);
  PutVarint32(out, root_.l3_items);
  space_.Serialize(out);
  PutVarint32(out, copies_valid_ ? 1 : 0);
}

Status InnerPart::Deserialize(Slice* in) {
  MixedRef r;
  uint64_t slope = 0, intercept = 0;
  if (!GetVarint64(in, &r.first) || !GetVarint32(in, &r.per_page) ||
      !GetVarint64(in, &r.model.base) || !GetFixed64(in, &slope) || !GetFixed64(in, &intercept) ||
      !GetVarint64(in, &r.model.slots) || !GetVarint32(in, &r.size) ||
      !GetVarint32(in, &r.init_size) || !GetVarint32(in, &r.l3_items)) {
    return Status::DataLoss("aulid metadata: malformed metanode");
  }
  r.model.slope = std::bit_cast<double>(slope);
  r.model.intercept = std::bit_cast<double>(intercept);
  r.depth = 1;
  if (r.first != kInvalidPageId && (r.model.slots < 2 || !ValidPerPage(r.per_page))) {
    return Status::DataLoss("aulid metadata: a root of fewer than 2 slots or an unknown layout");
  }
  root_ = r;
  GROVE_RETURN_IF_ERROR(space_.Deserialize(in));
  uint32_t flags = 0;
  if (!GetVarint32(in, &flags) || flags > 1) {
    return Status::DataLoss("aulid metadata: malformed inner flags");
  }
  copies_valid_ = flags == 1 && options_.fulfill;
  return Status::Ok();
}

}  // namespace grove::aulid
