#include "index/aha/bloom.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace grove::aha {

namespace {

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

inline void ProbeStart(uint64_t hash, uint32_t* lo, uint32_t* delta) {
  *lo = static_cast<uint32_t>(hash);
  *delta = ((*lo >> 17) | (*lo << 15)) | 1u;
}

}  // namespace

uint64_t Hash64(Slice key) {
  const char* p = key.data();
  size_t n = key.size();
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xc2b2ae3d27d4eb4full);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = Mix(h ^ w) + 0x165667b19e3779f9ull;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  return Mix(h ^ tail ^ (static_cast<uint64_t>(n) << 56));
}

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
