#pragma once

// LogWriter frames logical records into the physical format of log_format.h. It does no IO: it
// appends framed bytes to a caller's string, so that the WAL can frame a whole commit group and
// hand it to the disk with one File::Write.
//
// The writer only has to know where in a block the next byte lands; it keeps that position and the
// caller keeps the file offset.
//
// Thread safety: none; a LogWriter belongs to one thread at a time.

#include <cstdint>
#include <span>
#include <string>

#include "grove/slice.h"

#include "wal/log_format.h"

namespace grove::wal {

class LogWriter {
 public:
  // `file_offset` is where the next framed byte will be written in the segment.
  explicit LogWriter(uint64_t file_offset = 0) : block_offset_(file_offset % kBlockSize) {}

  // Appends to *dst the framing of one logical record whose bytes are the concatenation of
  // `parts` (the WAL passes {LSN, payload} so that the payload is copied only once).
  void AddRecord(std::span<const Slice> parts, std::string* dst);
  void AddRecord(Slice record, std::string* dst) {
    AddRecord(std::span<const Slice>(&record, 1), dst);
  }

  // Position of the next byte within its block.
  uint64_t block_offset() const { return block_offset_; }

 private:
  uint64_t block_offset_;
};

}  // namespace grove::wal
