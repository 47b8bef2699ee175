#pragma once

// TreeObserver: the structure changes of a tree of pages, as the path predictor (SHORTCUT) needs
// to hear them. The B+-tree core (index/core/tree.h) reports its inner levels; a variant reports
// its leaf level (level 0: a btree leaf, an hln subnode). PathPredictor implements it.
//
// Thread safety: implementations take calls from many writers at once.

#include <cstdint>

namespace grove::predict {

using PageId = uint64_t;

class TreeObserver {
 public:
  virtual ~TreeObserver() = default;
  // A node at `level` split (or a new node was placed): `created` follows `original` in key order.
  virtual void OnSplit(int level, PageId original, PageId created) = 0;
  // A node at `level` left the tree (merged into a neighbour, or freed).
  virtual void OnMerge(int level, PageId removed) = 0;
  // The tree's height changed: every level renumbers.
  virtual void OnShapeChange() = 0;
};

}  // namespace grove::predict
