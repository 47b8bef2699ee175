#include "bench/gapped_keys.h"

#include <algorithm>

#include "bench/rng.h"

namespace grove::bench {
namespace {

uint64_t Mix(uint64_t x) {
  uint64_t state = x;
  return SplitMix64(&state);
}

uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b / c);
}

}  // namespace

Permutation::Permutation(uint64_t n, uint64_t seed) : n_(n), half_bits_(1) {
  while (half_bits_ < 32 && (uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
  for (uint64_t& k : round_keys_) k = SplitMix64(&seed);
}

uint64_t Permutation::Feistel(uint64_t x) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  uint64_t left = x >> half_bits_;
  uint64_t right = x & mask;
  for (uint64_t k : round_keys_) {
    const uint64_t next = left ^ (Mix(right ^ k) & mask);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t i) const {
  if (n_ <= 1) return 0;
  // Cycle walking: the network permutes a domain at most 4x larger than n_, so a value of
  // [0, n_) comes back after a few steps on average, and it is a permutation of [0, n_).
  uint64_t x = Feistel(i);
  while (x >= n_) x = Feistel(x);
  return x;
}

GappedKeys::GappedKeys(uint64_t loaded, uint64_t capacity, bool sorted_order, uint64_t seed)
    : loaded_(std::min(loaded, capacity)),
      capacity_(capacity),
      sorted_order_(sorted_order),
      seed_(seed),
      slots_(sorted_order ? std::max<uint64_t>(capacity, 1)
                          : std::max<uint64_t>({loaded_, capacity - loaded_, 1})),
      stride_(~uint64_t{0} / slots_),
      load_order_(loaded_, seed ^ 0x6c6f6164ull),         // "load"
      insert_slots_(slots_, seed ^ 0x696e73657274ull) {}  // "insert"

uint64_t GappedKeys::Offset(uint64_t x, uint64_t salt, uint64_t width) const {
  return width <= 1 ? 0 : Mix(x ^ salt ^ (seed_ * 0x9e3779b97f4a7c15ull)) % width;
}

uint64_t GappedKeys::sorted_loaded(uint64_t rank) const {
  if (sorted_order_) return rank * stride_ + Offset(rank, 0x73, stride_);
  const uint64_t slot = MulDiv(rank, slots_, loaded_);
  return slot * stride_ + Offset(rank, 0x6c, stride_ / 2);
}

uint64_t GappedKeys::key(uint64_t index) const {
  if (sorted_order_) return sorted_loaded(index);
  if (index < loaded_) return sorted_loaded(load_order_(index));
  const uint64_t m = index - loaded_;
  const uint64_t half = stride_ / 2;
  return insert_slots_(m) * stride_ + half + Offset(m, 0x69, stride_ - half);
}

}  // namespace grove::bench
