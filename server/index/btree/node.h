#pragma once

// B+-tree node layout (docs/formats/btree.md). After the common page header:
//
//   24      26      28       32             40             48              56
//   +-------+-------+--------+--------------+--------------+---------------+------------------+
//   | level | flags | unused | left sibling | right sibling| leftmost child| slotted region   |
//   | u16   | u16   | u32    | u64          | u64          | u64           | (page/slotted_page.h)
//   +-------+-------+--------+--------------+--------------+---------------+------------------+
//
//   level          0 for leaves; a node's children are at level - 1.
//   left / right   leaf siblings in key order (0 = none); unused in inner nodes.
//   leftmost child inner nodes only: the child holding keys below the first separator.
//   cells          leaves: key -> value cell (opaque, from the engine)
//                  inner:  separator key -> child page id (u64); child i holds keys in
//                          [key_i, key_{i+1}); the leftmost child holds keys < key_0.
//
// Page types: kBTreeLeaf for level 0, kBTreeInner above.

#include <cstdint>
#include <cstring>
#include <string>

#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::btree {

inline constexpr uint16_t kLevelOffset = 24;
inline constexpr uint16_t kLeftOffset = 32;
inline constexpr uint16_t kRightOffset = 40;
inline constexpr uint16_t kLeftmostOffset = 48;
inline constexpr uint16_t kSlotBase = 56;

class NodeView {
 public:
  explicit NodeView(const char* p) : p_(p) {}

  uint16_t level() const { return *reinterpret_cast<const uint16_t*>(p_ + kLevelOffset); }
  bool is_leaf() const { return level() == 0; }
  PageId left() const { return DecodeFixed64(p_ + kLeftOffset); }
  PageId right() const { return DecodeFixed64(p_ + kRightOffset); }
  PageId leftmost() const { return DecodeFixed64(p_ + kLeftmostOffset); }
  SlottedPageView slots() const { return SlottedPageView(p_, kSlotBase); }
  int count() const { return slots().count(); }
  Slice key(int i) const { return slots().Key(i); }
  Slice payload(int i) const { return slots().Payload(i); }

  // Inner nodes: child i (-1 = leftmost).
  PageId child(int i) const {
    return i < 0 ? leftmost() : DecodeFixed64(slots().Payload(i).data());
  }
  // Index of the child whose range holds `key`: the last separator <= key, or -1.
  int ChildIndexFor(Slice key) const {
    bool found;
    const int pos = slots().LowerBound(key, &found);
    return found ? pos : pos - 1;
  }
  // Index of the child holding the largest keys below `key`: the last separator < key, or -1.
  int ChildIndexBelow(Slice key) const {
    bool found;
    return slots().LowerBound(key, &found) - 1;
  }
  size_t used_bytes() const { return slots().UsedBytes(); }
  size_t free_bytes() const { return slots().FreeBytes(); }
  size_t capacity() const { return slots().Capacity(); }

 protected:
  const char* p_;
};

class Node : public NodeView {
 public:
  explicit Node(char* p) : NodeView(p), mp_(p) {}

  // Formats an empty node of `level` in a page already initialised with page::Init.
  static void Format(char* p, uint16_t level) {
    std::memset(p + kLevelOffset, 0, kSlotBase - kLevelOffset);
    *reinterpret_cast<uint16_t*>(p + kLevelOffset) = level;
    SlottedPage::Init(p, kSlotBase);
  }
  void set_left(PageId id) { EncodeFixed64(mp_ + kLeftOffset, id); }
  void set_right(PageId id) { EncodeFixed64(mp_ + kRightOffset, id); }
  void set_leftmost(PageId id) { EncodeFixed64(mp_ + kLeftmostOffset, id); }
  SlottedPage mutable_slots() { return SlottedPage(mp_, kSlotBase); }

 private:
  char* mp_;
};

inline std::string EncodeChild(PageId id) {
  std::string s(8, '\0');
  EncodeFixed64(s.data(), id);
  return s;
}

// The shortest key s with a < s <= b (suffix truncation of separators). REQUIRES: a < b.
inline std::string ShortestSeparator(Slice a, Slice b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return std::string(b.substr(0, std::min(b.size(), i + 1)));
}

}  // namespace grove::btree
