#pragma once

// Values: `min`..`max` bytes (uniform; fixed when equal), cut from a shared block of random bytes
// so that producing one costs nothing and no engine can compress it away.
//
// Thread safety: the block is read-only after construction; Next takes the caller's Rng.

#include <cstdint>
#include <string>

#include "grove/slice.h"

#include "bench/rng.h"

namespace grove::bench {

class ValueGen {
 public:
  ValueGen(uint32_t min, uint32_t max, uint64_t seed);
  Slice Next(Rng& rng) const;
  double MeanSize() const { return (min_ + max_) / 2.0; }
  uint32_t min() const { return min_; }
  uint32_t max() const { return max_; }

 private:
  static constexpr size_t kBlock = 1 << 20;
  const uint32_t min_;
  const uint32_t max_;
  std::string block_;  // kBlock + max_ bytes
};

}  // namespace grove::bench
