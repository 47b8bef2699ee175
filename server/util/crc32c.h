#pragma once

// CRC-32C (Castagnoli), the checksum of every page, WAL record, manifest and superblock.
// Uses the SSE4.2 crc32 instruction when the CPU has it and a table otherwise; both give the
// same values (tests/util/crc32c_test.cc checks the RFC 3720 vectors).

#include <cstddef>
#include <cstdint>

namespace grove::crc32c {

// Continues a CRC: Extend(Extend(0, a), b) == Value(a + b).
uint32_t Extend(uint32_t crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }

// Stored CRCs are masked (as in LevelDB) so that a CRC over data that itself contains CRCs stays
// well distributed.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace grove::crc32c
