#include "page/epoch_entries.h"

#include <algorithm>

namespace grove {

void EpochEntries::Publish(size_t capacity) {
  auto d = std::make_unique<Dir>();
  d->chunks = std::make_unique<std::atomic<uint32_t>*[]>(std::max<size_t>(capacity, 1));
  for (size_t c = 0; c < chunks_.size(); ++c) d->chunks[c] = chunks_[c].get();
  d->used.store(chunks_.size(), std::memory_order_relaxed);
  capacity_ = capacity;
  dir_bytes_.fetch_add(std::max<size_t>(capacity, 1) * sizeof(void*), std::memory_order_relaxed);
  dir_.store(d.get(), std::memory_order_release);
  dirs_.push_back(std::move(d));
}

void EpochEntries::Grow(size_t entries) {
  const size_t want = (entries + kChunk - 1) / kChunk;
  if (want <= chunks_.size()) return;
  while (chunks_.size() < want) {
    auto chunk = std::make_unique<std::atomic<uint32_t>[]>(kChunk);
    for (size_t i = 0; i < kChunk; ++i) chunk[i].store(0, std::memory_order_relaxed);
    chunks_.push_back(std::move(chunk));
  }
  if (want > capacity_) {
    Publish(std::max(want, 2 * capacity_));
    return;
  }
  // Room in the current directory: fill in the new pointers, then let readers use them.
  Dir* d = dirs_.back().get();
  for (size_t c = d->used.load(std::memory_order_relaxed); c < want; ++c) {
    d->chunks[c] = chunks_[c].get();
  }
  d->used.store(want, std::memory_order_release);
}

void EpochEntries::Reset(size_t entries) {
  for (auto& chunk : chunks_) {
    for (size_t i = 0; i < kChunk; ++i) chunk[i].store(0, std::memory_order_release);
  }
  Grow(entries);
}

}  // namespace grove
