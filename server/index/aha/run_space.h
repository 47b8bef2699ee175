#pragma once

// RunSpace: when the extent of a run that left the index may be reused.
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

class RunSpace {
 public:
  RunSpace(BufferPool* pool, ExtentAllocator* allocator) : pool_(pool), allocator_(allocator) {}

  // `run` is no longer part of the index (it was merged or moved into other runs).
  void Retire(std::shared_ptr<const Run> run);

  // Checkpoint hooks (Index::PrepareCheckpoint, OnCheckpointDurable, OnCheckpointAbandoned).
  void PrepareCheckpoint(uint64_t epoch);
  void OnCheckpointDurable(uint64_t epoch);
  void OnCheckpointAbandoned(uint64_t epoch);

  // The extents retired and not yet freed, for the checkpoint's metadata.
  void Serialize(std::string* out) const;
  // Frees the extents a checkpoint's Serialize listed (reopening from it). DataLoss when malformed.
  static Status FreeRetiredAtOpen(Slice* in, ExtentAllocator* allocator);

  uint64_t retired_runs() const;
  uint64_t retired_pages() const;
  // Extents of retired runs, for Verify (they are allocated but belong to no live run).
  std::vector<std::pair<PageId, uint32_t>> RetiredExtents() const;

 private:
  // Frees the runs of `list` that no reader holds; keeps the others in it.
  void FreeUnreferencedLocked(std::vector<std::shared_ptr<const Run>>* list) REQUIRES(mu_);

  BufferPool* const pool_;
  ExtentAllocator* const allocator_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<const Run>> pending_ GUARDED_BY(mu_);
  std::map<uint64_t, std::vector<std::shared_ptr<const Run>>> by_epoch_ GUARDED_BY(mu_);
  // Checkpoint-free but still held by readers: freed when the last reader lets go (next hook).
  std::vector<std::shared_ptr<const Run>> held_ GUARDED_BY(mu_);
};

}  // namespace grove::aha
