#include "index/treeline/memory_split.h"

#include <algorithm>

namespace grove::treeline {

MemorySplit::MemorySplit(const Options& options, uint64_t pool_bytes)
    : o_(options),
      pool_(std::clamp(pool_bytes, options.min_pool_bytes,
                       std::max(options.min_pool_bytes, options.max_pool_bytes))) {}

uint64_t MemorySplit::Decide(uint64_t pool_ghost_hits, uint64_t cache_ghost_hits,
                             uint64_t ceiling) {
  if (!adaptive()) return pool_;
  pool_hits_ += pool_ghost_hits;
  cache_hits_ += cache_ghost_hits;
  if (pool_hits_ + cache_hits_ < o_.evidence) return pool_;
  const double p = static_cast<double>(pool_hits_);
  const double c = static_cast<double>(cache_hits_);
  // A lopsided count moves two steps: the split starts far from where uniform reads want it.
  if (p > o_.margin * c) {
    const uint64_t step = p > 3 * o_.margin * c ? 2 * o_.step_bytes : o_.step_bytes;
    const uint64_t next = std::max(pool_, std::min({o_.max_pool_bytes, pool_ + step, ceiling}));
    if (next != pool_) ++to_pool_;
    pool_ = next;
  } else if (c > o_.margin * p) {
    const uint64_t step = c > 3 * o_.margin * p ? 2 * o_.step_bytes : o_.step_bytes;
    const uint64_t next = pool_ - std::min(step, pool_ - o_.min_pool_bytes);
    if (next != pool_) ++to_cache_;
    pool_ = next;
  }
  pool_hits_ = cache_hits_ = 0;
  return pool_;
}

}  // namespace grove::treeline
