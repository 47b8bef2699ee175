#pragma once

// AULID's inner pages (docs/formats/aulid.md): mixed-node slot pages, packed-array slabs and
// two-layer B+-tree ("branch") pages. Entries are (key, leaf page) pairs: key is the 8-byte
// projection of a leaf's upper separator (aulid.h says which projection), leaf the page of the
// first leaf of the run it covers.
//
// Mixed-node slot page (type kSlotPage). A mixed node of S slots spans ceil(S / 63) pages; slot s
// lives in page s / 63 of the node at byte 64 + 64 * (s % 63), so no slot straddles pages and a
// lookup reads exactly the page of the slot its model predicts:
//
//   24             32          36          40          64                                   4096
//   +--------------+-----------+-----------+-----------+-------------------------------------+
//   | node u64     | index u32 | slots u32 | reserved  | 63 slots of 64 bytes                |
//   | (first page) | (in node) | (in page) |           |                                     |
//   +--------------+-----------+-----------+-----------+-------------------------------------+
//
// A slot (64 bytes; tag in byte 0, all integers little-endian):
//
//   NULL    tag 0 | 1: copy u8 | 8: key u64 | 16: leaf u64; with copy 0 the rest is zero.
//           copy 1 (Fulfill, written by bulk builds): the entry is a copy of the DATA slot the
//           run of NULL slots ends at; the inner part trusts copies until its first change
//   DATA    tag 1 | 8: key u64 | 16: leaf u64
//   PACKED  tag 2 | 1: class u8 (0..3: 8, 16, 32, 64 entries) | 2: count u16 | 4: object u16
//           | 8: slab page u64: the entries sorted, at object `object` of the slab (PackedSlab)
//   BRANCH  tag 3 | 1: children u8 (1..4) | 8: child pages u64 x 4 | 40: pivots u64 x 3
//           child i holds the keys <= pivot i (the last child the rest); counts are in the pages
//   MIXED   tag 4 | 4: depth u32 | 8: first page u64 | 16: model base u64 | 24: slope f64
//           | 32: intercept f64 | 40: slots u64 | 48: size u32 | 52: init size u32
//           | 56: l3 items u32 | 60: reserved
//           the child's model and Adjust statistics live in its parent's slot (the root's in the
//           metanode), so descending costs one page per level
//
// Packed-array slab page (type kSlabPage): objects of one size class after a 64-byte header:
//
//   24        25         32            64
//   +---------+----------+-------------+----------------------------------------------------+
//   | class u8| reserved | reserved    | objects of 128 << class bytes (8 << class entries) |
//   +---------+----------+-------------+----------------------------------------------------+
//
//   31, 15, 7 or 3 objects per page. Which objects are in use is the slot that names them; the
//   allocator's bitmaps (node_space.h) are checkpointed in the variant's metadata.
//
// Branch page (type kBranchPage): one child of a two-layer B+-tree.
//
//   24          28          32
//   +-----------+-----------+-------------------------------------------------+
//   | count u32 | reserved  | entries: key u64, leaf u64 (at most 254)         |
//   +-----------+-----------+-------------------------------------------------+
//
// The views do no locking: callers hold the page latch.

#include <cstdint>
#include <cstring>
#include <vector>

#include "learned/fmcd.h"
#include "page/page.h"
#include "util/coding.h"

