// BTree::BulkLoad: builds the tree bottom-up from sorted input, writing nodes straight to disk.

#include <cstring>

#include <fmt/format.h>

#include "index/btree/btree.h"
#include "page/extent_allocator.h"

namespace grove {
namespace {

using btree::Node;
using btree::NodeView;

// One node of a level under construction, as its parent will reference it.
struct ChildRef {
  PageId id;
  std::string low;  // separator below it; empty for the first node of a level
};

// Writes the nodes of one level in contiguous runs of up to 256 pages. Node ids are assigned from
// the run before the node is filled, so a leaf can link to the next one before it is written: a
// full run is written only at the following Next() or at Finish(), after that link was set.
class RunWriter {
 public:
  explicit RunWriter(const IndexContext& ctx)
      : ctx_(ctx),
        cur_(ExtentAllocator::kMaxExtentPages * kPageSize),
        prev_(ExtentAllocator::kMaxExtentPages * kPageSize) {}

  // Returns the id and memory of the next node's page.
  StatusOr<std::pair<PageId, char*>> Next() {
    GROVE_RETURN_IF_ERROR(WritePrev());
    if (first_ == kInvalidPageId || used_ == ExtentAllocator::kMaxExtentPages) {
      GROVE_ASSIGN_OR_RETURN(const PageId next,
                             ctx_.allocator->Allocate(ExtentAllocator::kMaxExtentPages));
      std::swap(cur_, prev_);
      prev_first_ = first_;
      prev_used_ = used_;
      first_ = next;
      used_ = 0;
    }
    const PageId id = first_ + used_;
    char* p = cur_.data() + used_ * kPageSize;
    ++used_;
    return std::make_pair(id, p);
  }

  // Gives back the last page handed out (it will not be written).
  void Unuse() { --used_; }

  // Writes what is left and returns the unused rest of the current run to the allocator.
  Status Finish() {
    GROVE_RETURN_IF_ERROR(WritePrev());
    if (first_ == kInvalidPageId) return Status::Ok();
    if (used_ > 0) GROVE_RETURN_IF_ERROR(ctx_.direct_writer->WriteRun(first_, used_, cur_.data()));
    if (used_ < ExtentAllocator::kMaxExtentPages) {
      ctx_.allocator->Free(first_ + used_, ExtentAllocator::kMaxExtentPages - used_);
    }
    first_ = kInvalidPageId;
    return Status::Ok();
  }

 private:
  Status WritePrev() {
    if (prev_first_ == kInvalidPageId) return Status::Ok();
    const PageId first = std::exchange(prev_first_, kInvalidPageId);
    return ctx_.direct_writer->WriteRun(first, prev_used_, prev_.data());
  }

