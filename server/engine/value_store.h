#pragma once

// ValueStore: values larger than the inline threshold, in contiguous page extents shared by every
// index variant. The index holds only a blob cell of at most 37 bytes (value_cell.h).
//
//   blob page: common header (type kBlob, aux = index of the page within the blob) | chunk
//
// Blob pages are ordinary no-steal pages: written through the buffer pool and persisted by
// checkpoints, so a value and the index entry pointing at it always become durable together.
// Bulk loads write them directly (WriteDirect).
//
// Readers do not latch anything across a blob read: a concurrent overwrite may free the pages
// underneath. The blob's CRC detects that; the caller then re-reads the cell (DbImpl::ResolveCell)
// and reports data loss only if the cell did not change.
//
// Thread safety: all methods are safe for concurrent use.

#include <atomic>
#include <string>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "engine/value_cell.h"
#include "page/extent_allocator.h"

namespace grove {

class ValueStore {
 public:
  ValueStore(BufferPool* pool, ExtentAllocator* allocator, DirectPageWriter* direct)
      : pool_(pool), allocator_(allocator), direct_(direct) {}

  // Stores `value` and returns its blob cell, carrying `meta`.
  StatusOr<std::string> Write(Slice value, const CellMeta& meta);
  // The same, writing the pages straight to disk (bulk load).
  StatusOr<std::string> WriteDirect(Slice value, const CellMeta& meta);
  // Reads the value of `ref`. kDataLoss when a page fails its checks or the bytes do not match the
  // ref's CRC (which is also what a concurrently freed blob looks like).
  Status Read(const BlobRef& ref, IoCause cause, std::string* value);
  // Releases the blob's pages.
  void Free(const BlobRef& ref);

  uint64_t blob_values() const { return values_.load(); }
  uint64_t blob_pages() const { return pages_.load(); }
  void SetCounters(uint64_t values, uint64_t pages) {
    values_ = values;
    pages_ = pages;
  }

 private:
  static void FillPage(char* p, PageId id, uint32_t index, Slice value);
  static BlobRef MakeRef(PageId first, Slice value);

  BufferPool* const pool_;
  ExtentAllocator* const allocator_;
  DirectPageWriter* const direct_;
  std::atomic<uint64_t> values_{0};
  std::atomic<uint64_t> pages_{0};
};

}  // namespace grove
