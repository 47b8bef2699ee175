// HlnTree::BulkLoad: builds the tree bottom-up from sorted input, writing leaves (one extent each,
// spread evenly and with hints) and inner nodes straight to disk through the DirectPageWriter.

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "index/hln/hln_tree.h"
#include "page/extent_allocator.h"

namespace grove {

using core::Fences;
using core::InnerNodeView;
using hln::Entry;
using hln::LeafImage;
using hln::Subnode;

Status HlnTree::BulkLoad(const BulkSource& source) {
  if (entries_.load() != 0 || leaves_.load() != 1 || tree_->height() != 2) {
    return Status::FailedPrecondition("bulk load needs an empty index");
  }
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");
  const int n = cfg_.leaf_pages;
  const double target = cfg_.fill_factor * n * hln::kSubnodeCapacity;
  const size_t max_cell = MaxCellBytes(*ctx_.options);

  std::vector<core::ChildRef> level;
  uint64_t count = 0, used = 0;
  AlignedBuffer images(static_cast<size_t>(n) * kPageSize);
  // Writes one leaf holding `entries` (key order) with the given fences.
  auto write_leaf = [&](std::vector<Entry> entries, const Fences& f) -> Status {
    if (cfg_.fnv) {
      std::sort(entries.begin(), entries.end(),
                [&](const Entry& a, const Entry& b) { return order_.Less(a.key, b.key); });
    }
    std::optional<LeafImage> image = hln::PlanNormal(std::move(entries), n);
    if (!image) return Status::Internal("hln bulk load: a leaf's entries do not fit");
    GROVE_ASSIGN_OR_RETURN(const PageId first, ctx_.allocator->Allocate(n));
    for (int i = 0; i < n; ++i) {
      char* p = images.data() + static_cast<size_t>(i) * kPageSize;
      page::Init(p, hln::kSubnodePage, first + i);
      Subnode::Format(p, static_cast<uint16_t>(i), static_cast<uint16_t>(n),
                      cfg_.fnv ? hln::kFnvOrder : 0);
      SlottedPage sp = Subnode(p).mutable_slots();
      for (const Entry& e : image->packed[i]) sp.Insert(sp.count(), e.key, e.cell);
      used += Subnode(p).used_bytes();
    }
    GROVE_RETURN_IF_ERROR(ctx_.direct_writer->WriteRun(first, n, images.data()));
    const std::vector<int> hints = hln::HintsFor(*image, Space(f), HintParamsFor(false));
    level.push_back({f.has_low ? f.low : std::string(), EncodeLeafRef(first, false, hints)});
    return Status::Ok();
  };

  // Level 0. A leaf is written once the next leaf's first key fixes its upper fence.
  {
    std::vector<Entry> cur;
    size_t cur_bytes = 0, cur_max = 0;
    size_t bins = 0, bin_bytes = 0;  // key order: subnodes packed in order so far (0: none open)
    Fences f;
    std::string key, cell, prev;
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
      if (!more) break;
      GROVE_RETURN_IF_ERROR(CheckBulkEntry(count, prev, key, cell.size(), max_key_, max_cell));
      const size_t bytes = SlottedPageView::CellBytes(key.size(), cell.size());
      // A leaf closes at the fill target, or before its entries would not fit its subnodes
      // (records near the inline threshold: a few per subnode). In key order the subnodes packed
      // in order tell exactly; ordered by hash, at most (n - 1) x (capacity - largest entry)
      // bytes fit in any order (a subnode packed in order is closed only when the next entry does
      // not fit, so each closed one holds more than capacity - largest).
      bool fits;
      if (cfg_.fnv) {
        const size_t largest = std::max(cur_max, bytes);
        fits = cur_bytes + bytes <= static_cast<size_t>(n - 1) * (hln::kSubnodeCapacity - largest);
      } else {
        fits = bin_bytes + bytes <= hln::kSubnodeCapacity || bins < static_cast<size_t>(n);
      }
      if (!cur.empty() && (static_cast<double>(cur_bytes + bytes) > target || !fits)) {
        const std::string sep = core::ShortestSeparator(cur.back().key, key);
        Fences leaf_f = f;
        leaf_f.high = sep;
        leaf_f.has_high = true;
        GROVE_RETURN_IF_ERROR(write_leaf(std::move(cur), leaf_f));
        cur.clear();
        cur_bytes = 0;
        cur_max = 0;
        bins = 0;
        bin_bytes = 0;
        f.low = sep;
        f.has_low = true;
      }
      NoteKey(key);
      cur.push_back({key, cell});
      prev = key;
      cur_bytes += bytes;
      cur_max = std::max(cur_max, bytes);
      if (bins == 0 || bin_bytes + bytes > hln::kSubnodeCapacity) {
        ++bins;
        bin_bytes = 0;
      }
      bin_bytes += bytes;
      ++count;
    }
    if (count == 0) return Status::Ok();
    GROVE_RETURN_IF_ERROR(write_leaf(std::move(cur), f));
  }

  // The initial empty leaf goes; the core builds the inner levels above the new leaves.
  PageId old_leaf;
  {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent("", core::Seek::kAtOrAfter,
                                                                       IoCause::kBulkLoad, false));
    old_leaf = DecodeLeafRef(p.leaf_payload()).leaf;
  }
  const uint64_t leaves = level.size();
  GROVE_RETURN_IF_ERROR(tree_->BuildAbove(std::move(level), cfg_.fill_factor));
  for (int i = 0; i < n; ++i) pool_->Discard(old_leaf + i);
  ctx_.allocator->Free(old_leaf, n);
  leaves_ = leaves;
  entries_ = count;
  used_bytes_ = used;
  return predictor_ ? predictor_->Rebuild() : Status::Ok();
}

}  // namespace grove
