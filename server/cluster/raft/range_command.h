#pragma once

// RangeCommand: one write to a replicated range, as its Raft log entry carries it. The entry is
// what every replica applies, so it holds the write as the client asked for it (conditions
// included, decided at apply time) and who proposed it, so that the proposing replica can hand
// the outcome back to its caller. Layout (docs/formats/raft_entry.md):
//
//   +-----------+---------+------------------+----------------------+----------------+
//   | version 1 | kind u8 | proposer fixed64 | incarnation fixed64  | sequence fixed64 |
//   +-----------+---------+------------------+----------------------+----------------+
//   kind 1 (write):        varint32 batch_len | WriteBatch encoding (docs/formats/wal.md)
//                          | varint32 conditions | each: kind u8 | key | value | version varint64
//   kind 2 (delete range): start | end | limit varint64
//   kind 3 (split):        key | new group varint64
//   (key, value, start, end: varint32 length + bytes)
//
// The WriteBatch holds puts, deletes and expiring puts only: marks are the range's own (its
// applied index) and a range delete is kind 2.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/db.h"
#include "grove/slice.h"
#include "grove/status.h"
#include "grove/write_batch.h"

namespace grove::raft {

struct RangeCommand {
  enum class Kind : uint8_t { kWrite = 1, kDeleteRange = 2, kSplit = 3 };
  Kind kind = Kind::kWrite;
  // Who proposed it: the replica, the life of its process (a random number per start, so that
  // an entry proposed before a restart is not taken for one proposed after) and a number that
  // rises within that life.
  uint64_t proposer = 0;
  uint64_t incarnation = 0;
  uint64_t sequence = 0;
  // kWrite
  WriteBatch batch;
  std::vector<WriteCondition> conditions;
  // kDeleteRange: [start, end) (end empty: to the range's end), at most `limit` keys (0: the
  // most one write may hold, limits.max_batch_entries)
  std::string start, end;
  uint64_t limit = 0;
  // kSplit: the range ends at `start` from this entry on; [start, old end) is the range of
  // group `new_group`, whose first state is these keys as of this entry.
  uint64_t new_group = 0;
};

std::string EncodeRangeCommand(const RangeCommand& command);
// DataLoss on anything malformed (every length is checked).
StatusOr<RangeCommand> DecodeRangeCommand(Slice entry);

}  // namespace grove::raft
