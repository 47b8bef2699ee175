#include "index/aha/bloom.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace grove::aha {

namespace {

inline void ProbeStart(uint64_t hash, uint32_t* lo, uint32_t* delta) {
  *lo = static_cast<uint32_t>(hash);
  *delta = ((*lo >> 17) | (*lo << 15)) | 1u;
}

}  // namespace

int BloomProbes(double bits_per_key) {
  const int k = static_cast<int>(std::lround(bits_per_key * 0.69));
  return std::clamp(k, 1, 30);
}

uint32_t BloomBlocks(uint64_t keys, double bits_per_key) {
  if (bits_per_key <= 0 || keys == 0) return 0;
  const double bits = std::ceil(static_cast<double>(keys) * bits_per_key);
  return static_cast<uint32_t>(
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(bits / kBloomBlockBits))));
}

uint32_t BloomBlockOf(uint64_t hash, uint32_t blocks) {
  return static_cast<uint32_t>((hash >> 32) % blocks);
}

void BloomAdd(char* block, uint64_t hash, int probes) {
  uint32_t lo, delta;
  ProbeStart(hash, &lo, &delta);
  for (int i = 0; i < probes; ++i) {
    const uint64_t bit = lo % kBloomBlockBits;
    block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
    lo += delta;
  }
}

bool BloomMayContain(const char* block, uint64_t hash, int probes) {
  uint32_t lo, delta;
  ProbeStart(hash, &lo, &delta);
  for (int i = 0; i < probes; ++i) {
    const uint64_t bit = lo % kBloomBlockBits;
    if ((block[bit / 8] & (1 << (bit % 8))) == 0) return false;
    lo += delta;
  }
  return true;
}

}  // namespace grove::aha
