#pragma once

// "sorted": the worked example of docs/variants.md, a minimal variant written against the seam.
// The B+-tree core (index/core/tree.h) holds the inner levels; each leaf is one page of a format
// of the variant's own, a packed sorted array of entries (page type 40, claimed in the spec):
//
//   24        26        28
//   +---------+---------+------------------------------------------------------------------+
//   | count   | bytes   | entry * count: key_len u16 | cell_len u16 | key | cell            |
//   | u16     | u16     | keys strictly ascending; `bytes` of entries                      |
//   +---------+---------+------------------------------------------------------------------+
//
// Every change decodes the array, edits it and encodes it again: simple, and good enough for an
// example. Writers latch the leaf's level-1 node exclusively (DescendToParent), so a leaf has one
// writer at a time and readers, which hold that node shared, see whole arrays; a leaf that no
// longer fits splits through the core's pessimistic path (LatchPath, PlanInsert, InsertChild),
// and a leaf that empties leaves the tree through RemoveChild. Cursors are core::BatchCursor,
// bulk load writes leaves with core::RunWriter and lets the core build above them, Verify walks
// through the core. It passes the whole conformance suite (cases.cc).

#include "index/variant.h"

namespace grove::testing {

VariantSpec SortedVariantSpec();

}  // namespace grove::testing
