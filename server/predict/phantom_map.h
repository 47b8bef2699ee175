#pragma once

// PhantomMap: the nodes of one tree level in key order ("rank"), mapped to their physical pages by
// a compact extent map. It plays the role of SHORTCUT's per-level file plus the file system's
// extent mapping (§4.3): a model predicts a rank, the map turns it into a page.
//
//   extents: [first_rank, first_page, length] ... sorted by first_rank, covering 0..size()-1
//
// A bulk-loaded level is laid out contiguously, so it is one extent. A split inserts the new node
// right after the one it split from ("insert-range"), a merge removes a node ("collapse-range");
// both shift the ranks behind them by one and leave the other nodes' pages alone, like the hole
// punching the paper applies in batches. Adjacent extents that are contiguous in both rank and page
// are merged, so a level whose new nodes happen to sit next to their neighbours stays one extent.
//
// Thread safety: none; the predictor publishes immutable copies.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace grove::predict {

using PageId = uint64_t;

class PhantomMap {
 public:
  struct Extent {
    uint64_t first_rank;
    PageId first_page;
    uint64_t length;
  };

  // A map of `pages`, given in rank order.
  static PhantomMap FromPages(const std::vector<PageId>& pages);

  uint64_t size() const { return size_; }
  size_t extents() const { return extents_.size(); }
  size_t MemoryBytes() const { return extents_.capacity() * sizeof(Extent); }
  const std::vector<Extent>& extent_list() const { return extents_; }

  // The page of node `rank`. REQUIRES: rank < size().
  PageId PageAt(uint64_t rank) const;
  // Inserts `page` as node `rank`; nodes at rank and beyond move up by one. rank <= size().
  void InsertAt(uint64_t rank, PageId page);
  // Removes node `rank`; nodes beyond it move down by one.
  void RemoveAt(uint64_t rank);
  // Page -> rank for every node (the batch-time lookup table of the paper, built on demand).
  std::unordered_map<PageId, uint64_t> RankIndex() const;

 private:
  size_t ExtentOf(uint64_t rank) const;  // index of the extent holding `rank`
  void Coalesce(size_t around);

  std::vector<Extent> extents_;
  uint64_t size_ = 0;
};

}  // namespace grove::predict
