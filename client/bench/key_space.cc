#include "bench/key_space.h"

#include <algorithm>

namespace grove::bench {

KeySpace::KeySpace(std::vector<uint64_t> keys, uint64_t loaded, uint64_t inserted)
    : keys_(std::move(keys)),
      capacity_(keys_.size()),
      loaded_(loaded),
      next_insert_(loaded + inserted),
      inserted_(inserted) {}

KeySpace::KeySpace(const GappedKeys& keys, uint64_t loaded, uint64_t inserted)
    : gapped_(keys),
      capacity_(keys.capacity()),
      loaded_(loaded),
      next_insert_(loaded + inserted),
      inserted_(inserted) {}

bool KeySpace::ClaimInsert(uint64_t* index) {
  const uint64_t i = next_insert_.fetch_add(1, std::memory_order_relaxed);
  if (i >= capacity_) {
    next_insert_.store(capacity_, std::memory_order_relaxed);  // keep it from wrapping
    return false;
  }
  *index = i;
  return true;
}

void KeySpace::BuildSorted() {
  if (!sorted_.empty() || loaded_ == 0) return;
  if (gapped_) {
    sorted_.resize(loaded_);
    for (uint64_t r = 0; r < loaded_; ++r) sorted_[r] = gapped_->sorted_loaded(r);
    return;
  }
  sorted_.assign(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(loaded_));
  std::sort(sorted_.begin(), sorted_.end());
}

}  // namespace grove::bench
