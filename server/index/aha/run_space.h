#pragma once

// RunSpace: the extents of runs, from allocation to reuse.
//
// Outputs: a run being written is "in flight" from its allocation (Allocate) until it is
// installed in the index (Installed) or abandoned (Abandon, freed at once: nothing names it).
// Callers allocate inside a maintenance unit, so a checkpoint's allocator state counts every
// extent that is in flight when the checkpoint is taken; the checkpoint does not name such runs,
// so they are listed with the retired ones below and freed by a reopen from it.
//
// Runs are written straight to disk, not through the no-steal buffer pool, so freeing a run's
// extent at once would let the next run overwrite pages the durable checkpoint still names. A
// retired run is therefore kept until (1) a checkpoint that no longer references it is durable
// and (2) no reader holds it (the index hands runs to readers as shared_ptrs; once the run is out
// of the live structure, only this class can hand out new references, so a use count of one is
// final). Its pages are then dropped from the cache and the extent freed.
//
// A checkpoint's metadata lists the extents retired before it and not yet freed: the checkpoint
// does not reference them but its allocator state still counts them as allocated, so a reopen
// from it frees them (FreeRetiredAtOpen), and nothing leaks across a crash.
//
//   Retire(run) -> pending --PrepareCheckpoint(e)--> retired at e --OnCheckpointDurable(>= e)-->
//   freed once unreferenced; OnCheckpointAbandoned(e) moves "retired at e" back to pending.
//
// Thread safety: all methods are safe for concurrent use (one internal mutex). The checkpoint
// hooks are called by one checkpoint at a time, as the Index hooks are.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "buffer/buffer_pool.h"
#include "index/aha/run.h"
#include "page/extent_allocator.h"
#include "util/mutex.h"

namespace grove::aha {

class RunSpace final : public ExtentSource {
 public:
  RunSpace(BufferPool* pool, ExtentAllocator* allocator) : pool_(pool), allocator_(allocator) {}

  // ExtentSource: an output extent, in flight until Installed or Abandon.
  StatusOr<PageId> Allocate(uint32_t pages) override;
  void Abandon(PageId first, uint32_t pages) override;
  // `run` is now part of the index (its metadata will name it).
  void Installed(const Run& run) { Installed(run.meta().first); }
  // The extent allocated at `first` is now part of the index (leaf pages, page_leaf.h).
  void Installed(PageId first);

  // `run` is no longer part of the index (it was merged or moved into other runs).
  void Retire(std::shared_ptr<const Run> run);
  // Pages [first, first + pages) are no longer part of the index; `ref` is what readers hold
  // while they may still read them (a leaf page's descriptor).
  void Retire(std::shared_ptr<const void> ref, PageId first, uint32_t pages);

  // Checkpoint hooks (Index::PrepareCheckpoint, OnCheckpointDurable, OnCheckpointAbandoned).
  void PrepareCheckpoint(uint64_t epoch);
  void OnCheckpointDurable(uint64_t epoch);
  void OnCheckpointAbandoned(uint64_t epoch);

  // The extents retired and not yet freed, for the checkpoint's metadata.
  void Serialize(std::string* out) const;
  // Frees the extents a checkpoint's Serialize listed (reopening from it). DataLoss when malformed
  // or when a listed page is free already.
  static Status FreeRetiredAtOpen(Slice* in, ExtentAllocator* allocator);

  uint64_t retired_runs() const;
  // Extents of retired and in-flight runs, for Verify (allocated, but no live run's).
  std::vector<std::pair<PageId, uint32_t>> RetiredExtents() const;

 private:
  struct Extent {
    std::shared_ptr<const void> ref;  // unread once it is the only reference
    PageId first;
    uint32_t pages;
  };
  // Frees the extents of `list` that no reader holds; keeps the others in it.
  void FreeUnreferencedLocked(std::vector<Extent>* list) GROVE_REQUIRES(mu_);

  BufferPool* const pool_;
  ExtentAllocator* const allocator_;
  mutable Mutex mu_;
  std::vector<Extent> pending_ GROVE_GUARDED_BY(mu_);
  std::map<uint64_t, std::vector<Extent>> by_epoch_ GROVE_GUARDED_BY(mu_);
  // Checkpoint-free but still held by readers: freed when the last reader lets go (next hook).
  std::vector<Extent> held_ GROVE_GUARDED_BY(mu_);
  std::map<PageId, uint32_t> in_flight_ GROVE_GUARDED_BY(mu_);  // first page -> pages
};

}  // namespace grove::aha
