#pragma once

// Keys and values are byte strings, ordered bytewise (unsigned), which is exactly how
// std::string_view compares: std::char_traits<char>::compare behaves like memcmp.

#include <cstdint>
#include <string_view>

namespace grove {

using Slice = std::string_view;

// The first 8 bytes of `key` as a big-endian integer, zero padded on the right. Learned and hashing
// components work on this projection. It is exact for 8-byte big-endian integer keys and an
// order-preserving approximation otherwise: a < b implies Project(a) <= Project(b). Correctness
// never depends on it.
inline uint64_t Project(Slice key) {
  uint64_t v = 0;
  const size_t n = key.size() < 8 ? key.size() : 8;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(key[i])} << (56 - 8 * i);
  return v;
}

}  // namespace grove
