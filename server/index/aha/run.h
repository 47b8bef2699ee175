#pragma once

// Sorted runs: the immutable files of AHA-tree's LSM buffers (docs/formats/aha.md), each one extent
// of the data file (1..256 pages), written once straight to disk (DirectPageWriter) and read
// through the buffer pool like any page, so that runs share the cache budget with the rest.
//
//   extent of a run (pages):
//   +--------------------------+------------------------+---------------------------+
//   | data 0 .. data_pages-1   | filter (filter_pages)  | index (the rest, >= 1)    |
//   +--------------------------+------------------------+---------------------------+
//
//   data page:   common header (type kRunData, aux = page number in the run)
//                | slotted region at byte 24 (page/slotted_page.h), keys strictly ascending:
//                  key -> tag u64 (lsn << 1 | tombstone) | cell (empty for a tombstone)
//   filter page: common header (type kRunFilter, aux = filter page number) | 4072 bytes of a
//                blocked Bloom filter (bloom.h): a key's probes all fall in one page
//   index page:  common header (type kRunIndex, aux = index page number)
//                | slotted region at byte 24: first key of data page i -> i (u32), in order
//
// The filter and index pages are redundant: a damaged filter page reads as "may contain", and a
// damaged index page makes Open read the fences off the data pages. Only a damaged data page
// loses keys (its reads answer kDataLoss).
//
// A run holds at most one version of a key (the newest of its inputs). Its descriptor (RunMeta:
// extent, page counts, key and LSN bounds) lives in the variant's metadata; the fence keys of its
// data pages are read from the index pages when the run is opened and kept in memory.
//
// Thread safety: Run and RunCursor are read-only after construction and safe to share; a
// RunCursor itself belongs to one thread. RunBuilder belongs to one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "page/extent_allocator.h"
#include "page/page.h"

namespace grove::aha {

inline constexpr PageType kRunData = static_cast<PageType>(80);
inline constexpr PageType kRunFilter = static_cast<PageType>(81);
inline constexpr PageType kRunIndex = static_cast<PageType>(82);

// One version of a key. Runs and memtables hold these; the newest version of a key wins.
struct Entry {
  std::string key;
  Lsn lsn = 0;
  bool tombstone = false;
  std::string cell;  // empty for a tombstone
};

// Newer of two versions of the same key: the larger LSN; on equal LSNs (a write replayed onto a
// state that already held it) the one from the fresher source, which the caller knows.
inline bool Newer(Lsn a, Lsn b) { return a > b; }

struct RunOptions {
  uint32_t max_pages = 256;        // a run's extent, at most ExtentAllocator::kMaxExtentPages
  double bloom_bits_per_key = 10;  // 0: no filter pages
};

// Where a run's extent comes from: the variant's RunSpace (which tracks extents written but not
// yet installed), or an allocator directly.
class ExtentSource {
 public:
  virtual ~ExtentSource() = default;
  virtual StatusOr<PageId> Allocate(uint32_t pages) = 0;
  // The run was never installed (its write failed, or the work that made it did): free it.
  virtual void Abandon(PageId first, uint32_t pages) = 0;
};

// What the metadata says about a run.
struct RunMeta {
  PageId first = 0;
  uint32_t pages = 0;
  uint32_t data_pages = 0;
  uint32_t filter_pages = 0;
  uint64_t entries = 0;
  uint64_t tombstones = 0;
  uint64_t bytes = 0;  // sum of key and cell bytes
  Lsn min_lsn = 0, max_lsn = 0;
  std::string min_key, max_key;

  uint32_t index_pages() const { return pages - data_pages - filter_pages; }
  void EncodeTo(std::string* out) const;
  static Status DecodeFrom(Slice* in, RunMeta* meta);  // DataLoss names what was malformed
};

class Run {
 public:
  // Reads the index pages of `meta`'s run (through `pool`, without caching them) and checks them.
  // When one is damaged (kDataLoss), the fences are read off the data pages instead
  // (index_rebuilt()); only damaged data as well fails the open.
  static StatusOr<std::shared_ptr<Run>> Open(BufferPool* pool, const RunMeta& meta);
  Run(RunMeta meta, std::vector<std::string> fences)
      : meta_(std::move(meta)), fences_(std::move(fences)) {}

  const RunMeta& meta() const { return meta_; }
  // Open found an index page damaged and took the fences from the data pages.
  bool index_rebuilt() const { return index_rebuilt_; }
  bool Covers(Slice key) const {
    return key.compare(meta_.min_key) >= 0 && key.compare(meta_.max_key) <= 0;
  }
  // Whether [lo, hi) (hi empty with !has_hi: unbounded) meets the run's key range.
  bool Overlaps(Slice lo, Slice hi, bool has_hi) const;
  // The data page that would hold `key` (the last whose first key is <= key), or 0 for a key
  // below the run.
  uint32_t PageFor(Slice key) const;
  uint64_t memory_bytes() const;

  // Looks `key` up. Returns false when the run has no version of it; *filtered says the Bloom
  // filter answered (no data page read).
  StatusOr<bool> Get(BufferPool* pool, Slice key, Entry* out, bool* filtered,
                     IoCause cause = IoCause::kDemand) const;

  // Reads the filter and index pages and checks them (Verify: Get and Open work around damage
  // there, so only this finds it).
  Status CheckFilterAndIndex(BufferPool* pool) const;

  // Every entry of data page `i`, decoded (the latch is held only while decoding).
  Status ReadPage(BufferPool* pool, uint32_t i, IoCause cause, std::vector<Entry>* out) const;

 private:
  // The filter's bits per key, from which its probe count follows.
  double BloomBitsPerKey() const;

  RunMeta meta_;
  std::vector<std::string> fences_;  // first key of each data page
  bool index_rebuilt_ = false;
};

// Writes one run. Feed entries in strictly ascending key order while Fits(); Finish writes the
// pages and returns the run.
class RunBuilder {
 public:
  explicit RunBuilder(const RunOptions& options);

  // Whether `e` still fits this run's extent.
  bool Fits(const Entry& e) const;
  // REQUIRES: Fits(e), e.key > every key added before.
  void Add(const Entry& e);
  bool empty() const { return meta_.entries == 0; }
  uint64_t entries() const { return meta_.entries; }

  // Allocates the extent and writes the run. REQUIRES: !empty(). The builder is spent after.
  StatusOr<std::shared_ptr<Run>> Finish(ExtentSource* extents, DirectPageWriter* writer,
                                        IoCause cause = IoCause::kCompaction);

 private:
  static size_t CellBytes(const Entry& e);
  uint32_t FilterPagesFor(uint64_t keys) const;
  uint32_t IndexPagesFor(uint64_t fence_bytes) const;
  void CloseDataPage();

  RunOptions options_;
  RunMeta meta_;
  std::vector<std::string> pages_;  // finished data page images (kPageSize each)
  std::string current_;             // the data page being filled
  size_t current_free_ = 0;
  std::vector<std::string> fences_;
  uint64_t fence_bytes_ = 0;
  std::vector<uint64_t> hashes_;
};

// Iterates one run forward or backward, page by page, holding no latch between calls. Scans read
// `readahead` pages per IO.
class RunCursor {
 public:
  RunCursor(BufferPool* pool, std::shared_ptr<const Run> run, IoCause cause, uint32_t readahead);

  // Positions at the first entry >= key (forward) / the last entry <= key (SeekForPrev).
  void Seek(Slice key);
  void SeekForPrev(Slice key);
  void SeekToFirst();
  void SeekToLast();
  bool Valid() const { return status_.ok() && pos_ >= 0 && pos_ < static_cast<int>(page_.size()); }
  const Entry& entry() const { return page_[pos_]; }
  void Next();
  void Prev();
  const Status& status() const { return status_; }
  const Run& run() const { return *run_; }

 private:
  // Loads data page i (reading ahead in `direction` +1 / -1); false at either end or on error.
  bool LoadPage(int64_t i, int direction);

  BufferPool* pool_;
  std::shared_ptr<const Run> run_;
  IoCause cause_;
  uint32_t readahead_;
  int64_t page_no_ = -1;
  std::vector<Entry> page_;
  int pos_ = -1;
  Status status_;
};

}  // namespace grove::aha
