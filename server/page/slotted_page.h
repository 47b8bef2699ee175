#pragma once

// Slotted-page primitives shared by every variant that keeps sorted variable-length cells in a
// page (B+-tree nodes, HLN subnodes, AULID leaves). The region starts at `base`, after the common
// page header and any variant header:
//
//   base      +2          +4           +6          +8
//   +---------+-----------+------------+-----------+----------------------+ ... +---------------+
//   | count   | cell_start| frag_bytes | reserved  | slot[0..count) u16   | free | cells         |
//   +---------+-----------+------------+-----------+----------------------+ ... +---------------+
//                                                                                ^ cell_start
//   slot[i]   offset of cell i within the page; slots are in ascending key order.
//   cell      key_len u16 | payload_len u16 | key | payload
//   frag_bytes bytes of dead cells inside [cell_start, 4096), reclaimed by Compact().
//
// Keys compare bytewise. The view does no locking: callers hold the page's latch.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "grove/slice.h"

#include "page/page.h"

namespace grove {

class SlottedPageView {
 public:
  static constexpr size_t kRegionHeader = 8;
  static constexpr size_t kSlotSize = 2;
  static constexpr size_t kCellHeader = 4;

  SlottedPageView(const char* page, uint16_t base) : p_(const_cast<char*>(page)), base_(base) {}

  uint16_t count() const { return U16(base_); }
  Slice Key(int i) const;
  Slice Payload(int i) const;

  // Index of the first slot whose key is >= key; *found says whether it is equal.
  int LowerBound(Slice key, bool* found) const;

  // Bytes a cell with these lengths takes, including its slot.
  static size_t CellBytes(size_t key_len, size_t payload_len) {
    return kSlotSize + kCellHeader + key_len + payload_len;
  }
  // Bytes available for cells and slots, counting fragments that Compact() would reclaim.
  size_t FreeBytes() const;
  // Bytes used by live cells and their slots.
  size_t UsedBytes() const;
  // Bytes a completely empty region offers.
  size_t Capacity() const { return kPageSize - base_ - kRegionHeader; }
  bool HasRoomFor(size_t key_len, size_t payload_len) const {
    return FreeBytes() >= CellBytes(key_len, payload_len);
  }

  // Structural self-check of the region: offsets in range, cells inside the page, no overlaps in
  // the slot array, keys strictly ascending. Returns a description of the first problem or "".
  const char* CheckStructure() const;
  // CheckStructure without the key order: what makes reading the region memory-safe, cheap enough
  // for every read of a cached page (the order check compares every key; it belongs to Verify,
  // since a page's checksum already covers its bytes from the device on).
  const char* CheckOffsets() const;

 protected:
  // Cells are packed back to back with no padding, so a cell header (and, on a damaged page, any
  // offset) may be odd: read and write through memcpy, never a uint16_t*, since a misaligned
  // access is undefined behaviour (UBSan traps on it; compilers may assume alignment).
  uint16_t U16(size_t off) const {
    uint16_t v;
    std::memcpy(&v, p_ + off, sizeof(v));
    return v;
  }
  void SetU16(size_t off, uint16_t v) { std::memcpy(p_ + off, &v, sizeof(v)); }
  uint16_t SlotOffset(int i) const { return U16(base_ + kRegionHeader + kSlotSize * i); }
  size_t SlotsEnd() const { return base_ + kRegionHeader + kSlotSize * count(); }
  uint16_t cell_start() const { return U16(base_ + 2); }
  uint16_t frag_bytes() const { return U16(base_ + 4); }

  char* p_;
  uint16_t base_;
};

class SlottedPage : public SlottedPageView {
 public:
  SlottedPage(char* page, uint16_t base) : SlottedPageView(page, base) {}

  // Formats an empty region.
  static void Init(char* page, uint16_t base);

  // Inserts a cell at slot i, shifting later slots. REQUIRES: HasRoomFor(key, payload) and that
  // slot i keeps the keys ascending.
  void Insert(int i, Slice key, Slice payload);
  void Remove(int i);
  // Whether slot i's payload can become `new_len` bytes long.
  bool CanReplacePayload(int i, size_t new_len) const;
  // REQUIRES: CanReplacePayload(i, payload.size()).
  void ReplacePayload(int i, Slice payload);
  // Rewrites the cells contiguously, reclaiming fragments.
  void Compact();
  // Appends slots [from, count()) to `dst` (whose keys must all be smaller) and removes them here.
  void MoveTailTo(int from, SlottedPage* dst);
  // Removes every cell.
  void Clear() { Init(p_, base_); }

 private:
  // Reserves `n` contiguous bytes below cell_start, compacting first when needed.
  uint16_t Allocate(size_t n);
};

}  // namespace grove
