#pragma once

// ScanReadahead: a scan reads the pages it will need next ahead of itself, in one batched
// submission at a time, into the buffer pool's side pool (PrefetchBatch, as SHORTCUT's path
// prefetch does). A page read ahead enters the cache only when the scan reaches it and it
// verifies; pages the scan never reaches are dropped and counted as wasted.
//
// Which pages: the variant lists them in scan order from what it already holds: the siblings
// after the current leaf in the level-1 node above it (before it, in reverse), and the pages of
// a multi-page leaf (hln's subnodes). NextChildren gives the siblings the scan's bounds allow.
//
// How many (the window), at most the budget (Options::scan_readahead_pages):
//   * when the scan says how many entries it expects (a limit): the pages that many more entries
//     need at the entries per page seen so far;
//   * else when it has a bound on the side it moves to: every page up to the bound;
//   * else a ramp: 2 pages after the first, doubling with each page read, because a scan of
//     unknown length may stop at any time and its reads should grow with the evidence that it
//     goes on (the readahead of a file system works the same way).
//
// Thread safety: owned by one cursor, used by one thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/core/tree.h"

namespace grove::core {

// Called with the level-1 node above a leaf while a descent holds it latched.
using ParentVisitor = std::function<void(const ParentLatch&)>;

class ScanReadahead {
 public:
  ScanReadahead(BufferPool* pool, const CursorOptions& options);

  bool enabled() const { return budget_ > 0; }
  size_t budget() const { return budget_; }
  // The batch to hand to FetchRead for every page the scan reads (null when off).
  PrefetchBatch* batch() { return batch_.get(); }

  // After the scan read one page (a leaf or a subnode) holding `page_entries` entries, of which
  // it gave the scan `entries` (those at or after its position). The density of the pages ahead
  // is estimated from the whole pages: a scan that starts at the end of its first leaf must not
  // think the leaves ahead hold one entry each.
  void Visited(size_t entries, size_t page_entries);
  // How many pages ahead the scan should have in flight now (0: none).
  size_t Window() const;
  // Reads ahead the first Window() of `next` (the scan's next pages, nearest first): issues those
  // not yet in flight and gives back read-aheads that are no longer among them.
  //
  // The window slides by about a page per page read, so the pages it shares with the last
  // window were looked at then (issued, or resident): only the pages past the last one looked
  // at are new. Looking at every page of the window again cost a residency lookup per page per
  // page read, which made a scan of cached leaves twice as slow as one without readahead.
  void Issue(const std::vector<PageId>& next);

 private:
  const CursorOptions& options_;
  const size_t budget_;
  std::unique_ptr<PrefetchBatch> batch_;
  uint64_t pages_ = 0;                      // pages visited
  uint64_t entries_ = 0;                    // entries they gave
  uint64_t page_entries_ = 0;               // entries they held
  PageId last_looked_at_ = kInvalidPageId;  // the farthest page of the last window looked at
};

// The payloads of the children of `p` after its current child (before it, when reverse) that
// may hold keys inside the scan's bounds, nearest first, at most `max`, into *out (cleared
// first; a cursor reuses one vector).
void NextChildren(const ParentLatch& p, const CursorOptions& options, size_t max,
                  std::vector<Slice>* out);

}  // namespace grove::core
