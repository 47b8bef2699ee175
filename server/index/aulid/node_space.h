#pragma once

// Where AULID's inner structures live (slot.h has their page formats):
//
//   * Mixed nodes take ceil(slots / K) pages (K: the node's slots per page, slot.h). A node of up
//     to 256 pages is one extent and its
//     parent slot names its first page. A larger one (a root over hundreds of thousands of leaves)
//     takes several extents of up to 256 pages; the node-to-extents map (first page -> extents)
//     is kept in memory and checkpointed in the variant's metadata, so finding the page of a slot
//     is arithmetic either way and a lookup still reads one page per level.
//   * Packed arrays are objects of 128, 256, 512 or 1024 bytes in slab pages of one size class
//     each, so an array never straddles pages. Which objects are taken is a bitmap per slab,
//     checkpointed in the metadata; a slab whose last object is freed goes back to the allocator.
//   * Branch pages (two-layer B+-tree children) are single pages.
//
// PageSink is how builders and updates reach pages: LiveSink through the buffer pool (pages
// dirtied under the write's room), ImageSink as in-memory images written straight to the data
// file afterwards (bulk loads, which may build more inner pages than the cache holds).
//
// Thread safety: none inside; aulid.h's inner lock serialises changes against lookups (which
// only call PageOf).

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grove/index.h"
#include "grove/io_backend.h"

#include "buffer/buffer_pool.h"
#include "index/aulid/slot.h"
#include "page/extent_allocator.h"

namespace grove::aulid {

class NodeSpace {
 public:
  explicit NodeSpace(ExtentAllocator* allocator) : allocator_(allocator) {}

  // A mixed node of `pages` pages: its first page (the node's name). Pages are not formatted.
  StatusOr<PageId> AllocateMixed(uint64_t pages);
  void FreeMixed(PageId first, uint64_t pages);
  // The page holding page `index` of node `first`.
  PageId PageOf(PageId first, uint64_t index) const;
  PageId SlotPage(const MixedRef& node, uint64_t slot) const {
    return PageOf(node.first, SlotPageIndex(slot, node.per_page));
  }
  // Calls `fn(first, count)` for every extent of node `first` of `pages` pages.
  template <typename Fn>
  void ForEachExtent(PageId first, uint64_t pages, Fn fn) const;

  struct Object {
    PageId slab = kInvalidPageId;
    uint32_t object = 0;
    bool fresh = false;  // the slab page is new: format it
  };
  // With `open` (a bulk build's slab of this class, or kInvalidPageId), objects come only from
  // that slab, or a new one that becomes it: a build of n arrays then dirties n / per-slab pages
  // (what InnerBuilder::PagesForNode counts), not one page per hole in older slabs. Without it,
  // any slab with a free object serves (single inserts: one page either way).
  StatusOr<Object> AllocatePacked(int cls, PageId* open = nullptr);
  // Returns true when the slab became empty and was freed (the caller drops its page).
  bool FreePacked(int cls, PageId slab, uint32_t object);

  StatusOr<PageId> AllocateBranch() {
    GROVE_ASSIGN_OR_RETURN(const PageId id, allocator_->Allocate(1));
    ++branch_pages_;
    return id;
  }
  void FreeBranch(PageId id) {
    allocator_->Free(id, 1);
    --branch_pages_;
  }

  void Serialize(std::string* out) const;
  Status Deserialize(Slice* in);

  // Verify: the slabs in use, each with its class and bitmap.
  struct SlabState {
    int cls = 0;
    uint64_t used = 0;  // bit i: object i taken
  };
  const std::map<PageId, SlabState>& slabs() const { return slabs_; }
  uint64_t slab_pages() const { return slabs_.size(); }
  uint64_t mixed_pages() const { return mixed_pages_; }
  uint64_t branch_pages() const { return branch_pages_; }

 private:
  ExtentAllocator* const allocator_;
  std::map<PageId, std::vector<PageId>> extents_;  // nodes of more than one extent
  std::map<PageId, SlabState> slabs_;
  std::array<std::set<PageId>, kPackedClasses> partial_;  // slabs with a free object
  uint64_t mixed_pages_ = 0, branch_pages_ = 0;
};

template <typename Fn>
void NodeSpace::ForEachExtent(PageId first, uint64_t pages, Fn fn) const {
  if (pages <= ExtentAllocator::kMaxExtentPages) {
    fn(first, static_cast<uint32_t>(pages));
    return;
  }
  const std::vector<PageId>& ext = extents_.at(first);
  for (size_t i = 0; i < ext.size(); ++i) {
    const uint64_t left = pages - i * ExtentAllocator::kMaxExtentPages;
    fn(ext[i], static_cast<uint32_t>(std::min<uint64_t>(left, ExtentAllocator::kMaxExtentPages)));
  }
}

class PageSink {
 public:
  virtual ~PageSink() = default;
  // A new page of `type`, zeroed and initialised, to fill.
  virtual StatusOr<char*> Fresh(PageId id, PageType type) = 0;
  // An existing page, for modification.
  virtual StatusOr<char*> Existing(PageId id) = 0;
  // An existing page, to read only: it is not dirtied (freeing a node reads every page of it).
  virtual StatusOr<const char*> Read(PageId id) = 0;
  // A page that was freed: no longer written.
  virtual void Drop(PageId id) = 0;
  // Lets go of any page latch the sink holds (before the caller reads pages itself).
  virtual void Release() {}
};

// Through the buffer pool. A pointer it returns is good until the next call: it holds one page
// guard at a time (callers hold the inner part exclusively, so no reader sees a change half
// done), and counts the most distinct pages it held dirty at once (a dropped page leaves the
// count but not the peak: the buffer pool had to hold it), which the PagesFor* bounds cover.
class LiveSink final : public PageSink {
 public:
  explicit LiveSink(BufferPool* pool) : pool_(pool) {}
  StatusOr<char*> Fresh(PageId id, PageType type) override;
  StatusOr<char*> Existing(PageId id) override;
  StatusOr<const char*> Read(PageId id) override;
  void Drop(PageId id) override;
  uint64_t dirtied() const { return peak_; }
  void Release() override {
    guard_.Release();
    read_.Release();
  }

 private:
  BufferPool* const pool_;
  PageWriteGuard guard_;  // at most one of the two holds a page
  PageReadGuard read_;
  std::set<PageId> dirtied_;
  uint64_t peak_ = 0;
};

// In-memory images, written through the DirectPageWriter by Flush() in runs of consecutive pages.
class ImageSink final : public PageSink {
 public:
  StatusOr<char*> Fresh(PageId id, PageType type) override;
  StatusOr<char*> Existing(PageId id) override;
  StatusOr<const char*> Read(PageId id) override;
  void Drop(PageId id) override { images_.erase(id); }
  Status Flush(DirectPageWriter* writer);
  size_t pages() const { return images_.size(); }

 private:
  std::map<PageId, AlignedBuffer> images_;
};

}  // namespace grove::aulid
