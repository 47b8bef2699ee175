#pragma once

// EpochEntries: the live epoch of every data page (EpochTable's in-memory table), readable
// without a lock. Every page read from disk is checked against it, so readers must not serialise
// on a mutex; writers (checkpoints, bulk loads, open) are rare and serialised by EpochTable.
//
// Entries live in chunks of kChunk atomics (one chunk per epoch-map page) that never move once
// allocated. A directory holds the chunk pointers and how many of them readers may use (stored
// with release semantics after the pointers); growing past its capacity publishes a new directory
// of twice the capacity. Old directories stay allocated until
// the table is destroyed, because a reader may still hold one; doubling keeps that garbage below
// the size of the live directory.
//
// A reader sees, for each entry, either the value before or after a concurrent write; ordering
// with the page's own life (a page is read from disk only after the checkpoint that wrote it
// committed and released the frame) comes from the buffer pool's synchronisation.
//
// Thread safety: Get from any thread; every other method from one writer at a time.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "page/page.h"

namespace grove {

class EpochEntries {
 public:
  static constexpr size_t kChunk = (kPageSize - kPageHeaderSize) / 4;

  EpochEntries() { Publish(0); }
  EpochEntries(const EpochEntries&) = delete;
  EpochEntries& operator=(const EpochEntries&) = delete;

  // 0 beyond the covered range.
  uint32_t Get(PageId id) const {
    const Dir* d = dir_.load(std::memory_order_acquire);
    const size_t c = id / kChunk;
    if (c >= d->used.load(std::memory_order_acquire)) return 0;
    return d->chunks[c][id % kChunk].load(std::memory_order_acquire);
  }

  // Entries covered: a multiple of kChunk.
  size_t size() const { return chunks_.size() * kChunk; }

  // Covers at least `entries` (rounded up to whole chunks); new entries are 0. Never shrinks.
  void Grow(size_t entries);

  // REQUIRES: id < size().
  void Set(PageId id, uint32_t epoch) {
    chunks_[id / kChunk][id % kChunk].store(epoch, std::memory_order_release);
  }

  // Every covered entry back to 0, then covers exactly `entries` if more (open-time reset).
  void Reset(size_t entries);

  // Bytes held: the chunks readers may use plus every directory published. Any thread.
  size_t MemoryBytes() const {
    const Dir* d = dir_.load(std::memory_order_acquire);
    return d->used.load(std::memory_order_acquire) * kChunk * sizeof(uint32_t) +
           dir_bytes_.load(std::memory_order_relaxed);
  }

 private:
  struct Dir {
    std::atomic<size_t> used{0};  // chunks readers may use
    std::unique_ptr<std::atomic<uint32_t>*[]> chunks;
  };
  // Publishes a directory of the chunks allocated so far, with room for `capacity` chunks.
  void Publish(size_t capacity);

  std::vector<std::unique_ptr<std::atomic<uint32_t>[]>> chunks_;
  std::vector<std::unique_ptr<Dir>> dirs_;  // every directory published; the last is current
  size_t capacity_ = 0;
  std::atomic<size_t> dir_bytes_{0};  // the pointer arrays of dirs_
  std::atomic<const Dir*> dir_{nullptr};
};

}  // namespace grove
