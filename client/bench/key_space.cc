#include "bench/key_space.h"

#include <algorithm>

namespace grove::bench {

KeySpace::KeySpace(std::vector<uint64_t> keys, uint64_t loaded, uint64_t inserted)
    : keys_(std::move(keys)),
      loaded_(loaded),
      next_insert_(loaded + inserted),
      inserted_(inserted) {}

bool KeySpace::ClaimInsert(uint64_t* index) {
  const uint64_t i = next_insert_.fetch_add(1, std::memory_order_relaxed);
  if (i >= keys_.size()) {
    next_insert_.store(keys_.size(), std::memory_order_relaxed);  // keep it from wrapping
    return false;
  }
  *index = i;
  return true;
}

void KeySpace::BuildSorted() {
  if (!sorted_.empty() || loaded_ == 0) return;
  sorted_.assign(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(loaded_));
  std::sort(sorted_.begin(), sorted_.end());
}

}  // namespace grove::bench
