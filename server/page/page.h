#pragma once

// The common page header. Every 4 KiB page in the data file starts with it (docs/formats/pages.md).
//
//   0        4        6        8                16       20       24
//   +--------+--------+--------+----------------+--------+--------+--------------------------+
//   | crc32c | type   | format | page id        | epoch  | aux    | body (4072 bytes)        |
//   | u32    | u16    | u16    | u64            | u32    | u32    |                          |
//   +--------+--------+--------+----------------+--------+--------+--------------------------+
//
//   crc32c  masked CRC-32C of bytes [4, 4096), computed when a checkpoint writes the page.
//   type    PageType; 0 never appears in a written page.
//   format  kPageFormatVersion.
//   page id the page's own number: a read of page N that finds another id was misdirected.
//   epoch   low 32 bits of the checkpoint epoch that wrote the page. The engine keeps the epoch of
//           every page's latest write (EpochTable); a valid page with an older epoch is a lost
//           write (a stale copy) and is reported as data loss.
//   aux     free for the page type.
//
// In memory, a page being modified has a stale crc; only Seal() makes it valid.

#include <cstddef>
#include <cstdint>
#include <string>

#include "grove/limits.h"
#include "grove/status.h"

namespace grove {

using PageId = uint64_t;
inline constexpr PageId kInvalidPageId = 0;  // page 0 is a superblock slot: never a link target
inline constexpr size_t kPageSize = limits::kPageBytes;
inline constexpr size_t kPageHeaderSize = 24;
inline constexpr uint16_t kPageFormatVersion = 1;

enum class PageType : uint16_t {
  kFree = 0,
  kSuperblock = 1,
  kEpochMap = 2,
  kBlob = 3,
  // Types from 16 up belong to index code, claimed in one place, the registry
  // (index/registry.h; docs/formats/pages.md).
};

const char* PageTypeName(uint16_t type);

namespace page {

inline uint32_t Crc(const char* p) { return *reinterpret_cast<const uint32_t*>(p); }
inline uint16_t Type(const char* p) { return *reinterpret_cast<const uint16_t*>(p + 4); }
inline uint16_t Format(const char* p) { return *reinterpret_cast<const uint16_t*>(p + 6); }
inline PageId Id(const char* p) { return *reinterpret_cast<const PageId*>(p + 8); }
inline uint32_t Epoch(const char* p) { return *reinterpret_cast<const uint32_t*>(p + 16); }
inline uint32_t Aux(const char* p) { return *reinterpret_cast<const uint32_t*>(p + 20); }
inline void SetAux(char* p, uint32_t v) { *reinterpret_cast<uint32_t*>(p + 20) = v; }
// Gives an image built away from its page (bulk loads) its own id.
inline void SetId(char* p, PageId id) { *reinterpret_cast<PageId*>(p + 8) = id; }

// Zeroes the page and writes type, format and id.
void Init(char* p, PageType type, PageId id);

// Stamps the epoch and computes the checksum: the page is ready to be written.
void Seal(char* p, uint32_t epoch);

// Checks what can be checked from the bytes alone: checksum, format, and that the page calls itself
// `expected_id`. On failure the status is kDataLoss and says which check failed and where.
Status Verify(const char* p, PageId expected_id);

}  // namespace page
}  // namespace grove
