#pragma once

// A page-blocked Bloom filter for sorted runs: the filter is split into 4072-byte blocks, one per
// filter page; a key's hash chooses the block and all of its probes fall inside it, so a negative
// answer costs at most one page (the idea of blocked Bloom filters, Putze, Sanders and Singler,
// 2007; RocksDB's format_version 5 filters block by cache line for the same reason).
//
//   hash h = Hash64(key) (util/hash.h; part of the on-disk format); block = (h >> 32) % blocks;
//   probes p_i = (lo + i * delta) mod bits, with lo = low 32 bits of h and
//   delta = (lo >> 17) | (lo << 15) | 1 (double hashing).
//
// The number of probes is bits_per_key * ln 2, rounded, in [1, 30]: the false-positive rate at
// 10 bits per key is about 1%.

#include <cstddef>
#include <cstdint>

#include "grove/slice.h"

#include "util/hash.h"

namespace grove::aha {

inline constexpr size_t kBloomBlockBytes = 4072;  // the body of a filter page
inline constexpr uint64_t kBloomBlockBits = kBloomBlockBytes * 8;

int BloomProbes(double bits_per_key);
// Filter blocks for `keys` keys at `bits_per_key` (0 when filters are off).
uint32_t BloomBlocks(uint64_t keys, double bits_per_key);
uint32_t BloomBlockOf(uint64_t hash, uint32_t blocks);
// Sets / tests the probes of `hash` in one block (kBloomBlockBytes).
void BloomAdd(char* block, uint64_t hash, int probes);
bool BloomMayContain(const char* block, uint64_t hash, int probes);

}  // namespace grove::aha
