#pragma once

// HLN leaves and subnodes (docs/formats/hln.md). A leaf is one extent of n = leaf_pages
// contiguous pages; page i of the extent is subnode i, an ordinary 4 KiB page with its own header,
// read, written and cached on its own. After the common page header:
//
//   24        26        28        30         32
//   +---------+---------+---------+----------+--------------------------------------------+
//   | index   | n       | flags   | reserved | slotted region (page/slotted_page.h)        |
//   | u16     | u16     | u16     | u16      | cells: key -> value cell (opaque)           |
//   +---------+---------+---------+----------+--------------------------------------------+
//
//   index   position of the subnode in its leaf (the leaf's id is page id - index)
//   n       subnodes in the leaf (leaf_pages)
//   flags   kStashLeaf: the leaf is a stash node; kOverflow: this is its overflow subnode
//           (always subnode 0); kFnvOrder: cells are ordered by (KeyHash(key), key)
//
// Order: within a subnode cells ascend in leaf order (bytewise keys, or (KeyHash(key), key) with
// hash: fnv). Across the leaf's packed subnodes (all of them, or 1..n-1 in a stash node) every
// key of subnode i precedes every key of subnode j > i; empty subnodes may appear anywhere.
// A stash node's overflow subnode holds arbitrary keys of the leaf's range, in leaf order.

#include <cstdint>
#include <cstring>
#include <string>

#include "grove/slice.h"

#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::hln {

inline constexpr PageType kSubnodePage = static_cast<PageType>(32);
inline constexpr PageType kInnerPage = static_cast<PageType>(33);

inline constexpr uint16_t kSubIndexOffset = 24;
inline constexpr uint16_t kSubCountOffset = 26;
inline constexpr uint16_t kSubFlagsOffset = 28;
inline constexpr uint16_t kSubSlotBase = 32;

inline constexpr uint16_t kStashLeaf = 1;
inline constexpr uint16_t kOverflow = 2;
inline constexpr uint16_t kFnvOrder = 4;

// Bytes of cells and slots one subnode offers.
inline constexpr size_t kSubnodeCapacity =
    kPageSize - kSubSlotBase - SlottedPageView::kRegionHeader;

// The hash of hash: fnv: 64-bit FNV-1a over the key's bytes from the last to the first. For 8-byte
// big-endian integer keys that is the paper's FNV over the integer's little-endian bytes. The order
// matters: the byte that varies most must come first, so that the following multiplications
// spread it into the top bits, which choose the subnode; hashed last it barely moves them.
inline uint64_t KeyHash(Slice key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = key.size(); i-- > 0;) {
    h ^= static_cast<uint8_t>(key[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

// The order of keys inside leaves: bytewise, or by (KeyHash(key), key).
class LeafOrder {
 public:
  explicit LeafOrder(bool fnv) : fnv_(fnv) {}
  bool fnv() const { return fnv_; }
  // -1, 0, +1.
  int Compare(Slice a, Slice b) const {
    if (fnv_) {
      const uint64_t ha = KeyHash(a), hb = KeyHash(b);
      if (ha != hb) return ha < hb ? -1 : 1;
    }
    const int c = a.compare(b);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  bool Less(Slice a, Slice b) const { return Compare(a, b) < 0; }

 private:
  bool fnv_;
};

class SubnodeView {
 public:
  explicit SubnodeView(const char* p) : p_(p) {}

  uint16_t index() const { return DecodeFixed16(p_ + kSubIndexOffset); }
  uint16_t leaf_pages() const { return DecodeFixed16(p_ + kSubCountOffset); }
  uint16_t flags() const { return DecodeFixed16(p_ + kSubFlagsOffset); }
  SlottedPageView slots() const { return SlottedPageView(p_, kSubSlotBase); }
  int count() const { return slots().count(); }
  bool empty() const { return count() == 0; }
  Slice key(int i) const { return slots().Key(i); }
  Slice cell(int i) const { return slots().Payload(i); }
  size_t used_bytes() const { return slots().UsedBytes(); }
  size_t free_bytes() const { return slots().FreeBytes(); }

  // Index of the first cell not before `key` in `order`; *found says whether it is `key`.
  int LowerBound(const LeafOrder& order, Slice key, bool* found) const {
    if (!order.fnv()) return slots().LowerBound(key, found);
    int lo = 0, hi = count();
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (order.Less(this->key(mid), key)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    *found = lo < count() && this->key(lo) == key;
    return lo;
  }

 protected:
  const char* p_;
};

class Subnode : public SubnodeView {
 public:
  explicit Subnode(char* p) : SubnodeView(p), mp_(p) {}

  // Formats an empty subnode in a page already initialised with page::Init.
  static void Format(char* p, uint16_t index, uint16_t leaf_pages, uint16_t flags) {
    std::memset(p + kSubIndexOffset, 0, kSubSlotBase - kSubIndexOffset);
    EncodeFixed16(p + kSubIndexOffset, index);
    EncodeFixed16(p + kSubCountOffset, leaf_pages);
    EncodeFixed16(p + kSubFlagsOffset, flags);
    SlottedPage::Init(p, kSubSlotBase);
  }
  void set_flags(uint16_t flags) { EncodeFixed16(mp_ + kSubFlagsOffset, flags); }
  SlottedPage mutable_slots() { return SlottedPage(mp_, kSubSlotBase); }

 private:
  char* mp_;
};

}  // namespace grove::hln
