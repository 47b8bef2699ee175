#pragma once

// B+-tree leaves of the core (docs/formats/tree.md): sorted cells in a slotted page, linked to
// their neighbours in key order. The btree's leaves; AULID's and AHA-tree's B+-tree leaves reuse
// them. After the common page header (type kLeafPage):
//
//   24      26      28       32             40             48
//   +-------+-------+--------+--------------+--------------+-----------------------------------+
//   | level | flags | unused | left sibling | right sibling| slotted region (page/slotted_page.h)
//   | u16=0 | u16   | u32    | u64          | u64          | cell i: key_i -> value cell_i      |
//   +-------+-------+--------+--------------+--------------+-----------------------------------+
//
//   flags         the variant's: AULID's bit 0 says the right sibling is in the same run
//                 (index/aulid/aulid.h); 0 for the others.
//   left / right  neighbours in key order (0 = none). Cursors never follow them (they re-descend
//                 with the fence keys), but leaf splits and merges keep them exact and Verify
//                 checks them; variants that scan through leaf links (AULID) rely on them.
//   cells         key -> value cell (opaque, from the engine), keys strictly ascending.
//
// The views do no locking: callers hold the page latch.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "buffer/buffer_pool.h"
#include "index/core/inner_node.h"
#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::core {

inline constexpr uint16_t kLeafLevelOffset = 24;
inline constexpr uint16_t kLeafFlagsOffset = 26;
inline constexpr uint16_t kLeafLeftOffset = 32;
inline constexpr uint16_t kLeafRightOffset = 40;
inline constexpr uint16_t kLeafSlotBase = 48;

class LeafView {
 public:
  explicit LeafView(const char* p) : p_(p) {}

  uint16_t level() const { return DecodeFixed16(p_ + kLeafLevelOffset); }
  uint16_t flags() const { return DecodeFixed16(p_ + kLeafFlagsOffset); }
  PageId left() const { return DecodeFixed64(p_ + kLeafLeftOffset); }
  PageId right() const { return DecodeFixed64(p_ + kLeafRightOffset); }
  SlottedPageView slots() const { return SlottedPageView(p_, kLeafSlotBase); }
  int count() const { return slots().count(); }
  Slice key(int i) const { return slots().Key(i); }
  Slice cell(int i) const { return slots().Payload(i); }
  // Position of the first key >= `key`; *found says whether it is `key`.
  int Find(Slice key, bool* found) const { return slots().LowerBound(key, found); }
  size_t used_bytes() const { return slots().UsedBytes(); }
  size_t free_bytes() const { return slots().FreeBytes(); }
  size_t capacity() const { return slots().Capacity(); }

 protected:
  const char* p_;
};

class Leaf : public LeafView {
 public:
  explicit Leaf(char* p) : LeafView(p), mp_(p) {}

  // Formats an empty leaf in a page already initialised with page::Init.
  static void Format(char* p);
  void set_flags(uint16_t f) { EncodeFixed16(mp_ + kLeafFlagsOffset, f); }
  void set_left(PageId id) { EncodeFixed64(mp_ + kLeafLeftOffset, id); }
  void set_right(PageId id) { EncodeFixed64(mp_ + kLeafRightOffset, id); }
  SlottedPage mutable_slots() { return SlottedPage(mp_, kLeafSlotBase); }

 private:
  char* mp_;
};

// Inserts (key, cell), or replaces key's cell (setting *old_cell), when it fits in `leaf`.
enum class LeafPut { kInserted, kReplaced, kNoRoom };
LeafPut PutInLeaf(PageWriteGuard& leaf, Slice key, Slice cell,
                  std::optional<std::string>* old_cell);

// Splits `leaf` while inserting (key, cell), which does not fit: the upper half of the bytes moves
// into `fresh` (a new, formatted leaf), linked in between `leaf` and its old right sibling `next`
// (latched exclusively; an empty guard when there is none). Returns the separator the parent gets
// for `fresh` (suffix-truncated), or kInternal when no split point exists. Changes nothing on
// failure.
StatusOr<std::string> SplitLeaf(PageWriteGuard& leaf, PageWriteGuard& fresh, PageWriteGuard& next,
                                Slice key, Slice cell);

// Moves every cell of `right` into `left`, its left sibling, and links `left` to `next` (right's
// old right sibling, latched exclusively, or an empty guard). Returns false, changing nothing,
// when the cells do not fit.
bool MergeLeaves(PageWriteGuard& left, PageWriteGuard& right, PageWriteGuard& next);

// Structural checks of a leaf Verify reports: type, level, slotted structure, keys within
// `fences`. Returns "" or the first problem.
std::string CheckLeaf(const char* page, const Fences& fences);

}  // namespace grove::core
