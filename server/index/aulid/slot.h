#pragma once

// AULID's inner pages (docs/formats/aulid.md): mixed-node slot pages, packed-array slabs and
// two-layer B+-tree ("branch") pages. Entries are (key, leaf page) pairs: key is the 8-byte
// projection of a leaf's upper separator (aulid.h says which projection), leaf the page of the
// first leaf of the run it covers.
//
// Mixed-node slot page (type kSlotPage). Slots are 16 bytes, the size of an entry (the paper's
// key-block pair), with their kinds in a 3-bit tag array. A node has K slots per page (K, its
// `per_page`, is one of kPerPageChoices, chosen when the node is built: below); slot s lives in
// page s / K of the node, so no slot straddles pages and a lookup reads exactly the page of the
// slot its model predicts. A BRANCH or MIXED slot needs more than 16 bytes (child pages and
// pivots; the child's model and statistics): it names a 56-byte descriptor, kept at the end of
// the same page, so that a descent still reads one page per level.
//
//   24       32          36          40        42         48             64      B          B+16K
//   +--------+-----------+-----------+---------+----------+--------------+-------+----------+-//-+
//   |node u64|index u32  |slots u32  |K u16    |reserved  |descs used u64|tags   |K slots   |free|
//   |        |(in node)  |(in page)  |         |          |(bit d: taken)|3 bits |of 16 B   |    |
//   +--------+-----------+-----------+---------+----------+--------------+-------+----------+-//-+
//                                               ... descriptor d at 4096 - 56 (d + 1) ... | 4096
//
//   B = 64 + the tag array (ceil(3K / 8) bytes) rounded up to 16. Descriptors that fit after the
//   slots: 6 at K = 224, 15 at 192, 34 at 128, 53 at 64, 62 at 32 (every slot can have one). A
//   descriptor its page has no room for goes out of line (the _EXT tags), in an object of a
//   class-0 slab, at the cost of one more read for that slot only: a build picks the K with the
//   fewest pages counting those slabs (inner_build.cc), and a later change that needs one more
//   descriptor than its page has puts it there too.
//
// Tags and slots (16 bytes; integers little-endian):
//
//   0 NULL        all zero
//   1 COPY        key u64 | leaf u64: a NULL slot holding a Fulfill copy (built by bulk builds)
//                 of the entry of the DATA slot the run of NULL slots ends at; the inner part
//                 trusts copies until its first change
//   2 DATA        key u64 | leaf u64
//   3 PACKED      slab page u64 | count u16 | object u16 | class u8 (0..3: 8, 16, 32, 64 entries)
//   4 BRANCH      descriptor u8 | children u8 (1..4)
//   5 MIXED       descriptor u8 | reserved u8 | per_page u16 | depth u32
//   6 BRANCH_EXT  slab page u64 | object u16 | children u8
//   7 MIXED_EXT   slab page u64 | object u16 | per_page u16 | depth u32
//
// Descriptors (56 bytes):
//
//   BRANCH  child pages u64 x 4 | pivots u64 x 3: child i holds the keys <= pivot i (the last
//           child the rest); counts are in the pages
//   MIXED   first page u64 | model base u64 | slope f64 | intercept f64 | slots u64 | size u32
//           | init size u32 | l3 items u32 | reserved u32: the child's model and Adjust
//           statistics live with its parent's slot (the root's in the metanode)
//
// Packed-array slab page (type kSlabPage): objects of one size class after a 64-byte header:
//
//   24        25         32            64
//   +---------+----------+-------------+----------------------------------------------------+
//   | class u8| reserved | reserved    | objects of 128 << class bytes (8 << class entries) |
//   +---------+----------+-------------+----------------------------------------------------+
//
//   31, 15, 7 or 3 objects per page. Which objects are in use is the slot that names them; the
//   allocator's bitmaps (node_space.h) are checkpointed in the variant's metadata. Out-of-line
//   descriptors take class-0 objects (their first 56 bytes).
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
#include <span>
#include <vector>

#include "learned/fmcd.h"
#include "page/page.h"
#include "util/coding.h"

