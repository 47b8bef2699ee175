#include "bench/value_gen.h"

#include <cstring>

namespace grove::bench {

ValueGen::ValueGen(uint32_t min, uint32_t max, uint64_t seed) : min_(min), max_(max) {
  block_.resize(kBlock + max_ + 8);
  Rng rng(seed ^ 0x76616cull);  // "val"
  for (size_t i = 0; i + 8 <= block_.size(); i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(block_.data() + i, &v, 8);
  }
}

Slice ValueGen::Next(Rng& rng) const {
  const uint32_t size =
      min_ == max_ ? min_ : min_ + static_cast<uint32_t>(rng.Uniform(max_ - min_ + 1));
  return Slice(block_.data() + rng.Uniform(kBlock), size);
}

}  // namespace grove::bench
