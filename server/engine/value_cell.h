#pragma once

// Value cells: how the engine stores a value in an index (docs/formats/value_store.md).
//
//   inline:  0x00 | value bytes                       (values up to Options::inline_value_bytes)
//   blob:    0x01 | first page u64 | length u32 | crc32c u32 (masked)   = 17 bytes
//
// A blob's bytes live in the value store: ceil(length / kBlobChunk) contiguous pages.

#include <cstdint>
#include <string>

#include "grove/slice.h"

#include "page/page.h"
#include "util/coding.h"

namespace grove {

inline constexpr char kInlineTag = 0x00;
inline constexpr char kBlobTag = 0x01;
inline constexpr size_t kBlobCellSize = 17;
inline constexpr size_t kBlobChunk = kPageSize - kPageHeaderSize;

struct BlobRef {
  PageId first = kInvalidPageId;
  uint32_t length = 0;
  uint32_t masked_crc = 0;
  uint32_t pages() const { return static_cast<uint32_t>((length + kBlobChunk - 1) / kBlobChunk); }
};

inline std::string InlineCell(Slice value) {
  std::string cell;
  cell.reserve(value.size() + 1);
  cell.push_back(kInlineTag);
  cell.append(value.data(), value.size());
  return cell;
}

inline std::string BlobCell(const BlobRef& ref) {
  std::string cell(kBlobCellSize, '\0');
  cell[0] = kBlobTag;
  EncodeFixed64(cell.data() + 1, ref.first);
  EncodeFixed32(cell.data() + 9, ref.length);
  EncodeFixed32(cell.data() + 13, ref.masked_crc);
  return cell;
}

inline bool IsBlobCell(Slice cell) { return cell.size() == kBlobCellSize && cell[0] == kBlobTag; }

inline BlobRef DecodeBlobCell(Slice cell) {
  return BlobRef{DecodeFixed64(cell.data() + 1), DecodeFixed32(cell.data() + 9),
                 DecodeFixed32(cell.data() + 13)};
}

// Whether `cell` is well formed: an inline cell or a blob cell.
inline bool IsValidCell(Slice cell) {
  return !cell.empty() && (cell[0] == kInlineTag || IsBlobCell(cell));
}

}  // namespace grove