  const IndexContext& ctx_;
  AlignedBuffer cur_, prev_;
  PageId first_ = kInvalidPageId, prev_first_ = kInvalidPageId;
  uint32_t used_ = 0, prev_used_ = 0;
};

}  // namespace

Status BTree::BulkLoad(const BulkSource& source) {
  if (entries_.load() != 0 || height_.load() != 1) {
    return Status::FailedPrecondition("bulk load needs an empty index");
  }
  if (ctx_.direct_writer == nullptr) return Status::Internal("bulk load without a page writer");
  const size_t target = static_cast<size_t>(
      fill_factor_ * (kPageSize - btree::kSlotBase - SlottedPageView::kRegionHeader));

  // Level 0: leaves.
  std::vector<ChildRef> level;
  uint64_t entries = 0;
  {
    RunWriter run(ctx_);
    std::string key, cell, prev_last, first_of_leaf;
    char* leaf = nullptr;
    PageId leaf_id = kInvalidPageId;
    for (;;) {
      GROVE_ASSIGN_OR_RETURN(const bool more, source(&key, &cell));
      if (!more) break;
      if (entries > 0 && !(prev_last < key)) {
        return Status::InvalidArgument(fmt::format(
            "bulk load: key #{} is not greater than the key before it (input must be sorted and "
            "unique)",
            entries));
      }
      if (key.empty() || key.size() > max_key_ || cell.size() > max_cell_) {
        return Status::InvalidArgument(
            fmt::format("bulk load: entry #{} has a key of {} bytes or a "
                        "cell of {} bytes, beyond the limits",
                        entries, key.size(), cell.size()));
      }
      const size_t need = SlottedPageView::CellBytes(key.size(), cell.size());
      if (leaf == nullptr ||
          (NodeView(leaf).used_bytes() + need > target && NodeView(leaf).count() > 0) ||
          NodeView(leaf).free_bytes() < need) {
        GROVE_ASSIGN_OR_RETURN(auto next, run.Next());
        page::Init(next.second, PageType::kBTreeLeaf, next.first);
        Node::Format(next.second, 0);
        if (leaf != nullptr) {
          Node(leaf).set_right(next.first);
          Node(next.second).set_left(leaf_id);
          level.push_back({next.first, btree::ShortestSeparator(prev_last, key)});
        } else {
          level.push_back({next.first, ""});
        }
        leaf = next.second;
        leaf_id = next.first;
      }
      SlottedPage sp = Node(leaf).mutable_slots();
      sp.Insert(sp.count(), key, cell);
      prev_last = key;
      ++entries;
    }
    if (level.size() <= 1) {
      // Everything fits in the root leaf itself.
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard root, pool_->FetchWrite(root_));
      char* r = root.mutable_data();
      if (leaf != nullptr) {
        std::memcpy(r + kPageHeaderSize, leaf + kPageHeaderSize, kPageSize - kPageHeaderSize);
        run.Unuse();
      }
      GROVE_RETURN_IF_ERROR(run.Finish());
      entries_ = entries;
      return predictor_ ? predictor_->Rebuild() : Status::Ok();
    }
    GROVE_RETURN_IF_ERROR(run.Finish());
  }
  uint64_t leaves = level.size(), inners = 0;

  // Inner levels until one node remains; that node becomes the root's content.
  uint16_t height = 1;
  for (;;) {
    std::vector<AlignedBuffer> images;
    std::vector<ChildRef> next_level;
    for (size_t j = 0; j < level.size(); ++j) {
      const bool start =
          images.empty() || NodeView(images.back().data()).used_bytes() +
                                    SlottedPageView::CellBytes(level[j].low.size(), 8) >
                                target;
      if (start) {
        images.emplace_back(kPageSize);
        char* p = images.back().data();
        page::Init(p, PageType::kBTreeInner, kInvalidPageId);
        Node::Format(p, height);
        Node(p).set_leftmost(level[j].id);
        next_level.push_back({kInvalidPageId, level[j].low});
        continue;
      }
      SlottedPage sp = Node(images.back().data()).mutable_slots();
      sp.Insert(sp.count(), level[j].low, btree::EncodeChild(level[j].id));
    }
    ++height;
    if (images.size() == 1) {
      GROVE_ASSIGN_OR_RETURN(PageWriteGuard root, pool_->FetchWrite(root_));
      char* r = root.mutable_data();
      page::Init(r, PageType::kBTreeInner, root_);
      std::memcpy(r + kPageHeaderSize, images[0].data() + kPageHeaderSize,
                  kPageSize - kPageHeaderSize);
      ++inners;
      break;
    }
    RunWriter run(ctx_);
    for (size_t j = 0; j < images.size(); ++j) {
      GROVE_ASSIGN_OR_RETURN(auto slot, run.Next());
      std::memcpy(slot.second, images[j].data(), kPageSize);
      *reinterpret_cast<PageId*>(slot.second + 8) = slot.first;  // own id (page.h layout)
      next_level[j].id = slot.first;
    }
    GROVE_RETURN_IF_ERROR(run.Finish());
    inners += images.size();
    level = std::move(next_level);
  }
  // The root page was an empty leaf; it is now the top inner node.
  leaf_pages_ = leaves;
  inner_pages_ = inners;
  height_ = height;
  entries_ = entries;
  // A bulk-loaded tree has each level in one contiguous run: the models start from exact maps.
  return predictor_ ? predictor_->Rebuild() : Status::Ok();
}

}  // namespace grove
