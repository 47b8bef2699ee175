// BTree::BulkLoad: leaves from sorted input, written straight to disk; the core builds the inner
// levels above them.

#include <fmt/format.h>

#include "index/btree/btree.h"
#include "page/extent_allocator.h"

namespace grove {

using core::Leaf;
using core::LeafView;

Status BTree::BulkLoad(const BulkSource& source) {
  if (entries_.load() != 0 || leaf_pages_.load() != 1 || tree_->height() != 2) {
    return Status::FailedPrecondition("bulk load needs an empty index");
  }
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");
  const size_t target = static_cast<size_t>(
      fill_factor_ * (kPageSize - core::kLeafSlotBase - SlottedPageView::kRegionHeader));

  std::vector<core::ChildRef> leaves;
  uint64_t entries = 0;
  {
    // Leaves in contiguous runs; a leaf is linked to the next before its run is written.
    core::RunWriter run(ctx_);
    std::string key, cell, prev_last;
    char* leaf = nullptr;
    PageId leaf_id = kInvalidPageId;
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
      if (!more) break;
      GROVE_RETURN_IF_ERROR(
          CheckBulkEntry(entries, prev_last, key, cell.size(), max_key_, max_cell_));
      const size_t need = SlottedPageView::CellBytes(key.size(), cell.size());
      if (leaf == nullptr ||
          (LeafView(leaf).used_bytes() + need > target && LeafView(leaf).count() > 0) ||
          LeafView(leaf).free_bytes() < need) {
        GROVE_ASSIGN_OR_RETURN(auto next, run.Next());
        page::Init(next.second, core::kLeafPage, next.first);
        Leaf::Format(next.second);
        if (leaf != nullptr) {
          Leaf(leaf).set_right(next.first);
          Leaf(next.second).set_left(leaf_id);
          leaves.push_back(
              {core::ShortestSeparator(prev_last, key), core::EncodeChild(next.first)});
        } else {
          leaves.push_back({"", core::EncodeChild(next.first)});
        }
        leaf = next.second;
        leaf_id = next.first;
      }
      SlottedPage sp = Leaf(leaf).mutable_slots();
      sp.Insert(sp.count(), key, cell);
      prev_last = key;
      ++entries;
    }
    GROVE_RETURN_IF_ERROR(run.Finish());
  }
  if (entries == 0) return Status::Ok();

  // The empty tree's one leaf goes; the core builds the inner levels above the new leaves, each
  // level one contiguous run (SHORTCUT's models start from exact maps).
  PageId old_leaf;
  {
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p, tree_->DescendToParent("", core::Seek::kAtOrAfter,
                                                                       IoCause::kBulkLoad, false));
    old_leaf = core::InnerNodeView(p.data()).child(0);
  }
  const uint64_t count = leaves.size();
  GROVE_RETURN_IF_ERROR(tree_->BuildAbove(std::move(leaves), fill_factor_));
  pool_->Discard(old_leaf);
  ctx_.allocator->Free(old_leaf, 1);
  leaf_pages_ = count;
  entries_ = entries;
  return predictor_ ? predictor_->Rebuild() : Status::Ok();
}

}  // namespace grove
