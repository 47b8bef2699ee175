#pragma once

// Value cells: how the engine stores a value in an index (docs/formats/value_store.md). Index
// variants treat cells as opaque bytes; only the engine reads them.
//
//   +-----+------------------+----------------------+-----------------------------------------+
//   | tag | version varint64 | expires_ms varint64  | payload                                 |
//   +-----+------------------+----------------------+-----------------------------------------+
//          (tag bit 1)        (tag bit 2)
//
//   tag bit 0  the payload is a blob reference: first page u64 | length u32 | crc32c u32 (masked)
//              (16 bytes); otherwise the payload is the value itself (inline)
//   tag bit 1  a version follows the tag: the LSN of the write that set the value
//   tag bit 2  an expiry follows the version, in milliseconds since the Unix epoch (requires bit 1)
//
// Tags 0x00 (inline) and 0x01 (blob) carry no metadata: cells written before versions existed
// read as version 0. The engine writes 0x02/0x03 (and 0x06/0x07 with an expiry).
//
// A blob's bytes live in the value store: ceil(length / kBlobChunk) contiguous pages.

#include <algorithm>
#include <cstdint>
#include <string>

#include "grove/index.h"
#include "grove/slice.h"

#include "page/page.h"
#include "util/coding.h"

namespace grove {

inline constexpr char kInlineTag = 0x00;
inline constexpr char kBlobTag = 0x01;
inline constexpr uint8_t kCellBlobBit = 0x01;
inline constexpr uint8_t kCellVersionBit = 0x02;
inline constexpr uint8_t kCellExpiryBit = 0x04;
inline constexpr size_t kBlobRefSize = 16;
inline constexpr size_t kBlobCellSize = 1 + kBlobRefSize;  // a blob cell without metadata
// The most a version and an expiry add to a cell (two varint64s).
inline constexpr size_t kMaxCellMetaBytes = 20;
inline constexpr size_t kBlobChunk = kPageSize - kPageHeaderSize;
static_assert(kBlobChunk == limits::kBlobChunkBytes, "grove/limits.h names the blob chunk too");

struct BlobRef {
  PageId first = kInvalidPageId;
  uint32_t length = 0;
  uint32_t masked_crc = 0;
  uint32_t pages() const { return static_cast<uint32_t>((length + kBlobChunk - 1) / kBlobChunk); }
};

// What a cell says about its value besides the bytes.
struct CellMeta {
  uint64_t version = 0;     // LSN of the write that set the value; 0: unknown (an old cell)
  uint64_t expires_ms = 0;  // Unix milliseconds from which the key reads as absent; 0: never

  bool Expired(uint64_t now_ms) const { return expires_ms != 0 && expires_ms <= now_ms; }
};

struct CellView {
  CellMeta meta;
  bool blob = false;
  Slice inline_value;  // !blob
  BlobRef ref;         // blob
};

// Parses `cell`; false when it is malformed.
inline bool ParseCell(Slice cell, CellView* out) {
  if (cell.empty()) return false;
  const auto tag = static_cast<uint8_t>(cell[0]);
  if ((tag & ~(kCellBlobBit | kCellVersionBit | kCellExpiryBit)) != 0) return false;
  if ((tag & kCellExpiryBit) && !(tag & kCellVersionBit)) return false;
  Slice in = cell.substr(1);
  *out = CellView{};
  if ((tag & kCellVersionBit) && !GetVarint64(&in, &out->meta.version)) return false;
  if ((tag & kCellExpiryBit) &&
      (!GetVarint64(&in, &out->meta.expires_ms) || out->meta.expires_ms == 0)) {
    return false;
  }
  out->blob = (tag & kCellBlobBit) != 0;
  if (!out->blob) {
    out->inline_value = in;
    return true;
  }
  if (in.size() != kBlobRefSize) return false;
  out->ref = BlobRef{DecodeFixed64(in.data()), DecodeFixed32(in.data() + 8),
                     DecodeFixed32(in.data() + 12)};
  return true;
}

namespace cell_internal {
inline std::string Header(bool blob, const CellMeta& meta, size_t payload) {
  std::string cell;
  cell.reserve(1 + kMaxCellMetaBytes + payload);
  uint8_t tag = blob ? kCellBlobBit : 0;
  if (meta.version != 0 || meta.expires_ms != 0) tag |= kCellVersionBit;
  if (meta.expires_ms != 0) tag |= kCellExpiryBit;
  cell.push_back(static_cast<char>(tag));
  if (tag & kCellVersionBit) PutVarint64(&cell, meta.version);
  if (tag & kCellExpiryBit) PutVarint64(&cell, meta.expires_ms);
  return cell;
}
}  // namespace cell_internal

inline std::string InlineCell(Slice value, const CellMeta& meta = {}) {
  std::string cell = cell_internal::Header(/*blob=*/false, meta, value.size());
  cell.append(value.data(), value.size());
  return cell;
}

inline std::string BlobCell(const BlobRef& ref, const CellMeta& meta = {}) {
  std::string cell = cell_internal::Header(/*blob=*/true, meta, kBlobRefSize);
  PutFixed64(&cell, ref.first);
  PutFixed32(&cell, ref.length);
  PutFixed32(&cell, ref.masked_crc);
  return cell;
}

inline bool IsBlobCell(Slice cell) {
  CellView v;
  return ParseCell(cell, &v) && v.blob;
}

// REQUIRES: IsBlobCell(cell).
inline BlobRef DecodeBlobCell(Slice cell) {
  CellView v;
  ParseCell(cell, &v);
  return v.ref;
}

// Whether `cell` is well formed.
inline bool IsValidCell(Slice cell) {
  CellView v;
  return ParseCell(cell, &v);
}

static_assert(kMaxCellMetaBytes == kMaxValueCellMetaBytes && kBlobRefSize == kValueCellBlobRefBytes,
              "grove/index.h's MaxCellBytes() must describe these cells");

}  // namespace grove