namespace grove::aulid {

inline constexpr PageType kSlotPage = static_cast<PageType>(64);
inline constexpr PageType kSlabPage = static_cast<PageType>(65);
inline constexpr PageType kBranchPage = static_cast<PageType>(66);

inline constexpr size_t kSlotBytes = 16;
inline constexpr size_t kSlotHeader = 64;
inline constexpr size_t kDescriptorBytes = 56;
inline constexpr uint32_t kMaxDescriptors = 64;  // the bitmap's width
// Slots per page a build may choose, largest first; the last gives every slot a descriptor.
inline constexpr uint32_t kPerPageChoices[] = {224, 192, 128, 64, 32};
inline constexpr uint32_t kMaxPerPage = kPerPageChoices[0];

inline constexpr size_t kEntryBytes = 16;
inline constexpr int kPackedClasses = 4;
inline constexpr uint32_t kPackedMax = 64;  // entries of the largest class
inline constexpr size_t kSlabBase = 64;
inline constexpr uint32_t kBranchChildren = 4;
inline constexpr size_t kBranchBase = 32;
inline constexpr uint32_t kBranchFanout = (kPageSize - kBranchBase) / kEntryBytes;  // 254
inline constexpr uint32_t kBranchMax = kBranchChildren * kBranchFanout;             // 1016
inline constexpr int kDescriptorClass = 0;  // slab class of out-of-line descriptors

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

// Where the parts of a slot page with K slots per page sit.
struct SlotLayout {
  uint32_t per_page = 0;
  size_t slots_at = 0;       // B: the first slot
  uint32_t descriptors = 0;  // that fit between the last slot and the page's end
};
constexpr SlotLayout LayoutFor(uint32_t per_page) {
  const size_t tags = (3 * size_t{per_page} + 7) / 8 + 1;  // +1: a tag read takes two bytes
  const size_t at = kSlotHeader + (tags + 15) / 16 * 16;
  const size_t end = at + kSlotBytes * per_page;
  const size_t fit = end >= kPageSize ? 0 : (kPageSize - end) / kDescriptorBytes;
  return {per_page, at, static_cast<uint32_t>(fit < kMaxDescriptors ? fit : kMaxDescriptors)};
}
// Whether K is a layout this build knows (a page or metanode naming another is corrupt).
constexpr bool ValidPerPage(uint32_t per_page) {
  for (uint32_t k : kPerPageChoices) {
    if (k == per_page) return true;
  }
  return false;
}
static_assert(LayoutFor(kPerPageChoices[4]).descriptors >= kPerPageChoices[4]);

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

// The kinds a slot is seen as (COPY reads as kNull with has_copy; _EXT as kBranch / kMixed with
// an out-of-line descriptor).
enum class SlotTag : uint8_t { kNull = 0, kData = 1, kPacked = 2, kBranch = 3, kMixed = 4 };

// A mixed node as its parent (or the metanode) sees it.
struct MixedRef {
  PageId first = kInvalidPageId;
  learned::SlotModel model;
  uint32_t per_page = kMaxPerPage;  // slots per page (K)
  uint32_t depth = 1;               // 1 for the root
  uint32_t size = 0;                // entries in its subtree
  uint32_t init_size = 0;
  uint32_t l3_items = 0;  // entries of its subtree at mixed depth >= 3
};

// Where a BRANCH or MIXED slot's descriptor is.
struct DescriptorPlace {
  enum Kind : uint8_t { kNone, kInPage, kOutOfLine } kind = kNone;
  uint32_t index = 0;            // kInPage: descriptor number in the slot's page
  PageId slab = kInvalidPageId;  // kOutOfLine: a class-0 slab object
  uint32_t object = 0;
  friend bool operator==(const DescriptorPlace&, const DescriptorPlace&) = default;
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
  // kBranch, kMixed: where the descriptor is (kNone for a slot not yet written). A decoded
  // out-of-line slot has only its children / per_page / depth until the descriptor is loaded.
  DescriptorPlace place;
  bool loaded = true;  // false: an out-of-line descriptor not read yet
  // A BRANCH or MIXED slot naming a descriptor its page cannot hold (only a bug writes one: pages
  // are checksummed): decoded as NULL so that nothing reads past the page; Verify reports it.
  bool bad = false;

  bool HasDescriptor() const { return tag == SlotTag::kBranch || tag == SlotTag::kMixed; }

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

// Slot page header.
inline PageId SlotPageNode(const char* p) { return DecodeFixed64(p + 24); }
inline uint32_t SlotPageIndexOf(const char* p) { return DecodeFixed32(p + 32); }
inline uint32_t SlotPageSlots(const char* p) { return DecodeFixed32(p + 36); }
inline uint32_t SlotPagePerPage(const char* p) { return DecodeFixed16(p + 40); }
inline uint64_t SlotPageDescriptorsUsed(const char* p) { return DecodeFixed64(p + 48); }
inline void FormatSlotPage(char* p, PageId node, uint32_t index, uint32_t slots,
                           uint32_t per_page) {
  EncodeFixed64(p + 24, node);
  EncodeFixed32(p + 32, index);
  EncodeFixed32(p + 36, slots);
  EncodeFixed16(p + 40, static_cast<uint16_t>(per_page));
  EncodeFixed64(p + 48, 0);
}

// Slot `i` (in the page) of slot page `p`. A BRANCH or MIXED slot with its descriptor in the
// page is complete; one out of line has loaded == false (LoadDescriptor completes it).
Slot DecodeSlot(const char* p, uint32_t i);
// Whether slot `i` of page `p` is NULL (a COPY included): cheaper than DecodeSlot for scans.
bool SlotIsNull(const char* p, uint32_t i);
// Completes an out-of-line slot from its descriptor object's bytes.
void LoadDescriptor(const char* object, Slot* s);
// Writes an out-of-line slot's descriptor into its object.
void StoreDescriptor(char* object, const Slot& s);

// Writes `s` at slot `i` of page `p`. A BRANCH or MIXED slot keeps the descriptor place the slot
// had (s->place is set to it), or takes a free one in the page, or keeps s->place when the
// caller set it out of line; returns false when it needs a place and the page has none (nothing
// is written then: the caller allocates an object and sets s->place). A slot that had an
// out-of-line descriptor and no longer needs it (or is given another) reports it in *freed.
[[nodiscard]] bool PlaceSlot(char* p, uint32_t i, Slot* s, DescriptorPlace* freed);

// Position of slot `s` of a node with `per_page` slots per page.
inline uint64_t SlotPageIndex(uint64_t s, uint32_t per_page) { return s / per_page; }
inline uint32_t SlotInPage(uint64_t s, uint32_t per_page) {
  return static_cast<uint32_t>(s % per_page);
}
inline uint64_t PagesForSlots(uint64_t slots, uint32_t per_page) {
  return (slots + per_page - 1) / per_page;
}
inline uint64_t NodePages(const MixedRef& m) { return PagesForSlots(m.model.slots, m.per_page); }
// Slots of the node's page `index` (the last page may hold fewer).
inline uint32_t SlotsInPage(const MixedRef& m, uint64_t index) {
  const uint64_t left = m.model.slots - index * m.per_page;
  return static_cast<uint32_t>(left < m.per_page ? left : m.per_page);
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
