#pragma once

// Leaf pages of AHA-tree's adapted leaves (paper §5, §6.2): after a hot range's buffers are
// emptied, its leaves hold their data in B+-tree leaf pages of the core's format (core::Leaf,
// docs/formats/tree.md: type 16, cells key -> cell), not in runs. An adapted leaf lists its pages
// in key order in memory (and in the metadata), each with its first key, so a read goes straight
// to one page and a range search reads only the pages it covers.
//
//   adapted leaf (node.h)          pages, one extent per build, written straight to disk
//   pages: [low0 -> p]  ---------> +--------+--------+--------+
//          [low1 -> p+1] --------> | leaf   | leaf   | leaf   |   sibling links 0: the node's
//          [low2 -> p+2] --------> +--------+--------+--------+   list is the order
//
// Pages are copy-on-write like runs: a merge of newer versions into a leaf writes new pages for
// the pages it changes (splitting any that overflow, dropping any it empties) and retires the
// old ones through RunSpace. Their entries are the oldest versions of their keys (every buffer is
// fresher), so they carry no LSN (0 in merges) and no tombstones.
//
// Page fill (`leaf_alloc`): kEven spreads the entries evenly over as few pages as hold them
// (every page about as full); kSoundRemedy gives page i the fill 1 / (2 - u_i), u_i = frac(i *
// phi) (between half and full, the steady-state distribution of a B+-tree under random inserts),
// so that later splits come one at a time rather than all at once.
//
// Thread safety: LeafPage is immutable; the builder and sources belong to one thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/aha/merge.h"
#include "index/aha/run.h"

namespace grove::aha {

struct LeafPage {
  PageId id = 0;
  std::string low;       // its first key
  uint32_t used = 0;     // bytes its cells take, for the utilisation figures
  uint32_t entries = 0;  // its cells
};
using LeafPages = std::vector<std::shared_ptr<const LeafPage>>;
using PageExtent = std::pair<PageId, uint32_t>;  // first page, pages

enum class LeafAlloc { kEven, kSoundRemedy };

// Pages of one adapted leaf node: a transformation shares more among sibling leaves, and a leaf
// that grows past twice this splits.
inline constexpr size_t kMaxLeafPagesPerNode = 256;

// Packs entries (strictly ascending keys, no tombstones) into leaf pages.
class LeafPageBuilder {
 public:
  explicit LeafPageBuilder(LeafAlloc alloc) : alloc_(alloc) {}
  void Add(const Entry& e);
  // Starts a new segment: its entries never share a page with the ones before (a merge rebuilds
  // each changed page on its own).
  void Break();
  bool empty() const { return entries_.empty(); }
  // Lays out the pages, allocates one extent per at most 256 of them and writes them. The
  // extents (appended to *written) are in flight in `extents` until the caller installs them; on
  // failure none is left allocated. With `pages_per_segment`, how many pages each segment got
  // (0 for an empty one).
  StatusOr<LeafPages> Finish(ExtentSource* extents, DirectPageWriter* writer, IoCause cause,
                             std::vector<PageExtent>* written,
                             std::vector<size_t>* pages_per_segment = nullptr);

 private:
  void Layout(size_t begin, size_t end, uint64_t bytes, std::vector<size_t>* ends) const;

  LeafAlloc alloc_;
  std::vector<Entry> entries_;
  std::vector<size_t> segments_{0};  // first entry of each segment
  std::vector<uint64_t> segment_bytes_{0};
};

// Merges newer versions into a leaf's pages, copy-on-write: only the pages that receive entries
// are rebuilt (split evenly when they overflow, dropped when emptied); the others stay.
class PageMerger {
 public:
  PageMerger(BufferPool* pool, LeafPages old, IoCause cause)
      : pool_(pool), old_(std::move(old)), cause_(cause), builder_(LeafAlloc::kEven) {}
  // The newest version of a key (a tombstone deletes it), in ascending key order.
  Status Add(const Entry& e);
  // Writes the rebuilt pages. *pages: the leaf's new list; *retired: the pages replaced;
  // *released: cells of page entries replaced or deleted.
  Status Finish(ExtentSource* extents, DirectPageWriter* writer, LeafPages* pages,
                LeafPages* retired, std::vector<PageExtent>* written,
                std::vector<std::string>* released);

 private:
  // The rest of the current page's old entries, and the end of its segment.
  void CloseCurrent();

  BufferPool* pool_;
  LeafPages old_;
  IoCause cause_;
  LeafPageBuilder builder_;
  int current_ = -1;                // old page being rebuilt
  std::vector<Entry> old_entries_;  // its entries
  size_t old_pos_ = 0;
  std::vector<int> rebuilt_;  // old pages rebuilt, in order (-1: none existed)
  std::vector<std::string> released_;
};

// Bytes of cells a leaf page holds when full.
size_t LeafPageCapacity();

// The index of the page that holds (or would hold) `key`: the last whose low is <= key, else 0.
size_t PageFor(const LeafPages& pages, Slice key);
// Reads page `page` (one of the leaf's) into entries with LSN 0. DataLoss when it is not a leaf
// page of this id.
Status ReadLeafPage(BufferPool* pool, const LeafPage& page, IoCause cause, std::vector<Entry>* out);
// Looks `key` up in the leaf's pages.
StatusOr<bool> GetFromPages(BufferPool* pool, const LeafPages& pages, Slice key, Entry* out);

// The leaf's pages as a merge source (see NewRunSource for start / from_start / reverse).
std::unique_ptr<Source> NewPagesSource(BufferPool* pool, LeafPages pages, Slice start,
                                       bool from_start, bool reverse, IoCause cause,
                                       uint32_t readahead);

}  // namespace grove::aha
