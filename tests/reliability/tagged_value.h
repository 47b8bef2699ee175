#pragma once

// Self-describing values for the reliability tests. A value names the key it was written for, the
// writer and the sequence number of the operation that wrote it, and ends with a CRC-32C of
// everything before it. A reader can then tell apart, without any other state:
//   * a correct value of some operation on this key (and which operation),
//   * a value that belongs to another key (a misdirected or mixed-up read),
//   * damaged bytes (the checksum fails).
//
//   "GTV1" | key_len u16 | key | writer u32 | seq u64 | padding | crc32c u32 (masked)
//
// The padding is a function of (writer, seq), so two operations never write the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::testing {

struct ValueTag {
  uint32_t writer = 0;
  uint64_t seq = 0;
};

// Smallest value MakeTaggedValue can produce for `key`.
size_t MinTaggedValueSize(std::string_view key);

// A value of max(len, MinTaggedValueSize(key)) bytes.
std::string MakeTaggedValue(std::string_view key, uint32_t writer, uint64_t seq, size_t len);

enum class TagCheck {
  kOk,        // intact, written for `key`; *tag says by which operation
  kCorrupt,   // not a tagged value, or its checksum fails
  kWrongKey,  // intact, but written for another key
};
TagCheck CheckTaggedValue(std::string_view key, std::string_view value, ValueTag* tag);

const char* TagCheckName(TagCheck c);

}  // namespace grove::testing
