#pragma once

// The physical format of a WAL segment. It follows LevelDB's log format (google/leveldb,
// doc/log_format.md): credit for the design goes there; this is an independent implementation.
// docs/formats/wal.md describes it in full, together with the logical record and the replay rules.
//
// A segment is a sequence of 32 KiB blocks. Each block holds physical records; a physical record
// never crosses a block boundary, so a logical record longer than the space left in a block is cut
// into fragments (First, Middle..., Last). A block tail too short for a header is zero-filled.
//
//   block 0                                     block 1
//   +--------+--------+-----+--------+--------+  +--------+------------------------------+
//   | header |payload | ... | header |payload |0|| header | payload ...                  |
//   +--------+--------+-----+--------+--------+  +--------+------------------------------+
//                                              ^ tail < 7 bytes: zeros
//
//   physical record (little-endian):
//   +-------------------+-------------+-----------+---------------------+
//   | masked crc32c (4) | length (2)  | type (1)  | payload (length)    |
//   +-------------------+-------------+-----------+---------------------+
//   crc32c covers type + payload and is stored masked (crc32c::Mask), as in LevelDB.
//
//   type: kZero   = 0  reserved: an all-zero header is preallocated, never-written space and marks
//                      the clean end of the log
//         kFull   = 1  the whole logical record
//         kFirst  = 2  first fragment
//         kMiddle = 3  interior fragment
//         kLast   = 4  last fragment
//
// The logical record the WAL writes is [LSN: fixed64][payload]; see wal.h.

#include <cstddef>
#include <cstdint>

namespace grove::wal {

enum RecordType : uint8_t {
  kZeroType = 0,
  kFullType = 1,
  kFirstType = 2,
  kMiddleType = 3,
  kLastType = 4,
};
inline constexpr uint8_t kMaxRecordType = kLastType;

// Log sequence number: the position of a logical record in the whole log. LSNs start at 1 and grow
// by exactly 1 per record, across segments; 0 is never used.
using Lsn = uint64_t;
// The logical record's prefix: its LSN as fixed64.
inline constexpr size_t kLsnSize = 8;

inline constexpr size_t kBlockSize = 32768;
// crc (4) + length (2) + type (1).
inline constexpr size_t kHeaderSize = 4 + 2 + 1;

// An upper bound on the framed size of a logical record of `n` bytes, wherever in a block it
// starts: at most one fragment per block it touches plus one, each with a header and a block tail
// of at most kHeaderSize - 1 zero bytes in front of it.
inline constexpr uint64_t MaxFramedSize(uint64_t n) {
  return n + (2 * kHeaderSize - 1) * (n / (kBlockSize - kHeaderSize) + 2);
}

}  // namespace grove::wal
