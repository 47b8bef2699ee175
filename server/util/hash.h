#pragma once

// Hash64: a 64-bit hash of a byte string (multiply-xorshift over 8-byte words, our own). Stable
// across versions: AHA-tree's Bloom filters store its bits on disk (docs/formats/aha.md), and
// TreeLine's record cache uses it to pick a shard and a hash-table slot.

#include <cstdint>

#include "grove/slice.h"

namespace grove {

uint64_t Hash64(Slice key);

}  // namespace grove
