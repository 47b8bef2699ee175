#pragma once

// LogReader reads one segment sequentially and reports, one at a time, each logical record with its
// byte offset, the end of the written data (zeros or end of file), or a bad record with its offset
// and the reason. It never trusts a length it has not bounds-checked, so garbage input cannot make
// it crash or read past a block; it returns a record only if every fragment passed its checksum.
//
// The reader does not decide what a bad record means (torn tail or corruption); Wal::Replay does
// that, using the offsets reported here. To let Replay look past a bad spot, Next() may be called
// again after kZeros or kBad: the reader resynchronises at the next block boundary and skips
// fragments until the start of a new logical record.
//
// Thread safety: none; a LogReader belongs to one thread.

#include <cstdint>
#include <string>

#include "grove/io_backend.h"
#include "grove/slice.h"
#include "grove/status.h"

namespace grove::wal {

class LogReader {
 public:
  enum class Kind {
    kRecord,  // a logical record whose fragments all passed their checksums
    kEof,     // end of file at a record boundary; every later call returns kEof again
    kZeros,   // an all-zero header: preallocated, never-written space
    kBad,     // a bad record: checksum, length, type or fragment sequence, or cut off by the EOF
  };

  struct Result {
    Kind kind = Kind::kEof;
    // kRecord: the logical record, valid until the next call to Next().
    Slice record;
    // kRecord: offset of its first fragment's header. kZeros: offset of the zero header.
    // kBad: offset of the logical record that could not be read (its first fragment's header, so
    // that everything from here on is what a repair would drop). kEof: the file size.
    uint64_t offset = 0;
    // kRecord: offset just past its last fragment.
    uint64_t end = 0;
    std::string reason;  // kBad: what was wrong, with the physical offset
  };

  // `file` must outlive the reader. Reading starts at offset 0.
  explicit LogReader(File* file);

  // Fills *result with the next item. Returns non-OK only when reading the file fails.
  Status Next(Result* result);

  // Offset just past the last non-zero byte read so far (the end of whatever was ever written,
  // once the reader has reached kEof).
  uint64_t data_end() const { return data_end_; }

 private:
  Status LoadBlock(uint64_t offset);
  // Abandons the rest of the current block and any partial record; the next call resynchronises.
  void SkipBlock();
  void Bad(uint64_t physical_offset, const std::string& what, Result* result);

  File* const file_;
  std::string block_;         // the current block's bytes
  size_t block_len_ = 0;      // valid bytes in block_; < kBlockSize only for the file's last block
  uint64_t block_start_ = 0;  // file offset of block_
  size_t pos_ = 0;            // next unread byte in block_
  bool loaded_ = false;

  // After kZeros/kBad: skip Middle/Last fragments until a First or Full starts a record.
  bool resync_ = false;
  bool assembling_ = false;  // between a First fragment and its Last
  uint64_t record_offset_ = 0;
  std::string record_;  // fragments assembled so far
  uint64_t data_end_ = 0;
};

}  // namespace grove::wal
