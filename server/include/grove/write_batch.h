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
//      | kDeleteRange u8 | varint32 start_len | start | varint32 end_len | end
//      | kPutExpiring u8 | varint32 key_len | key | varint32 value_len | value | expires_ms u64
//      | kMark u8 | varint32 name_len | name | varint32 value_len | value
//      | kPutVersioned u8 | varint32 key_len | key | varint32 value_len | value | version u64
//        | expires_ms u64 (0: never)
//
// Operations apply in order; a later operation on the same key wins. kDeleteRange removes every
// key in [start, end) (end empty: to the last key); the engine writes it only through
// Db::DeleteRange, which applies it with every other writer held off, so that replaying it
// removes exactly the keys it removed. kPutExpiring is a put whose key reads as absent from
// expires_ms (Unix milliseconds) on. kPutVersioned is a put (expiring or not) whose key carries
// the version it names instead of the record's LSN: a replicated range gives every replica's
// copy of a write the same version, derived from the write's place in the range's Raft log.
//
// kMark sets one of the database's marks (Db::GetMark): small named values outside the key space
// that change atomically with the batch's keys and are kept by checkpoints. A replicated range
// records the Raft index its engine has applied in one, in the same record as the entry's writes.
// Marks are not operations on keys: Count, PayloadBytes, ForEach and ForEachOp leave them out
// (ForEachMark lists them).
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
  enum class OpType : uint8_t {
    kPut = 1,
    kDelete = 2,
    kDeleteRange = 3,
    kPutExpiring = 4,
    kMark = 5,
    kPutVersioned = 6,
  };
  // Whether operations of `type` set a key's value.
  static bool IsPut(OpType type) {
    return type == OpType::kPut || type == OpType::kPutExpiring || type == OpType::kPutVersioned;
  }

  // One operation as ForEachOp presents it.
  struct Op {
    OpType type = OpType::kPut;
    Slice key;                // kDeleteRange: the range's start
    Slice value;              // kPut, kPutExpiring
    Slice end;                // kDeleteRange: the range's end (empty: unbounded)
    uint64_t expires_ms = 0;  // kPutExpiring (never 0), kPutVersioned (0: never)
    uint64_t version = 0;     // kPutVersioned (never 0)
  };

  WriteBatch();

  void Put(Slice key, Slice value);
  // A put that expires: from `expires_ms` (Unix milliseconds) on the key reads as absent.
  // expires_ms 0 means no expiry: a plain Put.
  void PutExpiring(Slice key, Slice value, uint64_t expires_ms);
  // A put whose key carries `version` (nonzero; Db::Write refuses 0) rather than the record's
  // LSN, expiring from `expires_ms` (0: never). Versions of a key must rise with every write to
  // it; the caller sees to that.
  void PutVersioned(Slice key, Slice value, uint64_t version, uint64_t expires_ms);
  void Delete(Slice key);
  void DeleteRange(Slice start, Slice end);
  // Sets the mark `name` to `value` when the batch applies; an empty value removes the mark.
  // Db::Write checks the sizes (kMaxMarkNameBytes, kMaxMarkValueBytes).
  void SetMark(Slice name, Slice value);
  void Clear();

  static constexpr size_t kMaxMarkNameBytes = 128;
  static constexpr size_t kMaxMarkValueBytes = 1024;

  // Operations on keys (marks not included).
  uint32_t Count() const { return count_; }
  uint32_t MarkCount() const { return marks_; }
  // No operation and no mark.
  bool Empty() const { return count_ == 0 && marks_ == 0; }
  // Sum of key and value bytes (what Options::max_batch_bytes limits).
  uint64_t PayloadBytes() const { return payload_bytes_; }
  // The encoded form (the WAL payload).
  Slice Encoded() const { return rep_; }

  // Calls fn(type, key, value) for each operation in order; value is empty for deletes (and the
  // range's end for kDeleteRange). Stops and returns the first non-OK status fn returns.
  Status ForEach(const std::function<Status(OpType, Slice, Slice)>& fn) const;
  // The same with every field of each operation.
  Status ForEachOp(const std::function<Status(const Op&)>& fn) const;
  // Calls fn(name, value) for each mark in order.
  Status ForEachMark(const std::function<Status(Slice name, Slice value)>& fn) const;
  // Whether any operation is a kDeleteRange.
  bool HasRangeDelete() const { return range_deletes_ > 0; }

  // Parses an encoded batch (from the WAL), validating every length. DataLoss on malformed input.
  static StatusOr<WriteBatch> Decode(Slice encoded);

 private:
  std::string rep_;
  uint32_t count_ = 0;
  uint32_t marks_ = 0;
  uint32_t range_deletes_ = 0;
  uint64_t payload_bytes_ = 0;
};

}  // namespace grove
