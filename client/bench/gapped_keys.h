#pragma once

// GappedKeys: a key set computed on demand (--keys gapped), so that a billion keys cost the
// benchmark no memory. Every other shape is a vector of keys (8 bytes each); this one is a
// function of the index.
//
// The 64-bit range is cut into `slots` equal strides. In random insertion order:
//   loaded key of rank j (j-th smallest, j < loaded)  stride j * slots / loaded, at a pseudo-random
//                                                      offset in the stride's lower half
//   m-th key inserted after the load                   stride P(m), at a pseudo-random offset in
//                                                      the stride's upper half
//   insertion order of the loaded keys                 rank Q(i) for index i
// where slots = max(loaded, inserts, 1) and P, Q are pseudo-random permutations (a keyed Feistel
// network with cycle walking), so inserts land between loaded keys all over the range and no two
// keys collide. In sorted order key i takes stride i of `capacity` strides: loads and inserts are
// appends.
//
// Keys are sparse (about 2^64 / slots apart) and unique; reading any of them costs a few
// multiplications, and the j-th smallest loaded key is known without sorting anything.
//
// Thread safety: immutable after construction; every method is safe from any thread.

#include <cstdint>

namespace grove::bench {

// A pseudo-random permutation of [0, n): i -> a distinct value in [0, n).
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t seed);
  uint64_t operator()(uint64_t i) const;

 private:
  uint64_t Feistel(uint64_t x) const;

  uint64_t n_;
  int half_bits_;  // the Feistel network permutes [0, 2^(2 * half_bits_)) >= n_
  uint64_t round_keys_[4];
};

class GappedKeys {
 public:
  // `capacity` keys, the first `loaded` of which are the load (in insertion order).
  GappedKeys(uint64_t loaded, uint64_t capacity, bool sorted_order, uint64_t seed);

  uint64_t capacity() const { return capacity_; }
  // The key at `index` of the insertion order. REQUIRES: index < capacity().
  uint64_t key(uint64_t index) const;
  // The rank-th smallest loaded key. REQUIRES: rank < loaded.
  uint64_t sorted_loaded(uint64_t rank) const;

 private:
  uint64_t Offset(uint64_t x, uint64_t salt, uint64_t width) const;

  uint64_t loaded_;
  uint64_t capacity_;
  bool sorted_order_;
  uint64_t seed_;
  uint64_t slots_;
  uint64_t stride_;
  Permutation load_order_;    // Q: index -> rank of the loaded keys
  Permutation insert_slots_;  // P: insert number -> stride
};

}  // namespace grove::bench
