#pragma once

// ExtentAllocator: hands out runs of 1..256 contiguous pages of the data file (huge leaves, page
// groups and blobs need contiguous runs; single tree nodes take one page).
//
// A binary buddy system over 256-page chunks: free blocks are power-of-two sized and aligned to
// their size; freeing a block merges it with its free buddy. A request for n pages takes a block of
// the next power of two and gives back the aligned blocks that cover its unused tail, so no space
// is lost to rounding. The file grows one chunk (1 MiB) at a time; pages 0 and 1 (the superblock
// slots) are never handed out.
//
// The state is a few sorted sets; it is serialised into every checkpoint's manifest
// (docs/formats/manifest.md) and restored on open.
//
// Pages freed since the newest durable checkpoint may still be named by it. Pages of the buffer
// pool can take them at once (a checkpoint writes pages in place only after its double-write
// batch makes the previous state unnecessary), but a page written straight to disk
// (DirectPageWriter) cannot: AllocateUnreferenced hands out only pages that no durable
// checkpoint can name, tracking frees by the checkpoint that first leaves them out (NoteCheckpoint,
// NoteDurable).
//
// Thread safety: all methods are safe for concurrent use (one internal mutex).

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "grove/slice.h"
#include "grove/status.h"

#include "page/page.h"
#include "util/mutex.h"

namespace grove {

class ExtentAllocator {
 public:
  static constexpr uint32_t kMaxExtentPages = 256;
  static constexpr int kOrders = 9;  // block sizes 1, 2, 4, ..., 256
  static constexpr uint64_t kChunkPages = kMaxExtentPages;
  static constexpr PageId kFirstDataPage = 2;

  // An empty file: no chunks yet.
  ExtentAllocator() = default;

  // Allocates `n` contiguous pages (1 <= n <= 256) and returns the first.
  StatusOr<PageId> Allocate(uint32_t n);
  // Like Allocate, but only pages free in the newest durable checkpoint too, or new ones: for
  // pages written directly to disk outside a bulk load.
  StatusOr<PageId> AllocateUnreferenced(uint32_t n);
  // Returns [first, first + n) to the free pool. REQUIRES: the run was allocated.
  void Free(PageId first, uint32_t n);
  // The same for pages no durable checkpoint names (a retired run the newest durable checkpoint
  // left out, a run never installed): AllocateUnreferenced may take them at once.
  void FreeUnreferenced(PageId first, uint32_t n);

  // Checkpoint `epoch` takes its snapshot now (with writers paused): pages freed so far are free
  // in it.
  void NoteCheckpoint(uint64_t epoch);
  // Checkpoint `epoch` is durable: the pages freed before its snapshot are named by no durable
  // state.
  void NoteDurable(uint64_t epoch);
  // Free pages a durable checkpoint may still name.
  uint64_t recently_freed_pages() const;

  // The file size the allocator accounts for, in pages (a multiple of the chunk size).
  uint64_t high_water_pages() const;
  uint64_t free_pages() const;
  // Bytes its sets hold: one tree node per free block and per recently freed page, at the size
  // glibc's malloc gives a red-black tree node (32 bytes of links and colour, the value, 8 bytes
  // of chunk header, rounded up to 16).
  uint64_t MemoryBytes() const;
  // Whether page `id` is inside a free block (for Verify).
  bool IsFree(PageId id) const;

  void Serialize(std::string* out) const;
  // Replaces the state with a serialised one; DataLoss on malformed input or overlapping blocks.
  Status Deserialize(Slice in);

  // Verify(): checks that the free blocks are aligned, inside the file, disjoint, and that no two
  // free buddies were left unmerged. Returns "" or the first problem.
  std::string CheckInvariants() const;

 private:
  void FreeBlockLocked(PageId start, int order) GROVE_REQUIRES(mu_);
  void AddChunkLocked() GROVE_REQUIRES(mu_);
  void FreeRangeLocked(PageId first, uint64_t n) GROVE_REQUIRES(mu_);
  StatusOr<PageId> AllocateLocked(uint32_t n, bool unreferenced) GROVE_REQUIRES(mu_);
  // Whether a page of [first, first + n) was freed since the newest durable checkpoint.
  bool RecentlyFreedLocked(PageId first, uint64_t n) const GROVE_REQUIRES(mu_);
  // Takes `start` (a free block of `order`) out of the pool for an extent of n pages.
  PageId TakeBlockLocked(PageId start, int order, uint32_t n) GROVE_REQUIRES(mu_);

  mutable Mutex mu_;
  std::array<std::set<PageId>, kOrders> free_ GROVE_GUARDED_BY(mu_);
  uint64_t chunks_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t free_pages_ GROVE_GUARDED_BY(mu_) = 0;
  // Page -> the epoch of the first checkpoint whose snapshot has it free (kUntagged: none yet),
  // for pages freed since the newest durable checkpoint. Pages allocated again stay listed; they
  // are not free, so AllocateUnreferenced never looks at them.
  static constexpr uint64_t kUntagged = ~0ull;
  std::map<PageId, uint64_t> recently_freed_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove
