#pragma once

// EpochTable: the epoch of the checkpoint that last wrote each page of the data file.
//
// A page read from disk must carry exactly the epoch recorded here; an older one is a lost write
// (the device acknowledged a write that never reached the media, or an old copy was restored).
// Checksums alone cannot see that: the stale page is internally valid.
//
// The table costs 4 bytes per data page (0.1% of the data). It is persisted incrementally as
// epoch-map pages in the data file: map page k holds the entries of pages
// [k * kEntriesPerPage, (k + 1) * kEntriesPerPage). Only map pages whose entries changed are
// rewritten by a checkpoint; the manifest lists every map page with the epoch that wrote it.
//
//   epoch-map page: common header (type kEpochMap, aux = k) | u32 epoch[kEntriesPerPage]
//
// Thread safety: Get() may run concurrently with everything and takes no lock (EpochEntries); the
// checkpoint methods are called by one checkpoint at a time. mu_ serialises the writers of the
// entries (a checkpoint's Commit, bulk loads' RecordDirect) and guards the pending lists.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grove/io_backend.h"
#include "grove/slice.h"
#include "grove/status.h"

#include "page/epoch_entries.h"
#include "page/extent_allocator.h"
#include "page/page.h"
#include "util/mutex.h"

namespace grove {

class EpochTable {
 public:
  static constexpr size_t kEntriesPerPage = EpochEntries::kChunk;

  // 0 for a page no checkpoint has written.
  uint32_t Get(PageId id) const { return entries_.Get(id); }

  // One map page to write in a checkpoint.
  struct MapPageImage {
    PageId id;
    AlignedBuffer image;  // kPageSize bytes, sealed, 4 KiB aligned for direct IO
  };

  // Stages a checkpoint of epoch `epoch` that writes `pages` (ascending or not). Allocates map
  // pages so that every page below the allocator's high water mark is covered (allocating map
  // pages may itself grow the file; this loops until stable), and decides which map pages the
  // checkpoint rewrites: their epochs in the manifest's view (Serialize) become `epoch`. The live
  // table is unchanged until Commit. REQUIRES: writers paused (the allocator must not move
  // underneath). Costs O(pages + map pages); the images are built by StagedImages, after.
  Status Stage(const std::vector<PageId>& pages, uint32_t epoch, ExtentAllocator* allocator);
  // The images of the map pages the staged checkpoint rewrites, with the new epochs of `pages`
  // (the same list Stage got) applied. Between Stage and Commit or Abort, on the checkpoint's
  // thread; writers need not be paused.
  std::vector<MapPageImage> StagedImages(const std::vector<PageId>& pages) const;
  // Applies a staged checkpoint to the live table once its pages are durable.
  void Commit(const std::vector<PageId>& pages, uint32_t epoch);
  // Forgets a staged checkpoint that failed: releases map pages Stage allocated.
  void Abort(ExtentAllocator* allocator);

  // Pages written outside checkpoints (bulk loads): the live table takes their epoch at once, and
  // their map pages are rewritten by the next checkpoint.
  void RecordDirect(PageId first, size_t count, uint32_t epoch);

  // The manifest's view: map page ids and the epoch each was written in.
  void Serialize(std::string* out) const;
  // Restores the map page list from the manifest; Load() then reads the pages.
  Status Deserialize(Slice* in);
  const std::vector<PageId>& map_page_ids() const { return map_pages_; }
  const std::vector<uint32_t>& map_page_epochs() const { return map_epochs_; }
  // Fills the entries of map page k from its verified image.
  Status LoadMapPage(size_t k, const char* image);

  // Bytes held in memory: the entries (4 per data page) and the map page list (an id and an
  // epoch per map page, one map page per kEntriesPerPage entries). Any thread.
  size_t MemoryBytes() const {
    const size_t entries = entries_.MemoryBytes();
    return entries +
           entries / (kEntriesPerPage * sizeof(uint32_t)) * (sizeof(PageId) + sizeof(uint32_t));
  }

 private:
  mutable Mutex mu_;
  EpochEntries entries_;  // written under mu_, read by anyone
  // Written only by the checkpoint thread (Stage/StagedImages/Commit/Abort) and at open.
  std::vector<PageId> map_pages_;
  std::vector<uint32_t> map_epochs_;
  size_t staged_new_pages_ = 0;       // map pages Stage() appended
  std::vector<size_t> staged_dirty_;  // map page indexes Stage() will rewrite
  std::vector<std::pair<size_t, uint32_t>> staged_old_epochs_;  // for Abort
  std::vector<size_t> pending_ GROVE_GUARDED_BY(mu_);           // map pages changed by RecordDirect
  // Between a successful Stage and its Commit or Abort, RecordDirect may change a map page whose
  // image is already staged (a variant writing pages directly while the checkpoint writes): such
  // pages stay pending for the next checkpoint, since the staged image lacks the new epochs.
  bool staging_ GROVE_GUARDED_BY(mu_) = false;
  std::vector<size_t> late_ GROVE_GUARDED_BY(mu_);
  uint32_t staged_epoch_ = 0;

  // Undoes Stage's allocations and epoch changes (Abort without the staging flag).
  void Unstage(ExtentAllocator* allocator);
};

}  // namespace grove
