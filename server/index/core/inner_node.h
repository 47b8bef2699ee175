#pragma once

// Inner nodes of the B+-tree core (tree.h), the one inner-node format of every tree variant
// (btree, hln; docs/formats/tree.md). Every child is a cell, including the first, whose key is
// empty (it holds everything below the second separator), so that every child can carry the same
// payload shape. After the common page header (type kInnerPage):
//
//   24      26      28        32
//   +-------+-------+---------+------------------------------------------------------------+
//   | level | flags | unused  | slotted region (page/slotted_page.h)                       |
//   | u16   | u16   | u32     | cell i: separator key_i -> payload_i (child id u64, extras) |
//   +-------+-------+---------+------------------------------------------------------------+
//
//   level    >= 1; a node's children are at level - 1 (level 0 = the variant's leaves).
//   cells    key_0 is empty; key_1 < key_2 < ... are separators. Child i holds the keys in
//            [key_i, key_{i+1}); child 0's lower bound and the last child's upper bound are the
//            node's own fences, inherited from its ancestors.
//   payload  starts with the child's page id (u64); a variant may append fixed-size extras to the
//            payloads of level-1 nodes (hln: leaf flags and hint bits).
//
// The view does no locking: callers hold the page latch.

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "grove/slice.h"

#include "page/page.h"
#include "page/slotted_page.h"
#include "util/coding.h"

namespace grove::core {

// The core's page types (claimed once, by the registry, for every variant on the core).
inline constexpr PageType kLeafPage = static_cast<PageType>(16);   // leaf_node.h
inline constexpr PageType kInnerPage = static_cast<PageType>(17);  // this file

inline constexpr uint16_t kInnerLevelOffset = 24;
inline constexpr uint16_t kInnerSlotBase = 32;

// The key range a descent established for a node: [low, high); a missing bound is open.
struct Fences {
  std::string low, high;
  bool has_low = false, has_high = false;
  bool Contains(Slice key) const {
    return (!has_low || key >= Slice(low)) && (!has_high || key < Slice(high));
  }
  // These fences with the low and/or high bound replaced (null: kept).
  Fences Between(const std::string* new_low, const std::string* new_high) const;
};

class InnerNodeView {
 public:
  explicit InnerNodeView(const char* p) : p_(p) {}

  uint16_t level() const { return DecodeFixed16(p_ + kInnerLevelOffset); }
  SlottedPageView slots() const { return SlottedPageView(p_, kInnerSlotBase); }
  int count() const { return slots().count(); }
  Slice key(int i) const { return slots().Key(i); }
  Slice payload(int i) const { return slots().Payload(i); }
  PageId child(int i) const { return DecodeFixed64(payload(i).data()); }

  // Index of the child whose range holds `key`: the last cell whose key is <= key.
  int ChildIndexFor(Slice key) const {
    bool found;
    const int pos = slots().LowerBound(key, &found);
    return found ? pos : pos - 1;  // >= 0: cell 0's empty key is <= every key
  }
  // Index of the child holding the largest keys below `key`: the last cell whose key is < key.
  // -1 only for the empty key.
  int ChildIndexBelow(Slice key) const {
    bool found;
    return slots().LowerBound(key, &found) - 1;
  }
  // The fences of child i, given this node's own.
  Fences ChildFences(int i, const Fences& mine) const;

  size_t free_bytes() const { return slots().FreeBytes(); }
  size_t used_bytes() const { return slots().UsedBytes(); }
  size_t capacity() const { return slots().Capacity(); }

  // Structural self-check: slotted structure, an empty first key, payloads of `payload_bytes`
  // (8 + extras) holding non-null children. Returns "" or the first problem.
  std::string Check(size_t payload_bytes) const;

 protected:
  const char* p_;
};

class InnerNode : public InnerNodeView {
 public:
  explicit InnerNode(char* p) : InnerNodeView(p), mp_(p) {}

  // Formats an empty node of `level` in a page already initialised with page::Init.
  static void Format(char* p, uint16_t level);

  SlottedPage mutable_slots() { return SlottedPage(mp_, kInnerSlotBase); }
  bool HasRoomFor(size_t key_len, size_t payload_len) const {
    return slots().HasRoomFor(key_len, payload_len);
  }
  // Inserts a separator cell in key order. REQUIRES: HasRoomFor, and the key is not present.
  void InsertChild(Slice separator, Slice payload);
  // Replaces child i's payload with one of the same size (hints, flags).
  void SetPayload(int i, Slice payload) { mutable_slots().ReplacePayload(i, payload); }
  // Removes child i (i >= 1: the first child carries the node's lower bound).
  void RemoveChild(int i) { mutable_slots().Remove(i); }

 private:
  char* mp_;
};

// A cell copied out of a node.
using Cell = std::pair<std::string, std::string>;

// Where to split `cells` (which no longer fit in one node) into [0, m) and [m, size): the point
// closest to half of the bytes at which both halves fit in `capacity`. With
// `right_key_moves_up` (inner nodes) the right half's first key goes up as the separator and its
// cell keeps an empty key. Returns 0 when no such point exists.
size_t SplitPoint(const std::vector<Cell>& cells, size_t capacity, bool right_key_moves_up);

// The shortest key s with a < s <= b (suffix truncation of separators). REQUIRES: a < b.
std::string ShortestSeparator(Slice a, Slice b);

inline std::string EncodeChild(PageId id) {
  std::string s(8, '\0');
  EncodeFixed64(s.data(), id);
  return s;
}

}  // namespace grove::core