namespace grove::aulid {

inline constexpr PageType kSlotPage = static_cast<PageType>(64);
inline constexpr PageType kSlabPage = static_cast<PageType>(65);
inline constexpr PageType kBranchPage = static_cast<PageType>(66);

inline constexpr size_t kSlotBytes = 64;
inline constexpr size_t kSlotBase = 64;
inline constexpr uint64_t kSlotsPerPage = (kPageSize - kSlotBase) / kSlotBytes;  // 63

inline constexpr size_t kEntryBytes = 16;
inline constexpr int kPackedClasses = 4;
inline constexpr uint32_t kPackedMax = 64;  // entries of the largest class
inline constexpr size_t kSlabBase = 64;
inline constexpr uint32_t kBranchChildren = 4;
inline constexpr size_t kBranchBase = 32;
inline constexpr uint32_t kBranchFanout = (kPageSize - kBranchBase) / kEntryBytes;  // 254
inline constexpr uint32_t kBranchMax = kBranchChildren * kBranchFanout;             // 1016

inline uint32_t PackedCapacity(int cls) { return 8u << cls; }
inline size_t PackedObjectBytes(int cls) { return PackedCapacity(cls) * kEntryBytes; }
inline uint32_t PackedPerSlab(int cls) {
  return static_cast<uint32_t>((kPageSize - kSlabBase) / PackedObjectBytes(cls));
}
// The smallest class that holds `n` entries (n <= kPackedMax).
inline int PackedClassFor(uint32_t n) {
  int c = 0;
  while (PackedCapacity(c) < n) ++c;
  return c;
}

struct Entry {
  uint64_t key = 0;
  PageId leaf = kInvalidPageId;
  friend bool operator==(const Entry&, const Entry&) = default;
};

inline Entry DecodeEntry(const char* p) { return {DecodeFixed64(p), DecodeFixed64(p + 8)}; }
inline void EncodeEntry(char* p, const Entry& e) {
  EncodeFixed64(p, e.key);
  EncodeFixed64(p + 8, e.leaf);
}

// `n` consecutive entries from `p` (a packed array or the entries of a branch page).
inline std::vector<Entry> DecodeEntries(const char* p, uint32_t n) {
  std::vector<Entry> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = DecodeEntry(p + i * kEntryBytes);
  return out;
}

enum class SlotTag : uint8_t { kNull = 0, kData = 1, kPacked = 2, kBranch = 3, kMixed = 4 };

// A mixed node as its parent (or the metanode) sees it.
struct MixedRef {
  PageId first = kInvalidPageId;
  learned::SlotModel model;
  uint32_t depth = 1;  // 1 for the root
  uint32_t size = 0;   // entries in its subtree
  uint32_t init_size = 0;
  uint32_t l3_items = 0;  // entries of its subtree at mixed depth >= 3
};

// A decoded slot. Only the fields of its tag are meaningful.
struct Slot {
  SlotTag tag = SlotTag::kNull;
  Entry data;  // kData
  // kNull: a Fulfill copy of the entry of the DATA slot this NULL run ends at.
  bool has_copy = false;
  Entry copy;
  // kPacked
  int cls = 0;
  uint32_t count = 0;
  uint32_t object = 0;
  PageId slab = kInvalidPageId;
  // kBranch
  uint32_t children = 0;
  PageId child[kBranchChildren] = {};
  uint64_t pivot[kBranchChildren - 1] = {};
  // kMixed
  MixedRef mixed;

  static Slot Data(Entry e) {
    Slot s;
    s.tag = SlotTag::kData;
    s.data = e;
    return s;
  }
  static Slot Copy(Entry e) {
    Slot s;
    s.has_copy = true;
    s.copy = e;
    return s;
  }
};

Slot DecodeSlot(const char* p);
void EncodeSlot(char* p, const Slot& s);

// Position of slot `s` of a node: the page within the node and the byte offset in it.
inline uint64_t SlotPageIndex(uint64_t s) { return s / kSlotsPerPage; }
inline size_t SlotOffset(uint64_t s) { return kSlotBase + (s % kSlotsPerPage) * kSlotBytes; }
inline uint64_t PagesForSlots(uint64_t slots) {
  return (slots + kSlotsPerPage - 1) / kSlotsPerPage;
}

// Slot page header.
inline PageId SlotPageNode(const char* p) { return DecodeFixed64(p + 24); }
inline uint32_t SlotPageIndexOf(const char* p) { return DecodeFixed32(p + 32); }
inline uint32_t SlotPageSlots(const char* p) { return DecodeFixed32(p + 36); }
inline void FormatSlotPage(char* p, PageId node, uint32_t index, uint32_t slots) {
  EncodeFixed64(p + 24, node);
  EncodeFixed32(p + 32, index);
  EncodeFixed32(p + 36, slots);
}

// Slab page header and objects.
inline int SlabClass(const char* p) { return static_cast<uint8_t>(p[24]); }
inline void FormatSlabPage(char* p, int cls) { p[24] = static_cast<char>(cls); }
inline size_t SlabObjectOffset(int cls, uint32_t object) {
  return kSlabBase + object * PackedObjectBytes(cls);
}

// Branch page.
inline uint32_t BranchCount(const char* p) { return DecodeFixed32(p + 24); }
inline void SetBranchCount(char* p, uint32_t n) { EncodeFixed32(p + 24, n); }
inline const char* BranchEntry(const char* p, uint32_t i) {
  return p + kBranchBase + i * kEntryBytes;
}
inline char* BranchEntry(char* p, uint32_t i) { return p + kBranchBase + i * kEntryBytes; }

}  // namespace grove::aulid
