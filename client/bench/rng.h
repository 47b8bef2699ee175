#pragma once

// Rng: xoshiro256** seeded through splitmix64. Fast enough to sit in the operation loop (a few ns
// per draw), unlike std::mt19937_64 with std::uniform_*_distribution, and reproducible across
// platforms because every conversion is written out here.
//
// Thread safety: none; every worker thread owns one, seeded from the run seed and its index.

#include <cmath>
#include <cstdint>

namespace grove::bench {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 64-bit FNV-1a over the 8 bytes of v, as YCSB's scrambled zipfian uses (Utils.fnvhash64).
inline uint64_t FnvHash64(uint64_t v) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    h *= 0x100000001b3ull;
    v >>= 8;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) s = SplitMix64(&seed);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n > 0. Lemire's multiply-shift (the tiny bias is irrelevant here).
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

  // Uniform in [0, 1) with 53 random bits.
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Exponential with the given mean.
  double Exponential(double mean) { return -mean * std::log1p(-NextDouble()); }

  // Standard normal (Box-Muller; one of the pair is dropped for simplicity).
  double Normal() {
    const double u1 = 1.0 - NextDouble();  // (0, 1]
    const double u2 = NextDouble();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace grove::bench
