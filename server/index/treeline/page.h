#pragma once

// TreeLine data pages (docs/formats/treeline.md). A segment is an extent of 1, 2, 4, 8 or 16
// contiguous pages (a page group) whose records are placed by the segment's linear model; a base
// page may have one overflow page, a single page of its own extent, with the same key range.
// After the common page header (type kDataPage):
//
//   24      26      28            30         32                40
//   +-------+-------+-------------+----------+-----------------+---------------------------------+
//   | flags | index | segment     | reserved | overflow page   | slotted region                  |
//   | u16   | u16   | pages u16   | u16      | u64 (0: none)   | cell i: key_i -> value cell_i   |
//   +-------+-------+-------------+----------+-----------------+---------------------------------+
//
//   flags    kOverflow: this is an overflow page (index = its base page's index)
//   index    the page's position in its segment
//   segment pages  the segment's size; a base page and its segment's payload must agree
//   overflow base pages: the overflow page, 0 when there is none
//   cells    key -> value cell, keys strictly ascending within the page; a base page and its
//            overflow are each sorted, with no order between them (as in the paper)
//
// The views do no locking: callers hold the page latch.

#include <cstdint>
#include <cstring>

#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::treeline {

inline constexpr PageType kDataPage = static_cast<PageType>(48);

inline constexpr uint16_t kFlagsOffset = 24;
inline constexpr uint16_t kIndexOffset = 26;
inline constexpr uint16_t kSegPagesOffset = 28;
inline constexpr uint16_t kOverflowOffset = 32;
inline constexpr uint16_t kSlotBase = 40;
inline constexpr uint16_t kOverflowFlag = 1;

// Bytes of cells and slots one page offers.
inline constexpr size_t kPageCapacity = kPageSize - kSlotBase - SlottedPageView::kRegionHeader;

class DataPageView {
 public:
  explicit DataPageView(const char* p) : p_(p) {}

  uint16_t flags() const { return DecodeFixed16(p_ + kFlagsOffset); }
  bool is_overflow() const { return (flags() & kOverflowFlag) != 0; }
  uint16_t index() const { return DecodeFixed16(p_ + kIndexOffset); }
  uint16_t segment_pages() const { return DecodeFixed16(p_ + kSegPagesOffset); }
  PageId overflow() const { return DecodeFixed64(p_ + kOverflowOffset); }
  SlottedPageView slots() const { return SlottedPageView(p_, kSlotBase); }
  int count() const { return slots().count(); }
  Slice key(int i) const { return slots().Key(i); }
  Slice cell(int i) const { return slots().Payload(i); }
  int Find(Slice key, bool* found) const { return slots().LowerBound(key, found); }
  size_t used_bytes() const { return slots().UsedBytes(); }

 protected:
  const char* p_;
};

class DataPage : public DataPageView {
 public:
  explicit DataPage(char* p) : DataPageView(p), mp_(p) {}

  // Formats an empty page in a page already initialised with page::Init.
  static void Format(char* p, uint16_t index, uint16_t segment_pages, bool overflow) {
    std::memset(p + kFlagsOffset, 0, kSlotBase - kFlagsOffset);
    EncodeFixed16(p + kFlagsOffset, overflow ? kOverflowFlag : 0);
    EncodeFixed16(p + kIndexOffset, index);
    EncodeFixed16(p + kSegPagesOffset, segment_pages);
    SlottedPage::Init(p, kSlotBase);
  }
  void set_overflow(PageId id) { EncodeFixed64(mp_ + kOverflowOffset, id); }
  SlottedPage mutable_slots() { return SlottedPage(mp_, kSlotBase); }

 private:
  char* mp_;
};

}  // namespace grove::treeline
