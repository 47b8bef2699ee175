#pragma once

// WriteBatch: puts and deletes applied atomically and durably by Db::Write.
//
// The batch's encoding is exactly the payload of its WAL record (docs/formats/wal.md):
//
//   +-----------+------------------------------------------------------------+
//   | count u32 | op * count                                                 |
//   +-----------+------------------------------------------------------------+
//   op = kPut u8 | varint32 key_len | key | varint32 value_len | value
//      | kDelete u8 | varint32 key_len | key
//
// Operations apply in order; a later operation on the same key wins.
//
// Thread safety: not synchronised; one thread builds a batch, then hands it to Db::Write.

#include <cstdint>
#include <functional>
#include <string>

#include "grove/slice.h"
#include "grove/status.h"

namespace grove {

class WriteBatch {
 public:
  enum class OpType : uint8_t { kPut = 1, kDelete = 2 };

  WriteBatch();

  void Put(Slice key, Slice value);
  void Delete(Slice key);
  void Clear();

  uint32_t Count() const { return count_; }
  // Sum of key and value bytes (what Options::max_batch_bytes limits).
  uint64_t PayloadBytes() const { return payload_bytes_; }
  // The encoded form (the WAL payload).
  Slice Encoded() const { return rep_; }

  // Calls fn(type, key, value) for each operation in order; value is empty for deletes. Stops and
  // returns the first non-OK status fn returns.
  Status ForEach(const std::function<Status(OpType, Slice, Slice)>& fn) const;

  // Parses an encoded batch (from the WAL), validating every length. DataLoss on malformed input.
  static StatusOr<WriteBatch> Decode(Slice encoded);

 private:
  std::string rep_;
  uint32_t count_ = 0;
  uint64_t payload_bytes_ = 0;
};

}  // namespace grove
